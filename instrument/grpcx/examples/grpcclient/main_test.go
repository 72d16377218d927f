package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
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
	assert.Equal(t, options{listen: "127.0.0.1:9467", interval: 100 * time.Millisecond}, o)
	o, err = parseFlags([]string{"-listen", "127.0.0.1:0", "-duration", "3s", "-interval", "0s", "-requests", "5"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, options{listen: "127.0.0.1:0", duration: 3 * time.Second, requests: 5}, o)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-duration", "-1s"}, "-duration -1s"},
		{[]string{"-interval", "-1s"}, "-interval -1s"},
		{[]string{"-requests", "-2"}, "-requests -2"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-bogus"}, "bogus"},
	} {
		_, err := parseFlags(tt.args, io.Discard)
		require.Error(t, err, tt.args)
		assert.Contains(t, err.Error(), tt.want)
	}
	var stdout, stderr strings.Builder
	_, code := parseArgs([]string{"-requests", "-1"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Equal(t, "grpcclient: -requests -1: must not be negative (run with -h for usage)\n", stderr.String())
	_, code = parseArgs([]string{"-h"}, &stdout, &stderr)
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout.String(), "usage: go run ./examples/grpcclient [flags]\n"))
	_, code = parseArgs(nil, io.Discard, io.Discard)
	assert.Equal(t, -1, code, "no flags: run")
}

// TestRunDegradesPaymentsAndKeepsTheCatalog drives a fixed number of rounds against the two
// local gRPC servers, then reads /metrics before the program shuts down.
func TestRunDegradesPaymentsAndKeepsTheCatalog(t *testing.T) {
	const rounds = 40
	var status, logs exampletest.SyncBuffer
	var mfs map[string]*dto.MetricFamily
	o := options{listen: "127.0.0.1:0", requests: rounds, duration: 30 * time.Second,
		scraped: func(url string) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
			require.NoError(t, err)
			defer resp.Body.Close()
			mfs, err = exposition.Parse(resp.Body)
			require.NoError(t, err)
		}}
	require.NoError(t, run(context.Background(), o, &status, &logs))

	// Every catalog call and stream succeeded — the server fails its streams number 1, 11, 21,
	// 31 and 41 before their first item, and those 5 were retried; every payment was degraded.
	assert.Contains(t, status.String(), "catalog ok=40 failed=0 streams=40 | payments degraded=40 failed=0 breaker=open")
	require.NotNil(t, mfs, "/metrics scraped")
	value := func(name string, labels ...string) float64 {
		t.Helper()
		v, err := exposition.Value(mfs, name, labels...)
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, 5.0, value("resilience_retry_calls_total", "name", "catalog", "kind", "successful_with_retry"))
	assert.Equal(t, 75.0, value("resilience_retry_calls_total", "name", "catalog", "kind", "successful_without_retry"))
	assert.Equal(t, 5.0, value("resilience_retry_errors_total", "name", "catalog", "class", "grpc_unavailable"))
	assert.Equal(t, 1.0, value("resilience_circuitbreaker_state", "name", "catalog", "state", "closed"))
	assert.Equal(t, 1.0, value("resilience_circuitbreaker_state", "name", "payments", "state", "open"))
	assert.Equal(t, 1.0, value("resilience_circuitbreaker_transitions_total", "name", "payments", "from", "closed", "to", "open"))
	assert.GreaterOrEqual(t, value("resilience_fallback_calls_total", "name", "payments", "cause", "circuit_open"), 1.0)
	assert.GreaterOrEqual(t, value("resilience_retry_errors_total", "name", "payments", "class", "grpc_unavailable"), 1.0)

	// The retry log: JSON lines naming the full method, with the round's correlation id.
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	lines := 0
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
		lines++
		assert.Contains(t, []any{"catalog", "payments"}, rec["name"])
		assert.Regexp(t, `^order-\d{5}$`, rec["correlation_id"])
		assert.Regexp(t, `^/grpc\.testing\.TestService/`, rec["endpoint"])
	}
	assert.Positive(t, lines)
}

func TestParseArgsExitCodes(t *testing.T) {
	exampletest.TestExitCodes(t, "grpcclient", "go run ./examples/grpcclient [flags]",
		func(args []string, stdout, stderr io.Writer) int {
			_, code := parseArgs(args, stdout, stderr)
			return code
		},
		exampletest.ExitCase{Args: []string{"-requests", "-1"}, Stderr: "-requests -1: must not be negative"})
}
