package demo

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// latencyWindow is how many recent call latencies the status line's p99 is taken from.
const latencyWindow = 200

// latencies keeps the last n latencies of a stream of calls.
type latencies struct {
	mu   sync.Mutex
	ring []time.Duration
	next int
	full bool
}

func newLatencies(n int) *latencies { return &latencies{ring: make([]time.Duration, n)} }

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = d
	if l.next++; l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
}

// quantile returns the q-quantile (nearest rank) of the kept latencies; false while there are
// none.
func (l *latencies) quantile(q float64) (time.Duration, bool) {
	l.mu.Lock()
	n := l.next
	if l.full {
		n = len(l.ring)
	}
	kept := slices.Clone(l.ring[:n])
	l.mu.Unlock()
	if len(kept) == 0 {
		return 0, false
	}
	slices.Sort(kept)
	i := int(q*float64(len(kept))+0.999999) - 1
	return kept[min(max(i, 0), len(kept)-1)], true
}

// twinTimeout bounds a twin's request (wall time).
const twinTimeout = 10 * time.Second

// twinShare is the twin's rate, as a share of the dependency's.
const twinShare = 0.5

// twin is the unhedged twin of a hedged dependency: a plain client calling the same endpoint,
// without stormwatch's pipeline (so none of the dependency's series count its calls), whose
// latencies show the tail the hedge cuts.
type twin struct {
	url    string
	client *http.Client
	clk    clock.Clock
	lat    *latencies
}

func newTwin(url string, base http.RoundTripper, clk clock.Clock) *twin {
	return &twin{url: url, client: &http.Client{Transport: base, Timeout: twinTimeout}, clk: clock.Or(clk), lat: newLatencies(latencyWindow)}
}

// call makes one request and records its latency (a request that fails or is cancelled is not
// recorded: it has no latency to compare).
func (t *twin) call(ctx context.Context) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return
	}
	start := t.clk.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return
	}
	resp.Body.Close()
	t.lat.add(t.clk.Now().Sub(start))
}
