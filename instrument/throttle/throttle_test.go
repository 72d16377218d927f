package throttle

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fixedRand returns the same draw every time.
type fixedRand float64

func (r fixedRand) Float64() float64 { return float64(r) }

var errRefused = errors.New("overloaded")

func refusedIs(err error) bool { return errors.Is(err, errRefused) }

func newThrottle(t *testing.T, cfg Config) (*Throttle, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg.Clock = clk
	if cfg.Refused == nil {
		cfg.Refused = refusedIs
	}
	th, err := New("payments", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return th, clk
}

func TestNewValidates(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"", Config{}, "name"},
		{"x", Config{K: 0.5}, "K"},
		{"x", Config{K: math.Inf(1)}, "K"},
		{"x", Config{K: math.NaN()}, "K"},
		{"x", Config{Window: time.Millisecond}, "Window"},
	} {
		_, err := New(c.name, c.cfg)
		var ce *catalog.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || ce.Primitive != string(catalog.Throttle) {
			t.Errorf("New(%q, %+v) = %v, want a ConfigError on %s", c.name, c.cfg, err, c.field)
		}
	}
	th, err := New("x", Config{})
	if err != nil || th.Config().K != 2 || th.Config().Window != 2*time.Minute {
		t.Fatalf("zero config: %v %+v", err, th.Config())
	}
}

// The probability is max(0, (requests − K·accepts) / (requests + 1)) over the window, with
// requests counting every Allow (sent or shed) and accepts every non-refused outcome.
func TestProbabilityFollowsTheFormula(t *testing.T) {
	// Draw 0.999: never shed unless p ≈ 1, so the counts are exactly what the test sends.
	th, _ := newThrottle(t, Config{Rand: fixedRand(0.999)})
	ctx := context.Background()
	send := func(n int, err error) {
		for i := 0; i < n; i++ {
			if e := th.Do(ctx, func(context.Context) error { return err }); e != nil && !errors.Is(e, errRefused) {
				t.Fatalf("unexpected %v", e)
			}
		}
	}
	send(10, nil) // 10 requests, 10 accepts
	if p := th.Probability(); p != 0 {
		t.Fatalf("p = %v after successes, want 0", p)
	}
	send(10, errRefused) // 20 requests, 10 accepts: 20 − 2·10 = 0
	if p := th.Probability(); p != 0 {
		t.Fatalf("p = %v at accepts = requests/2, want 0", p)
	}
	send(30, errRefused) // 50 requests, 10 accepts: (50 − 20) / 51
	if p, want := th.Probability(), 30.0/51; math.Abs(p-want) > 1e-12 {
		t.Fatalf("p = %v, want %v", p, want)
	}
	sn := th.Snapshot()
	if sn.Requests != 50 || sn.Accepts != 10 || sn.Calls != [catalog.NumThrottleKinds]uint64{10, 40, 0} {
		t.Errorf("snapshot = %+v", sn)
	}
}

func TestShedsWithTheProbabilityAndCountsShedRequests(t *testing.T) {
	th, _ := newThrottle(t, Config{Rand: fixedRand(0.5)})
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		if err := th.Allow(ctx); err == nil {
			th.Record(errRefused)
		}
	}
	// Nothing is accepted, so before the n-th Allow p = (n−1)/n: 0 and 0.5 let the first two
	// through (the draw 0.5 is not below 0.5), 2/3 and above shed the other eight — and the shed
	// requests still count as requests.
	sn := th.Snapshot()
	if sn.Calls != [catalog.NumThrottleKinds]uint64{0, 2, 8} || sn.Requests != 10 {
		t.Fatalf("snapshot = %+v, want 2 refused and 8 throttled of 10 requests", sn)
	}
	err := th.Allow(ctx)
	var te *ThrottledError
	if !errors.Is(err, ErrThrottled) || !errors.As(err, &te) || !te.Rejected() || te.Name != "payments" || te.RetryAfter != 10*time.Second {
		t.Fatalf("Allow = %#v", err)
	}
	if math.Abs(te.Probability-10.0/11) > 1e-12 {
		t.Errorf("error's probability = %v, want 10/11", te.Probability)
	}
}

// Counts leave the window after Window: a refusing episode ages out and the throttle stops
// shedding without any accept.
func TestWindowSlides(t *testing.T) {
	th, clk := newThrottle(t, Config{Window: 60 * time.Second, Rand: fixedRand(0.999)})
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		_ = th.Do(ctx, func(context.Context) error { return errRefused })
	}
	if p := th.Probability(); math.Abs(p-20.0/21) > 1e-12 {
		t.Fatalf("p = %v, want 20/21", p)
	}
	clk.Advance(55 * time.Second) // still inside the window
	if p := th.Probability(); math.Abs(p-20.0/21) > 1e-12 {
		t.Fatalf("p = %v after 55s, want 20/21", p)
	}
	clk.Advance(10 * time.Second) // the bucket of the first second has left
	if p := th.Probability(); p != 0 {
		t.Fatalf("p = %v after the window, want 0", p)
	}
	// A reused bucket starts from zero.
	_ = th.Do(ctx, func(context.Context) error { return nil })
	if sn := th.Snapshot(); sn.Requests != 1 || sn.Accepts != 1 {
		t.Errorf("snapshot after reuse = %+v", sn)
	}
}

func TestDefaultRefusedRule(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("business"), false},
		{context.DeadlineExceeded, true},
		{context.Canceled, false},
	} {
		if got := Refused(c.err); got != c.want {
			t.Errorf("Refused(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestCallReturnsTheValue(t *testing.T) {
	th, _ := newThrottle(t, Config{})
	v, err := Call(context.Background(), th, func(context.Context) (string, error) { return "ok", nil })
	if v != "ok" || err != nil {
		t.Fatalf("Call = %q, %v", v, err)
	}
}

func BenchmarkAllowRecord(b *testing.B) {
	th, _ := New("x", Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if th.Allow(ctx) == nil {
			th.Record(nil)
		}
	}
}
