// Command breaker is a runnable stormwatch demo: it calls a flaky HTTP server on 127.0.0.1
// through a circuit breaker called "downstream" and serves the breaker's metrics on /metrics.
//
//	go run ./examples/breaker                  # 10% failures: the breaker stays closed
//	go run ./examples/breaker -fail            # the downstream is down: the breaker trips and stays open
//	go run ./examples/breaker -fail-rate 0.6   # flaky: the breaker trips, probes and closes again
//	curl -s 127.0.0.1:9464/metrics | grep circuitbreaker
//
// Flags (a contract the end-to-end test relies on):
//
//	-listen 127.0.0.1:9464  metrics address
//	-fail                   downstream always fails (503)
//	-fail-rate 0.1          share of downstream calls that fail (500), 0.0..1.0
//	-rate 20                calls per second
//	-open-duration 30s      base open duration of the breaker (±20% jitter)
//	-duration 0             how long to run; 0 = until SIGINT or SIGTERM (exits 0)
//
// Transitions are logged with slog to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

// BreakerName is the name of the demo's breaker: the `name` label of its series.
const BreakerName = "downstream"

// options are the parsed command-line flags.
type options struct {
	listen       string
	fail         bool
	failRate     float64
	rate         float64
	openDuration time.Duration
	duration     time.Duration
}

// parseFlags parses args; errors name the flag and its value.
func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("breaker", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, and printed once by main
	fs.Usage = func() {}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9464", "address to serve /metrics on")
	fs.BoolVar(&o.fail, "fail", false, "downstream always fails (503): the breaker trips and stays open")
	fs.Float64Var(&o.failRate, "fail-rate", 0.1, "share of downstream calls that fail, 0.0..1.0")
	fs.Float64Var(&o.rate, "rate", 20, "calls per second")
	fs.DurationVar(&o.openDuration, "open-duration", 30*time.Second, "base open duration of the breaker")
	fs.DurationVar(&o.duration, "duration", 0, "how long to run; 0 = until SIGINT/SIGTERM")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: go run ./examples/breaker [flags]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.failRate < 0 || o.failRate > 1:
		return o, fmt.Errorf("-fail-rate %v: must be between 0 and 1", o.failRate)
	case o.rate <= 0 || o.rate > 100000:
		return o, fmt.Errorf("-rate %v: must be above 0 and at most 100000", o.rate)
	case o.openDuration <= 0:
		return o, fmt.Errorf("-open-duration %v: must be positive", o.openDuration)
	case o.duration < 0:
		return o, fmt.Errorf("-duration %v: must not be negative", o.duration)
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
		fmt.Fprintf(stderr, "breaker: %v (run with -h for usage)\n", err)
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
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, o, logger, nil); err != nil {
		logger.Error("breaker demo failed", "err", err)
		os.Exit(1)
	}
}

// run serves the flaky downstream and the metrics, and calls the downstream through the breaker
// until ctx is done; then it shuts everything down and returns nil. ready, when set, receives
// the metrics address once it is listening.
func run(ctx context.Context, o options, logger *slog.Logger, ready func(metricsAddr string)) error {
	downLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("downstream listener: %w", err)
	}
	down := &http.Server{Handler: flakyHandler(o), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = down.Serve(downLn) }()
	defer shutdown(down)

	reg, err := instrument.NewRegistry()
	if err != nil {
		return err
	}
	reg.Events().Transitions.Add(func(t events.Transition) {
		logger.Info("circuit breaker transition", "name", t.Name, "from", t.From, "to", t.To, "reason", t.Reason)
	})
	b, err := reg.Breaker(BreakerName, breaker.Config{OpenDuration: o.openDuration})
	if err != nil {
		return err
	}
	c, err := collector.New(reg)
	if err != nil {
		return err
	}
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	metricsLn, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("-listen %s: %w", o.listen, err)
	}
	metrics := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = metrics.Serve(metricsLn) }()
	defer shutdown(metrics)
	logger.Info("serving metrics", "url", "http://"+metricsLn.Addr().String()+"/metrics", "downstream", downLn.Addr().String())
	if ready != nil {
		ready(metricsLn.Addr().String())
	}

	transport := &http.Transport{MaxIdleConnsPerHost: 16}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 2 * time.Second}
	url := "http://" + downLn.Addr().String() + "/"
	tick := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			logger.Info("shutting down", "state", b.State().String())
			return nil
		case <-tick.C:
			_ = b.Do(ctx, func(ctx context.Context) error { return get(ctx, client, url) })
		}
	}
}

// flakyHandler fails every request with -fail, else a -fail-rate share of them.
func flakyHandler(o options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case o.fail:
			http.Error(w, "down", http.StatusServiceUnavailable)
		case rand.Float64() < o.failRate:
			http.Error(w, "flaky", http.StatusInternalServerError)
		default:
			_, _ = io.WriteString(w, "ok\n")
		}
	})
}

// get calls the downstream; a 5xx status is an error.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 500 {
		return fmt.Errorf("downstream: status %d", resp.StatusCode)
	}
	return nil
}

func shutdown(s *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Shutdown(ctx)
}
