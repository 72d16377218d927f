package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/internal/exampleutil/exampletest"
	"github.com/stormwatch-go/stormwatch/internal/exposition"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, options{listen: "127.0.0.1:9464", failRate: 0.1, rate: 20, openDuration: 30 * time.Second}, o)

	o, err = parseFlags([]string{"-listen", "127.0.0.1:0", "-fail", "-fail-rate", "0.5", "-rate", "50", "-open-duration", "1m", "-duration", "5s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, options{listen: "127.0.0.1:0", fail: true, failRate: 0.5, rate: 50, openDuration: time.Minute, duration: 5 * time.Second}, o)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-fail-rate", "1.5"}, "-fail-rate 1.5"},
		{[]string{"-rate", "0"}, "-rate 0"},
		{[]string{"-open-duration", "0s"}, "-open-duration 0s"},
		{[]string{"-duration", "-1s"}, "-duration -1s"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(tt.args, io.Discard)
		require.Error(t, err, tt.args)
		assert.Contains(t, err.Error(), tt.want)
	}
}

// TestRunTripsAndServesMetrics runs the demo with a failing downstream until /metrics shows the
// breaker open with rejections, then stops it like a signal would.
func TestRunTripsAndServesMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var logs exampletest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	addr := make(chan string, 1)
	done := make(chan error, 1)
	o := options{listen: "127.0.0.1:0", fail: true, rate: 500, openDuration: time.Hour}
	go func() { done <- run(ctx, o, logger, func(a string) { addr <- a }) }()

	var metricsAddr string
	select {
	case metricsAddr = <-addr:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	}
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 2 * time.Second}
	var mfs map[string]*dto.MetricFamily
	value := func(name string, labels ...string) float64 {
		t.Helper()
		v, err := exposition.Value(mfs, name, append([]string{"name", BreakerName}, labels...)...)
		require.NoError(t, err)
		return v
	}
	for ctx.Err() == nil {
		resp, err := client.Get("http://" + metricsAddr + "/metrics")
		require.NoError(t, err)
		mfs, err = exposition.Parse(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if value("resilience_circuitbreaker_state", "state", "open") == 1 && value("resilience_circuitbreaker_not_permitted_calls_total") > 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // polling a real server, not waiting for a state
		}
	}
	require.NoError(t, ctx.Err(), "the breaker never showed open with rejections")
	assert.Equal(t, 1.0, value("resilience_circuitbreaker_transitions_total", "from", "closed", "to", "open"))
	assert.Contains(t, mfs, "go_goroutines")

	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, logs.String(), "circuit breaker transition")
	assert.Contains(t, logs.String(), "from=closed to=open")
}

func TestParseArgsExitCodes(t *testing.T) {
	exampletest.TestExitCodes(t, "breaker", "go run ./examples/breaker [flags]",
		func(args []string, stdout, stderr io.Writer) int {
			_, code := parseArgs(args, stdout, stderr)
			return code
		},
		exampletest.ExitCase{Args: []string{"-fail-rate", "1.5"}, Stderr: "-fail-rate 1.5: must be between 0 and 1"},
		exampletest.ExitCase{Args: []string{"-rate", "0"}, Stderr: "-rate 0: must be above 0 and at most 100000"})
}
