package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// Fault is what a downstream endpoint does to the requests it receives. Durations are in demo
// time: the server divides them by the run's speed. The shares are drawn per request in the order
// reset, hang, rate limit, error; what is left is answered 200 after the latency.
type Fault struct {
	// Latency is added before every answer (and before the error of an error answer); Jitter
	// adds a uniform [0, Jitter) on top.
	Latency, Jitter time.Duration
	// ErrorRate is the share of requests answered with Status (default 503).
	ErrorRate float64
	Status    int
	// RateLimitRate is the share of requests answered 429 with a Retry-After of RetryAfter.
	RateLimitRate float64
	RetryAfter    time.Duration
	// ResetRate is the share of requests whose connection is reset without an answer.
	ResetRate float64
	// HangRate is the share of requests that never get an answer: the handler waits until the
	// client gives up or the server stops.
	HangRate float64
	// Capacity is how many requests the endpoint serves at a time (0: no limit); the others
	// wait in arrival order, so Latency+Jitter is then the service time of each and a queue
	// builds when more arrive than it serves.
	Capacity int
	// Load is not the endpoint's behaviour but the demo client's: it offers Load times its rate
	// to this dependency (0 means 1).
	Load float64
	// StragglerRate is the share of requests that are stragglers: they take StragglerLatency
	// more than Latency+Jitter (a slow replica, a GC pause). It is drawn on its own, after the
	// other shares.
	StragglerRate    float64
	StragglerLatency time.Duration
}

// Healthy is the fault of a healthy endpoint: 20–60 ms and nothing else.
var Healthy = Fault{Latency: 20 * time.Millisecond, Jitter: 40 * time.Millisecond}

// validate reports the first invalid field.
func (f Fault) validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"ErrorRate", f.ErrorRate}, {"RateLimitRate", f.RateLimitRate}, {"ResetRate", f.ResetRate}, {"HangRate", f.HangRate}, {"StragglerRate", f.StragglerRate}} {
		if r.v < 0 || r.v > 1 {
			return fmt.Errorf("demo: Fault.%s = %v: must be in [0, 1]", r.name, r.v)
		}
	}
	if sum := f.ErrorRate + f.RateLimitRate + f.ResetRate + f.HangRate; sum > 1+1e-9 {
		return fmt.Errorf("demo: Fault shares add up to %v: must be at most 1", sum)
	}
	if f.Latency < 0 || f.Jitter < 0 || f.RetryAfter < 0 || f.StragglerLatency < 0 {
		return fmt.Errorf("demo: Fault durations must not be negative (Latency %v, Jitter %v, RetryAfter %v, StragglerLatency %v)", f.Latency, f.Jitter, f.RetryAfter, f.StragglerLatency)
	}
	if f.Capacity < 0 || f.Load < 0 {
		return fmt.Errorf("demo: Fault.Capacity = %d, Fault.Load = %v: must not be negative", f.Capacity, f.Load)
	}
	if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		return fmt.Errorf("demo: Fault.Status = %d: must be an HTTP error status (400–599)", f.Status)
	}
	return nil
}

// endpoint is one path of the downstream with its current fault and its counts.
type endpoint struct {
	fault atomic.Pointer[Fault]
	// slots holds one token per request being served when the fault has a Capacity; requests
	// that find it full wait (in arrival order) to send theirs.
	slots atomic.Pointer[chan struct{}]
	// Counts of requests received and of what they were answered.
	received, ok, errored, limited, reset, hung atomic.Uint64
}

// Downstream is the fault-injectable HTTP server the demo's client calls: one endpoint per
// dependency (/payments, /inventory, …), each with a fault that can be switched atomically
// while requests are in flight.
type Downstream struct {
	speed     float64
	clock     clock.Clock
	rand      clock.Rand
	endpoints map[string]*endpoint
	stop      chan struct{} // closed by Close: hanging handlers return
	stopOnce  sync.Once
}

// NewDownstream returns a downstream serving the named endpoints, all healthy. speed divides
// every duration of the faults set on it; clk runs the latencies and r draws each request's
// fault and jitter (nil: the wall clock and math/rand/v2).
func NewDownstream(clk clock.Clock, r clock.Rand, speed float64, names ...string) *Downstream {
	d := &Downstream{speed: speed, clock: clock.Or(clk), rand: clock.RandOr(r),
		endpoints: make(map[string]*endpoint, len(names)), stop: make(chan struct{})}
	for _, n := range names {
		e := &endpoint{}
		h := Healthy
		e.fault.Store(&h)
		d.endpoints[n] = e
	}
	return d
}

// SetFault replaces the fault of the endpoint name; requests already waiting keep the fault they
// started with.
func (d *Downstream) SetFault(name string, f Fault) error {
	e, ok := d.endpoints[name]
	if !ok {
		return fmt.Errorf("demo: no downstream endpoint %q", name)
	}
	if err := f.validate(); err != nil {
		return err
	}
	if cur := e.slots.Load(); f.Capacity == 0 {
		e.slots.Store(nil)
	} else if cur == nil || cap(*cur) != f.Capacity {
		ch := make(chan struct{}, f.Capacity)
		e.slots.Store(&ch)
	}
	e.fault.Store(&f)
	return nil
}

// Fault returns the current fault of the endpoint name.
func (d *Downstream) Fault(name string) Fault {
	if e, ok := d.endpoints[name]; ok {
		return *e.fault.Load()
	}
	return Fault{}
}

// Received returns how many requests the endpoint name has received.
func (d *Downstream) Received(name string) uint64 {
	if e, ok := d.endpoints[name]; ok {
		return e.received.Load()
	}
	return 0
}

// Close releases every hanging handler. The HTTP server itself is shut down by its owner.
func (d *Downstream) Close() { d.stopOnce.Do(func() { close(d.stop) }) }

func (d *Downstream) scale(t time.Duration) time.Duration { return scaleDuration(t, d.speed) }

// ServeHTTP answers a request to /<name> according to the endpoint's fault.
func (d *Downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e, ok := d.endpoints[r.URL.Path[min(1, len(r.URL.Path)):]]
	if !ok {
		http.NotFound(w, r)
		return
	}
	e.received.Add(1)
	f := e.fault.Load()
	x := d.rand.Float64()
	switch {
	case x < f.ResetRate:
		e.reset.Add(1)
		resetConnection(w)
		return
	case x < f.ResetRate+f.HangRate:
		e.hung.Add(1)
		select {
		case <-r.Context().Done():
		case <-d.stop:
		}
		return
	}
	if slots := e.slots.Load(); slots != nil {
		select {
		case *slots <- struct{}{}:
			defer func() { <-*slots }()
		case <-r.Context().Done():
			return
		case <-d.stop:
			return
		}
	}
	latency := f.Latency
	if f.StragglerRate > 0 && d.rand.Float64() < f.StragglerRate {
		latency += f.StragglerLatency
	}
	if !d.wait(r.Context(), latency, f.Jitter) {
		return
	}
	switch {
	case x < f.ResetRate+f.HangRate+f.RateLimitRate:
		e.limited.Add(1)
		ra := d.scale(f.RetryAfter)
		w.Header().Set("Retry-After", strconv.FormatFloat(ra.Seconds(), 'f', -1, 64))
		http.Error(w, "rate limited", http.StatusTooManyRequests)
	case x < f.ResetRate+f.HangRate+f.RateLimitRate+f.ErrorRate:
		e.errored.Add(1)
		status := f.Status
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		http.Error(w, http.StatusText(status), status)
	default:
		e.ok.Add(1)
		_, _ = io.WriteString(w, "ok\n")
	}
}

// wait sleeps for the scaled latency plus jitter; it reports false when the request or the
// server ended first.
func (d *Downstream) wait(ctx context.Context, latency, jitter time.Duration) bool {
	t := latency
	if jitter > 0 {
		t += time.Duration(d.rand.Float64() * float64(jitter))
	}
	t = d.scale(t)
	if t <= 0 {
		return true
	}
	timer := d.clock.NewTimer(t)
	defer timer.Stop()
	select {
	case <-timer.C():
		return true
	case <-ctx.Done():
		return false
	case <-d.stop:
		return false
	}
}

// resetConnection closes the request's connection with a TCP RST (linger 0), so the client sees
// "connection reset by peer" instead of an answer.
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// server is an HTTP server on a loopback listener, stopped by its stop function.
type server struct {
	srv  *http.Server
	done chan struct{}
	addr string
}

// serve starts h on l.
func serve(l net.Listener, h http.Handler) *server {
	s := &server{
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		done: make(chan struct{}),
		addr: l.Addr().String(),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed; Shutdown still returns
		}
	}()
	return s
}

// stop shuts the server down, waiting at most grace for requests in flight before closing
// their connections.
func (s *server) stop(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
}
