package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/internal/exposition"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for concurrent writers; waitFor blocks until it contains a
// string.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed and replaced by every Write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// waitFor waits until the buffer contains want, or fails the test after timeout (a bound on a
// failure, not a measure).
func (s *syncBuffer) waitFor(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		found := strings.Contains(s.b.String(), want)
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		if found {
			return
		}
		select {
		case <-written:
		case <-deadline:
			t.Fatalf("%q not written within %s; got:\n%s", want, timeout, s.String())
		}
	}
}

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
	var logs, status syncBuffer
	urls := make(chan string, 1)
	o := options{listen: "127.0.0.1:0", duration: 20 * time.Second, retryAfter: 0, ready: func(u string) { urls <- u }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, &logs, &status) }()
	metricsURL := <-urls

	// Wait for the first call that succeeded after a retry.
	logs.waitFor(t, `"outcome":"succeeded"`, 10*time.Second)

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

// TestParseArgsExitCodes: a bad value or flag prints one line on stderr and exits 2; -h prints
// the usage on stdout and exits 0.
func TestParseArgsExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"-duration", "-1s"}, 2, "", "retry: -duration -1s: must not be negative (run with -h for usage)\n"},
		{[]string{"-bogus"}, 2, "", "retry: flag provided but not defined: -bogus (run with -h for usage)\n"},
		{[]string{"-duration"}, 2, "", "retry: flag needs an argument: -duration (run with -h for usage)\n"},
		{[]string{"-h"}, 0, "usage: go run ./examples/retry [flags]\n", ""},
		{[]string{"--help"}, 0, "usage: go run ./examples/retry [flags]\n", ""},
	} {
		var stdout, stderr strings.Builder
		_, code := parseArgs(tc.args, &stdout, &stderr)
		assert.Equal(t, tc.code, code, tc.args)
		assert.Equal(t, tc.stderr, stderr.String(), tc.args)
		if tc.stdout == "" {
			assert.Empty(t, stdout.String(), tc.args)
		} else {
			assert.True(t, strings.HasPrefix(stdout.String(), tc.stdout), "%v: %s", tc.args, stdout.String())
			assert.Contains(t, stdout.String(), "-duration", tc.args)
		}
	}
	_, code := parseArgs(nil, io.Discard, io.Discard)
	assert.Equal(t, -1, code, "no flags: run")
}
