// Command httpclient shows how a service adopts stormwatch: one http.Client whose transport
// (package httpx) gives every dependency its own retry, circuit breaker, bulkhead, timeout and
// fallback from one registry. Two local dependencies on 127.0.0.1: "catalog" is healthy,
// "payments" fails every request with 503. Watch the payments breaker trip, the fallback answer
// "payment processing", and the catalog keep succeeding.
//
//	go run ./examples/httpclient -duration 30s
//	curl -s 127.0.0.1:9466/metrics | grep -E 'resilience_(circuitbreaker_state|fallback|retry_calls)'
//
// The retry log (package retrylog, JSON lines) goes to stderr; a one-line status per second to
// stdout.
//
// Flags:
//
//	-listen 127.0.0.1:9466  metrics address
//	-duration 0             how long to run; 0 = until SIGINT or SIGTERM (exits 0)
//	-interval 100ms         pause between rounds (one request to each dependency per round)
//	-requests 0             stop after this many rounds; 0 = no limit
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
	"github.com/stormwatch-go/stormwatch/internal/exampleutil"
	"github.com/stormwatch-go/stormwatch/retrylog"
)

// The dependencies' names: the `name` label of their series.
const (
	Catalog  = "catalog"
	Payments = "payments"
)

// options are the parsed command-line flags.
type options struct {
	listen   string
	duration time.Duration
	interval time.Duration
	requests int
	// scraped, when set, is called with the metrics URL after the last round, before shutdown
	// (tests use it).
	scraped func(metricsURL string)
}

func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := exampleutil.NewFlagSet("httpclient")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9466", "address to serve /metrics on")
	fs.DurationVar(&o.duration, "duration", 0, "how long to run; 0 = until SIGINT/SIGTERM")
	fs.DurationVar(&o.interval, "interval", 100*time.Millisecond, "pause between rounds")
	fs.IntVar(&o.requests, "requests", 0, "stop after this many rounds; 0 = no limit")
	return o, exampleutil.Parse(fs, "go run ./examples/httpclient [flags]", args, stdout, func() error {
		switch {
		case o.duration < 0:
			return fmt.Errorf("-duration %v: must not be negative", o.duration)
		case o.interval < 0:
			return fmt.Errorf("-interval %v: must not be negative", o.interval)
		case o.requests < 0:
			return fmt.Errorf("-requests %d: must not be negative", o.requests)
		}
		return nil
	})
}

// parseArgs parses the command line for main (see exampleutil.ExitCode).
func parseArgs(args []string, stdout, stderr io.Writer) (options, int) {
	o, err := parseFlags(args, stdout)
	return o, exampleutil.ExitCode("httpclient", err, stderr)
}

func main() {
	o, code := parseArgs(os.Args[1:], os.Stdout, os.Stderr)
	exampleutil.Main("httpclient", code, func(ctx context.Context) error { return run(ctx, o, os.Stdout, os.Stderr) })
}

// pipeline is the configuration of every dependency: retries with jittered backoff and a
// budget, a breaker over the last 20 attempts, 10 concurrent attempts, 500 ms per attempt.
func pipeline() instrument.PipelineConfig {
	rc := retry.Config{}
	rc.Backoff = retry.Backoff{Strategy: retry.FullJitter, Base: 20 * time.Millisecond, Cap: time.Second}
	return instrument.PipelineConfig{
		Retry:    &rc,
		Breaker:  &breaker.Config{WindowSize: 20, MinCalls: 10, OpenDuration: 10 * time.Second},
		Bulkhead: &bulkhead.Config{MaxConcurrent: 10, MaxWait: 100 * time.Millisecond},
		Timeout:  &timeout.Config{Timeout: 500 * time.Millisecond},
		Fallback: &fallback.Config{},
	}
}

func run(ctx context.Context, o options, status, logOut io.Writer) error {
	ctx, cancel := exampleutil.WithDuration(ctx, o.duration)
	defer cancel()

	catalogHost, stopCatalog, err := exampleutil.Loopback(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"items":3}`)
	}))
	if err != nil {
		return err
	}
	defer stopCatalog()
	paymentsHost, stopPayments, err := exampleutil.Loopback(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bank channel under maintenance", http.StatusServiceUnavailable)
	}))
	if err != nil {
		return err
	}
	defer stopPayments()

	// One registry: its retry events go to the retry log, its primitives to /metrics.
	reg, err := instrument.NewRegistry()
	if err != nil {
		return err
	}
	logger, err := retrylog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err != nil {
		return err
	}
	defer logger.Attach(reg.Events())()
	metricsURL, stopMetrics, err := exampleutil.ServeMetrics(o.listen, reg)
	if err != nil {
		return err
	}
	defer stopMetrics()
	fmt.Fprintf(status, "metrics on %s; catalog on %s; payments on %s\n", metricsURL, catalogHost, paymentsHost)

	// The client: one transport, a dependency per host, named for the metrics.
	base := &http.Transport{MaxIdleConnsPerHost: 16}
	defer base.CloseIdleConnections()
	tr, err := httpx.NewTransport(base,
		httpx.WithRegistry(reg),
		httpx.WithPipeline(pipeline()),
		httpx.WithKey(func(r *http.Request) string {
			switch r.URL.Host {
			case catalogHost:
				return Catalog
			case paymentsHost:
				return Payments
			}
			return "other"
		}),
		httpx.WithFallback(func(r *http.Request, cause catalog.Cause, err error) (*http.Response, error) {
			if r.URL.Host != paymentsHost {
				return nil, err
			}
			return &http.Response{StatusCode: http.StatusAccepted,
				Body: io.NopCloser(strings.NewReader(`{"status":"payment processing"}`))}, nil
		}),
	)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: tr}

	var catalogOK, catalogFailed, paymentsDegraded, paymentsFailed atomic.Int64
	report := time.NewTicker(time.Second)
	defer report.Stop()
	printStatus := func() {
		pp, _ := tr.Pipeline(Payments)
		fmt.Fprintf(status, "catalog ok=%d failed=%d | payments degraded=%d failed=%d breaker=%s\n",
			catalogOK.Load(), catalogFailed.Load(), paymentsDegraded.Load(), paymentsFailed.Load(), pp.Breaker().State())
	}
	for round := 1; o.requests == 0 || round <= o.requests; round++ {
		if ctx.Err() != nil {
			break
		}
		rctx := retrylog.WithCorrelationID(ctx, fmt.Sprintf("order-%05d", round))
		if code, _, err := get(rctx, client, "http://"+catalogHost+"/v1/items?session=secret"); err == nil && code == http.StatusOK {
			catalogOK.Add(1)
		} else if ctx.Err() == nil {
			catalogFailed.Add(1)
		}
		if _, degraded, err := get(rctx, client, "http://"+paymentsHost+"/v1/charge"); err == nil && degraded {
			paymentsDegraded.Add(1)
		} else if ctx.Err() == nil {
			paymentsFailed.Add(1)
		}
		select {
		case <-report.C:
			printStatus()
		default:
		}
		if o.interval > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(o.interval):
			}
		}
	}
	printStatus()
	if o.scraped != nil {
		o.scraped(metricsURL)
	}
	return nil
}

// get fetches url and reports the status and whether the answer came from the fallback.
func get(ctx context.Context, client *http.Client, url string) (int, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	_, degraded := httpx.FromFallback(resp)
	return resp.StatusCode, degraded, nil
}
