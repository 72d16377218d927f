package limit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	servers = 20
	service = 50 * time.Millisecond
	// capacity is the downstream's throughput in calls per second.
	capacity = float64(servers) * float64(time.Second) / float64(service)
)

func newLimiter(t *testing.T, clk clock.Clock, cfg Config) *Limiter {
	t.Helper()
	cfg.Clock = clk
	l, err := New("payments", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNewValidates(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"", Config{}, "name"},
		{"x", Config{Algorithm: 7}, "Algorithm"},
		{"x", Config{InitialLimit: -1}, "InitialLimit"},
		{"x", Config{MinLimit: -1}, "MinLimit"},
		{"x", Config{MaxLimit: -2}, "MaxLimit"},
		{"x", Config{MinLimit: 50, MaxLimit: 10}, "MinLimit"},
		{"x", Config{InitialLimit: 5, MinLimit: 10}, "InitialLimit"},
		{"x", Config{InitialLimit: 500, MaxLimit: 100}, "InitialLimit"},
		{"x", Config{MinSamples: -1}, "MinSamples"},
		{"x", Config{Backoff: 1}, "Backoff"},
		{"x", Config{Backoff: -0.5}, "Backoff"},
		{"x", Config{Tolerance: 0.5}, "Tolerance"},
		{"x", Config{MaxWait: -time.Second}, "MaxWait"},
		{"x", Config{MaxQueue: -1}, "MaxQueue"},
	}
	for _, c := range cases {
		_, err := New(c.name, c.cfg)
		var ce *catalog.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || ce.Primitive != string(catalog.Limiter) {
			t.Errorf("New(%q, %+v) = %v, want a ConfigError on %s", c.name, c.cfg, err, c.field)
		}
	}
}

func TestZeroConfigIsAWorkingDefault(t *testing.T) {
	l, err := New("x", Config{})
	if err != nil {
		t.Fatal(err)
	}
	sn := l.Snapshot()
	if sn.Limit != DefaultInitialLimit || sn.MinLimit != DefaultMinLimit || sn.MaxLimit != DefaultMaxLimit {
		t.Fatalf("zero config snapshot = %+v", sn)
	}
	if err := l.Do(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := l.Snapshot().Calls[catalog.AdmissionPermitted]; got != 1 {
		t.Fatalf("permitted = %d, want 1", got)
	}
	// A small MaxLimit lowers the default initial limit instead of failing.
	l, err = New("x", Config{MaxLimit: 5})
	if err != nil || l.Snapshot().Limit != 5 {
		t.Fatalf("MaxLimit 5: %v, %+v", err, l.Snapshot())
	}
}

// At 3× the downstream's capacity, Vegas holds the limit a little above the downstream's
// concurrency: the downstream stays busy (goodput ≈ capacity) while its queue stays short (the
// admitted calls' p99 stays below 2× the service time), and the excess is rejected at once.
func TestVegasConvergesUnderOverload(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{})
	d := &downstream{servers: servers, service: service}
	res := simulate(clk, l, d, phase{rate: 3 * capacity, duration: 30 * time.Second})

	settled := res.limits[5:]
	for i, lim := range settled {
		if lim < servers || lim > servers+15 {
			t.Fatalf("limit at second %d = %d, want within [%d, %d] (all: %v)", i+5, lim, servers, servers+15, res.limits)
		}
	}
	goodput := float64(res.admitted) / 30
	if goodput < 0.97*capacity {
		t.Errorf("goodput %.0f/s, want ≥ 97%% of capacity %.0f/s", goodput, capacity)
	}
	if p99 := res.p99(); p99 > 2*service {
		t.Errorf("p99 of admitted calls = %v, want ≤ %v", p99, 2*service)
	}
	if sn := l.Snapshot(); sn.Baseline < service || sn.Baseline > service+service/10 {
		t.Errorf("baseline = %v, want ≈ %v", sn.Baseline, service)
	}

	// Without a limiter the same load builds an unbounded queue.
	clk2 := clock.NewFake(t0)
	none := simulate(clk2, nil, &downstream{servers: servers, service: service}, phase{rate: 3 * capacity, duration: 5 * time.Second})
	if none.p99() < 100*service {
		t.Errorf("unlimited p99 = %v: the model does not queue", none.p99())
	}
}

func TestAIMDConvergesUnderOverload(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{Algorithm: AIMD})
	res := simulate(clk, l, &downstream{servers: servers, service: service}, phase{rate: 3 * capacity, duration: 60 * time.Second})
	for i, lim := range res.limits[10:] {
		// AIMD lets latency rise to Tolerance × baseline: the limit settles between the
		// downstream's concurrency and twice it (give or take the noise of a window average of
		// the timed calls, about a quarter of the window).
		if lim < servers*8/10 || lim > 2*servers+4 {
			t.Fatalf("limit at second %d = %d, want within [%d, %d] (all: %v)", i+10, lim, servers*8/10, 2*servers+4, res.limits)
		}
	}
	if goodput := float64(res.admitted) / 60; goodput < 0.95*capacity {
		t.Errorf("goodput %.0f/s, want ≥ 95%% of capacity", goodput)
	}
}

func TestLimitStaysWithinBounds(t *testing.T) {
	// A huge downstream: Vegas would grow without end, MaxLimit stops it.
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{MaxLimit: 30})
	res := simulate(clk, l, &downstream{servers: 1000, service: service}, phase{rate: 10 * capacity, duration: 10 * time.Second})
	if top := maxOf(res.limits); top != 30 {
		t.Errorf("highest limit = %d, want MaxLimit 30 (%v)", top, res.limits)
	}
	// Every call dropped: the limit shrinks by Backoff per window down to MinLimit, never below.
	clk = clock.NewFake(t0)
	l = newLimiter(t, clk, Config{MinLimit: 4})
	ctx := context.Background()
	for i := 0; i < 500; i++ {
		p, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("call %d rejected with nothing in flight: %v", i, err)
		}
		clk.Advance(time.Second)
		p.Done(context.DeadlineExceeded)
		if lim := l.Snapshot().Limit; lim < 4 {
			t.Fatalf("limit %d below MinLimit", lim)
		}
	}
	if sn := l.Snapshot(); sn.Limit != 4 || sn.Samples[catalog.SampleDropped] != 500 {
		t.Errorf("after 500 drops: %+v, want limit 4 and 500 dropped samples", sn)
	}
}

// A window with drops shrinks the limit once by Backoff, however many drops it holds.
func TestDropsShrinkOncePerWindow(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{InitialLimit: 40})
	ctx := context.Background()
	var ps []Permit
	for i := 0; i < 40; i++ {
		p, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	clk.Advance(service)
	for i, p := range ps {
		if i < 30 {
			p.Done(context.DeadlineExceeded)
		} else {
			p.Done(nil)
		}
	}
	if got := l.Snapshot().Limit; got != 36 { // 40 × 0.9
		t.Errorf("limit after one window of 30 drops = %d, want 36", got)
	}
}

// Offered far below capacity, the limiter is not used: the limit does not grow (a limit nobody
// tested is not a limit), and it does not shrink either.
func TestUnusedLimitDoesNotGrow(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{})
	res := simulate(clk, l, &downstream{servers: servers, service: service}, phase{rate: 0.2 * capacity, duration: 60 * time.Second})
	for _, lim := range res.limits {
		if lim != DefaultInitialLimit {
			t.Fatalf("limit moved to %d at 20%% load (all: %v)", lim, res.limits)
		}
	}
	if res.rejected != 0 {
		t.Errorf("%d rejections at 20%% load", res.rejected)
	}
}

// Under moderate overload (1.3×, the load where a queue-size term can outrun the gradient) the
// limit holds still for half an hour: its late average is no higher than its early one.
func TestNoLimitCreepUnderModerateOverload(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{})
	res := simulate(clk, l, &downstream{servers: servers, service: service}, phase{rate: 1.3 * capacity, duration: longRun})
	early, late := mean(res.limits[60:120]), mean(res.limits[len(res.limits)-60:])
	if late > early+1 || maxOf(res.limits[60:]) > servers+15 {
		t.Errorf("limit crept: mean %.1f in minute 2, %.1f in the last minute, max %d", early, late, maxOf(res.limits[60:]))
	}
}

// During a long overload incident the baseline stays at the no-load latency: saturated
// windows never raise it. When load falls and the dependency has really become slower, the
// baseline follows.
func TestBaselineDoesNotDriftDuringALongIncident(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{})
	d := &downstream{servers: servers, service: service}
	res := simulate(clk, l, d,
		phase{rate: 0.5 * capacity, duration: 30 * time.Second},
		phase{rate: 3 * capacity, duration: longRun},
	)
	for i, b := range res.baselines[30:] {
		if b > service+service/20 {
			t.Fatalf("baseline %v at second %d of the incident, want ≈ %v", b, i, service)
		}
	}
	if lim := res.limits[len(res.limits)-1]; lim < servers {
		t.Errorf("limit at the end of the incident = %d, want ≥ %d", lim, servers)
	}

	// The dependency becomes twice as slow, and load is light: the baseline rises towards it.
	simulate(clk, l, d, phase{rate: 0.15 * capacity, duration: 60 * time.Second, service: 2 * service})
	if b := l.Snapshot().Baseline; b < 2*service*95/100 {
		t.Errorf("baseline %v after a minute at 2× service time under light load, want ≈ %v", b, 2*service)
	}
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func mean(xs []int) float64 {
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(len(xs))
}
