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
	assert.Equal(t, "127.0.0.1:9465", o.listen)
	assert.Zero(t, o.duration)
	o, err = parseFlags([]string{"-listen", "127.0.0.1:0", "-duration", "3s", "-retry-after", "0"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, o.duration)
	_, err = parseFlags([]string{"-duration", "-1s"}, io.Discard)
	require.ErrorContains(t, err, "-duration -1s")
	_, err = parseFlags([]string{"-bogus"}, io.Discard)
	require.Error(t, err)
}

func TestRunRetriesAndServesMetrics(t *testing.T) {
	var logs, status exampletest.SyncBuffer
	urls := make(chan string, 1)
	o := options{listen: "127.0.0.1:0", duration: 20 * time.Second, retryAfter: 0, ready: func(u string) { urls <- u }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, &logs, &status) }()
	metricsURL := <-urls

	// Wait for the first call that succeeded after a retry.
	logs.WaitFor(t, `"outcome":"succeeded"`, 10*time.Second)

	resp, err := http.Get(metricsURL)
	require.NoError(t, err)
	mfs, err := exposition.Parse(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	value := func(name string, labels ...string) float64 {
		t.Helper()
		v, err := exposition.Value(mfs, name, append([]string{"name", "flaky-api"}, labels...)...)
		require.NoError(t, err)
		return v
	}
	// Later calls may already have run: every count is at least one.
	assert.GreaterOrEqual(t, value("resilience_retry_calls_total", "kind", "successful_with_retry"), 1.0)
	assert.GreaterOrEqual(t, value("resilience_retry_errors_total", "class", "http_5xx"), 1.0)
	assert.GreaterOrEqual(t, value("resilience_retry_backoff_seconds", "source", "retry_after"), 1.0, "delays waited as Retry-After said")
	assert.Zero(t, value("resilience_retry_calls_total", "kind", "failed_with_retry"))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("run did not stop after cancel")
	}

	// The log lines are JSON with the retry schema, one logical call per correlation id.
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	var first map[string]any
	require.True(t, sc.Scan())
	require.NoError(t, json.Unmarshal(sc.Bytes(), &first))
	assert.Equal(t, "retrying", first["outcome"])
	assert.Equal(t, "retry_after", first["delay_source"])
	assert.Equal(t, float64(503), first["http_status"])
	assert.Equal(t, "quote-0001", first["correlation_id"])
	assert.True(t, strings.HasPrefix(first["endpoint"].(string), "GET 127.0.0.1:"))
	assert.Contains(t, status.String(), "call 1: 200 OK")
}

func TestParseArgsExitCodes(t *testing.T) {
	exampletest.TestExitCodes(t, "retry", "go run ./examples/retry [flags]",
		func(args []string, stdout, stderr io.Writer) int {
			_, code := parseArgs(args, stdout, stderr)
			return code
		},
		exampletest.ExitCase{Args: []string{"-duration", "-1s"}, Stderr: "-duration -1s: must not be negative"},
		exampletest.ExitCase{Args: []string{"-retry-after", "-2"}, Stderr: "-retry-after -2: must not be negative"},
		exampletest.ExitCase{Args: []string{"extra"}, Stderr: `unexpected arguments ["extra"]`})
}
