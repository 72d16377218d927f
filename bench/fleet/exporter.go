package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// unavailable is a dependency's 503: retryable, and a failure for the breaker.
type unavailable struct{}

func (unavailable) Error() string   { return "503 Service Unavailable" }
func (unavailable) HTTPStatus() int { return http.StatusServiceUnavailable }

// openDuration is how long a tripped breaker stays open, on the exporter's breaker clock.
const openDuration = time.Second

// pipelineConfig is each dependency's retry around a breaker, with short waits so that every
// path runs in a few milliseconds: retries 1µs apart; the breaker tripping after 4 calls at 50%
// failures and closing after one successful probe, on a fake clock that exercise advances past
// the open period (on the wall clock, a loaded machine could let the period pass before the
// call meant to be rejected).
func pipelineConfig(bc clock.Clock) instrument.PipelineConfig {
	return instrument.PipelineConfig{
		Retry: &retry.Config{MaxAttempts: 3, Backoff: retry.Backoff{Base: time.Microsecond, Cap: time.Microsecond}},
		Breaker: &breaker.Config{WindowSize: 10, MinCalls: 4, OpenDuration: openDuration, DisableJitter: true,
			HalfOpenCalls: 1, Clock: bc},
	}
}

// exporter is one process's worth of dependencies behind a /metrics endpoint on loopback.
type exporter struct {
	addr      string
	pipelines []*instrument.Pipeline
	srv       *http.Server
	done      chan struct{}
}

// dependencyName is the name of dependency i.
func dependencyName(i int) string { return fmt.Sprintf("dependency-%05d", i) }

// newExporter creates n dependencies, runs every path of each once (see exercise) and serves
// their metrics on 127.0.0.1.
func newExporter(ctx context.Context, n int) (*exporter, error) {
	reg, err := instrument.NewRegistry(instrument.WithMaxNames(n))
	if err != nil {
		return nil, err
	}
	e := &exporter{done: make(chan struct{})}
	bc := clock.NewFake(time.Now())
	for i := range n {
		p, err := reg.Pipeline(dependencyName(i), pipelineConfig(bc))
		if err != nil {
			return nil, err
		}
		if err := exercise(ctx, p, bc); err != nil {
			return nil, fmt.Errorf("%s: %w", dependencyName(i), err)
		}
		e.pipelines = append(e.pipelines, p)
	}
	c, err := collector.New(reg)
	if err != nil {
		return nil, err
	}
	pr := prometheus.NewRegistry()
	if err := pr.Register(c); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e.addr = l.Addr().String()
	e.srv = &http.Server{Handler: promhttp.HandlerFor(pr, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(e.done)
		_ = e.srv.Serve(l)
	}()
	return e, nil
}

// exercise runs every path of a retry around a breaker: successes on the first attempt, a
// failure rescued by a retry, calls failing every attempt (retries exhausted, the budget
// refusing some) until the breaker trips, calls rejected while it is open, and the half-open
// probe that closes it.
func exercise(ctx context.Context, p *instrument.Pipeline, bc *clock.Fake) error {
	ok := func(context.Context) error { return nil }
	fail := func(context.Context) error { return unavailable{} }
	for range 5 {
		if err := p.Do(ctx, ok); err != nil {
			return err
		}
	}
	first := true
	if err := p.Do(ctx, func(context.Context) error {
		if first {
			first = false
			return unavailable{}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("a retry did not rescue the call: %w", err)
	}
	for range 20 {
		_ = p.Do(ctx, fail)
	}
	if err := p.Do(ctx, ok); !errors.Is(err, breaker.ErrOpen) {
		return fmt.Errorf("the breaker did not reject a call after 20 failed calls (got %v)", err)
	}
	bc.Advance(openDuration) // the open period
	if err := p.Do(ctx, ok); err != nil {
		return fmt.Errorf("the half-open probe failed: %w", err)
	}
	return nil
}

// traffic calls every dependency once per period, successfully, until ctx ends, so that the
// counters keep moving while Prometheus scrapes.
func (e *exporter) traffic(ctx context.Context, period time.Duration, wg *sync.WaitGroup) {
	defer wg.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, p := range e.pipelines {
				_ = p.Do(ctx, func(context.Context) error { return nil })
			}
		}
	}
}

func (e *exporter) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
	<-e.done
}
