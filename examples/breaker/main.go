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
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/internal/exampleutil"
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
	fs := exampleutil.NewFlagSet("breaker")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9464", "address to serve /metrics on")
	fs.BoolVar(&o.fail, "fail", false, "downstream always fails (503): the breaker trips and stays open")
	fs.Float64Var(&o.failRate, "fail-rate", 0.1, "share of downstream calls that fail, 0.0..1.0")
	fs.Float64Var(&o.rate, "rate", 20, "calls per second")
	fs.DurationVar(&o.openDuration, "open-duration", 30*time.Second, "base open duration of the breaker")
	fs.DurationVar(&o.duration, "duration", 0, "how long to run; 0 = until SIGINT/SIGTERM")
	return o, exampleutil.Parse(fs, "go run ./examples/breaker [flags]", args, stdout, func() error {
		switch {
		case o.failRate < 0 || o.failRate > 1:
			return fmt.Errorf("-fail-rate %v: must be between 0 and 1", o.failRate)
		case o.rate <= 0 || o.rate > 100000:
			return fmt.Errorf("-rate %v: must be above 0 and at most 100000", o.rate)
		case o.openDuration <= 0:
			return fmt.Errorf("-open-duration %v: must be positive", o.openDuration)
		case o.duration < 0:
			return fmt.Errorf("-duration %v: must not be negative", o.duration)
		}
		return nil
	})
}

// parseArgs parses the command line for main (see exampleutil.ExitCode).
func parseArgs(args []string, stdout, stderr io.Writer) (options, int) {
	o, err := parseFlags(args, stdout)
	return o, exampleutil.ExitCode("breaker", err, stderr)
}

func main() {
	o, code := parseArgs(os.Args[1:], os.Stdout, os.Stderr)
	exampleutil.Main("breaker", code, func(ctx context.Context) error {
		ctx, cancel := exampleutil.WithDuration(ctx, o.duration)
		defer cancel()
		return run(ctx, o, slog.New(slog.NewTextHandler(os.Stderr, nil)), nil)
	})
}

// run serves the flaky downstream and the metrics, and calls the downstream through the breaker
// until ctx is done; then it shuts everything down and returns nil. ready, when set, receives
// the metrics address once it is listening.
func run(ctx context.Context, o options, logger *slog.Logger, ready func(metricsAddr string)) error {
	downstream, stopDownstream, err := exampleutil.Loopback(flakyHandler(o))
	if err != nil {
		return fmt.Errorf("downstream listener: %w", err)
	}
	defer stopDownstream()

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
	metricsURL, stopMetrics, err := exampleutil.ServeMetrics(o.listen, reg,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err != nil {
		return err
	}
	defer stopMetrics()
	logger.Info("serving metrics", "url", metricsURL, "downstream", downstream)
	if ready != nil {
		ready(strings.TrimSuffix(strings.TrimPrefix(metricsURL, "http://"), "/metrics"))
	}

	transport := &http.Transport{MaxIdleConnsPerHost: 16}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 2 * time.Second}
	url := "http://" + downstream + "/"
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
