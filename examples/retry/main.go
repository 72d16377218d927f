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
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
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
	fs := flag.NewFlagSet("retry", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, and printed once by main
	fs.Usage = func() {}
	var o options
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9465", "address to serve /metrics on")
	fs.DurationVar(&o.duration, "duration", 0, "how long to run; 0 runs until interrupted")
	fs.IntVar(&o.retryAfter, "retry-after", 1, "Retry-After seconds sent with the flaky server's 503s")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: go run ./examples/retry [flags]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return o, err
	}
	if o.duration < 0 {
		return o, fmt.Errorf("-duration %v: must not be negative", o.duration)
	}
	if o.retryAfter < 0 {
		return o, fmt.Errorf("-retry-after %d: must not be negative", o.retryAfter)
	}
	return o, nil
}

// parseArgs parses the command line for main: code -1 means run; otherwise exit with code, 0
// after -h (the usage went to stdout), 2 after a bad flag or value (one line on stderr).
func parseArgs(args []string, stdout, stderr io.Writer) (options, int) {
	o, err := parseFlags(args, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return o, 0
	case err != nil:
		fmt.Fprintf(stderr, "retry: %v (run with -h for usage)\n", err)
		return o, 2
	}
	return o, -1
}

func main() {
	o, code := parseArgs(os.Args[1:], os.Stdout, os.Stderr)
	if code >= 0 {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "retry:", err)
		os.Exit(1)
	}
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

// serve starts an HTTP server on l and returns a function that shuts it down.
func serve(l net.Listener, h http.Handler) func() {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}

func run(ctx context.Context, o options, logOut, status io.Writer) error {
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}

	// The flaky downstream, on a loopback port of its own.
	backendL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	stopBackend := serve(backendL, flaky(o.retryAfter))
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
	col, err := collector.New(reg)
	if err != nil {
		return err
	}
	promReg := prometheus.NewRegistry()
	if err := promReg.Register(col); err != nil {
		return err
	}
	metricsL, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	stopMetrics := serve(metricsL, mux)
	defer stopMetrics()
	metricsURL := "http://" + metricsL.Addr().String() + "/metrics"
	fmt.Fprintf(status, "metrics on %s; flaky server on %s\n", metricsURL, backendL.Addr())
	if o.ready != nil {
		o.ready(metricsURL)
	}

	r, err := reg.Retry("flaky-api", retry.Config{})
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	target := "http://" + backendL.Addr().String() + "/v1/quote"
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
