// Command retry shows stormwatch's retry against a flaky local server: every other request is
// answered 503 with Retry-After, the retry waits as told and the next attempt gets a 200. The
// retry log is printed as JSON lines on stdout and the metrics are served on /metrics.
//
//	go run ./examples/retry -duration 10s
//	curl -s http://127.0.0.1:9465/metrics | grep resilience_retry_
//
// Flags: -listen (metrics address, default 127.0.0.1:9465), -duration (0 = until interrupted),
// -retry-after (the Retry-After the flaky server sends, default 1).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/internal/exampleutil"
	"github.com/stormwatch-go/stormwatch/retrylog"
)

// options are the command's flags.
type options struct {
	listen     string
	duration   time.Duration
	retryAfter int
	// ready, when set, is called with the metrics URL once the servers are up (tests use it).
	ready func(metricsURL string)
}

func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := exampleutil.NewFlagSet("retry")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9465", "address to serve /metrics on")
	fs.DurationVar(&o.duration, "duration", 0, "how long to run; 0 runs until interrupted")
	fs.IntVar(&o.retryAfter, "retry-after", 1, "Retry-After seconds sent with the flaky server's 503s")
	return o, exampleutil.Parse(fs, "go run ./examples/retry [flags]", args, stdout, func() error {
		switch {
		case o.duration < 0:
			return fmt.Errorf("-duration %v: must not be negative", o.duration)
		case o.retryAfter < 0:
			return fmt.Errorf("-retry-after %d: must not be negative", o.retryAfter)
		}
		return nil
	})
}

// parseArgs parses the command line for main (see exampleutil.ExitCode).
func parseArgs(args []string, stdout, stderr io.Writer) (options, int) {
	o, err := parseFlags(args, stdout)
	return o, exampleutil.ExitCode("retry", err, stderr)
}

func main() {
	o, code := parseArgs(os.Args[1:], os.Stdout, os.Stderr)
	exampleutil.Main("retry", code, func(ctx context.Context) error { return run(ctx, o, os.Stdout, os.Stderr) })
}

// flaky answers every odd request 503 with Retry-After and every even one 200.
func flaky(retryAfter int) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
			http.Error(w, "busy, come back later", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
}

func run(ctx context.Context, o options, logOut, status io.Writer) error {
	ctx, cancel := exampleutil.WithDuration(ctx, o.duration)
	defer cancel()

	// The flaky downstream, on a loopback port of its own.
	backend, stopBackend, err := exampleutil.Loopback(flaky(o.retryAfter))
	if err != nil {
		return err
	}
	defer stopBackend()

	// A registry, its retry log on logOut, and its metrics on /metrics.
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
	fmt.Fprintf(status, "metrics on %s; flaky server on %s\n", metricsURL, backend)
	if o.ready != nil {
		o.ready(metricsURL)
	}

	r, err := reg.Retry("flaky-api", retry.Config{})
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	target := "http://" + backend + "/v1/quote"
	for i := 1; ; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}
		ctx := retrylog.WithCorrelationID(ctx, fmt.Sprintf("quote-%04d", i))
		resp, err := retry.CallWith(ctx, r, func(ctx context.Context) (*http.Response, error) {
			return client.Do(req.WithContext(ctx))
		}, httpx.RetryHooks(req))
		switch {
		case err == nil:
			fmt.Fprintf(status, "call %d: %s\n", i, resp.Status)
		case ctx.Err() != nil:
			httpx.DiscardResponse(resp)
			return nil
		default:
			fmt.Fprintf(status, "call %d failed: %v\n", i, err)
		}
		httpx.DiscardResponse(resp)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}
