package breaker

import (
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// storedState is the committed state (Snapshot.State is the effective one).
func storedState(b *Breaker) catalog.State { return b.cur.Load().state }

// openPeriod is the drawn length of the current open period; zero unless the effective state is
// open.
func drawnOpenPeriod(b *Breaker) time.Duration {
	p, _, _ := walk(b.cur.Load().phase(), b.set.Load(), b.now(), nil)
	if p.state != catalog.StateOpen {
		return 0
	}
	return time.Duration(p.period)
}

// windowView is what the current window holds: for a ConsecutiveFailures window, the current
// runs.
type windowView struct{ WindowCalls, WindowFailures int64 }

func windowOf(b *Breaker) windowView {
	e := b.cur.Load()
	if e.win == nil {
		return windowView{}
	}
	c, f, _ := e.win.counts(b.now())
	return windowView{c, f}
}
