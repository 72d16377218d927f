package demo

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// board shows the status lines. On a terminal it keeps them as a block at the bottom, redrawn in
// place, and log lines written through logWriter scroll above it; otherwise each update prints
// the lines once, as plain periodic lines.
type board struct {
	mu    sync.Mutex
	out   io.Writer
	tty   bool
	drawn int // lines of the block currently on screen (tty)
	lines []string
}

// erase removes the drawn block; the cursor ends where the block began. Called with mu held.
func (b *board) erase() {
	if b.drawn > 0 {
		fmt.Fprintf(b.out, "\r\x1b[%dA\x1b[J", b.drawn)
		b.drawn = 0
	}
}

// termWidth is the most a line of the block may take on a terminal: a wrapped line would
// break the redraw, and 80 columns is the narrowest terminal in common use.
const termWidth = 79

// draw writes the block, each line cut to termWidth. Called with mu held.
func (b *board) draw() {
	for _, l := range b.lines {
		if r := []rune(l); len(r) > termWidth {
			l = string(r[:termWidth-1]) + "…"
		}
		fmt.Fprintf(b.out, "\x1b[2K%s\n", l)
	}
	b.drawn = len(b.lines)
}

// update replaces the status lines.
func (b *board) update(lines []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = lines
	if !b.tty {
		for _, l := range lines {
			fmt.Fprintln(b.out, l)
		}
		return
	}
	b.erase()
	b.draw()
}

// println prints a line that stays (a phase change, a result) above the block.
func (b *board) println(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty {
		b.erase()
	}
	fmt.Fprintf(b.out, format+"\n", args...)
	if b.tty {
		b.draw()
	}
}

// finish leaves the last block on screen as plain text.
func (b *board) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drawn = 0
}

// logWriter returns w, or — when w is the same terminal as the board's — a writer that lifts
// the block, writes the log line and puts the block back.
func (b *board) logWriter(w io.Writer, sameTerminal bool) io.Writer {
	if !b.tty || !sameTerminal {
		return w
	}
	return writerFunc(func(p []byte) (int, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.erase()
		n, err := w.Write(p)
		b.draw()
		return n, err
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// depCounts are the counters of one dependency the status line shows, read from its primitives.
type depCounts struct {
	state                         string
	calls, retries                uint64
	notPermitted, bulkheadFull    uint64
	fallbacks, timedOut, inFlight uint64
	// The hedge's counts (all 0 without one): calls, hedges that ran, won and were refused.
	hedged, ran, won, denied uint64
}

func (d *dependency) counts() depCounts {
	rs := d.rt.Snapshot()
	var calls uint64
	for _, c := range rs.Calls {
		calls += c
	}
	var fbs uint64
	if d.fb != nil { // nil with NoFallback
		for _, n := range d.fb.Snapshot().Calls {
			fbs += n
		}
	}
	bs := d.bh.Snapshot()
	var hs hedge.Snapshot
	if d.hg != nil {
		hs = d.hg.Snapshot()
	}
	return depCounts{
		hedged: hs.Calls, ran: hs.Ran(), won: hs.Hedges[catalog.HedgeWon], denied: hs.Hedges[catalog.HedgeBudgetDenied],
		state:        d.br.State().String(),
		calls:        calls,
		retries:      rs.Retries,
		notPermitted: d.br.Snapshot().NotPermitted,
		bulkheadFull: bs.Calls[catalog.AdmissionRejected],
		fallbacks:    fbs,
		timedOut:     d.to.Snapshot().Calls[catalog.TimeoutTimedOut],
		inFlight:     uint64(bs.InFlight),
	}
}

// statusLine is one dependency's line: breaker state, request and retry rates since the last
// line (or, with elapsed 0, the totals), rejections (breaker and bulkhead) and fallbacks.
func statusLine(name string, now, prev depCounts, elapsed time.Duration) string {
	rate := func(a, b uint64) float64 {
		if elapsed <= 0 || a < b {
			return 0
		}
		return float64(a-b) / elapsed.Seconds()
	}
	if elapsed <= 0 { // no rates: totals
		return fmt.Sprintf("%-15s %-11s %8d %8d %9d %10d", name, now.state, now.calls, now.retries, now.notPermitted+now.bulkheadFull, now.fallbacks)
	}
	return fmt.Sprintf("%-15s %-11s %8.1f %8.1f %9d %10d", name, now.state, rate(now.calls, prev.calls), rate(now.retries, prev.retries),
		now.notPermitted+now.bulkheadFull, now.fallbacks)
}

// hedgeLine is the line under a hedged dependency's: the p99 of its (hedged) calls and of its
// unhedged twin's, the extra load the hedges add, the share of them that won and the hedges the
// budget refused, since prev (with elapsed 0: since the start).
func hedgeLine(d *dependency, now, prev depCounts, elapsed time.Duration) string {
	if elapsed <= 0 {
		prev = depCounts{}
	}
	p99 := func(l *latencies) string {
		if q, ok := l.quantile(0.99); ok {
			return q.Round(time.Millisecond).String()
		}
		return "–"
	}
	share := func(a, b uint64) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
	}
	ran := now.ran - prev.ran
	denied := fmt.Sprintf("denied %d", now.denied)
	if elapsed > 0 {
		denied = fmt.Sprintf("denied %.1f/s", float64(now.denied-prev.denied)/elapsed.Seconds())
	}
	return fmt.Sprintf("  └ p99 hedged %s · unhedged %s · +%s load · won %s · %s",
		p99(d.lat), p99(d.tw.lat), share(ran, now.hedged-prev.hedged), share(now.won-prev.won, ran), denied)
}

// columns titles the status lines; totals (at the end of a run) replace the rates.
func columns(totals bool) string {
	if totals {
		return fmt.Sprintf("%-15s %-11s %8s %8s %9s %10s", "dependency", "breaker", "calls", "retries", "rejected", "fallbacks")
	}
	return fmt.Sprintf("%-15s %-11s %8s %8s %9s %10s", "dependency", "breaker", "req/s", "retry/s", "rejected", "fallbacks")
}

// header is the first line of the block: scenario, phase, time.
func header(scenario, phase string, elapsed time.Duration, speed float64) string {
	demoTime := time.Duration(float64(elapsed) * speed).Truncate(time.Second)
	return fmt.Sprintf("── %s ×%s t=%s · %s ", scenario, trimFloat(speed), demoTime, phase)
}

func trimFloat(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", f), ".0") }
