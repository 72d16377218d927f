package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const expo = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 183
# HELP process_open_fds Number of open file descriptors.
# TYPE process_open_fds gauge
process_open_fds 41
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 4.3515904e+07
# TYPE resilience_retry_calls_total counter
resilience_retry_calls_total{name="payments",outcome="success"} 1027
resilience_retry_calls_total{name="payments",outcome="gave_up"} 12

go_goroutines_total_lookalike 7
`

func TestParseExposition(t *testing.T) {
	e, err := parseExposition([]byte(expo))
	require.NoError(t, err)
	assert.Equal(t, len(expo), e.bytes)
	assert.Equal(t, 6, e.series, "sample lines only: no comments, no blank lines")
	assert.Equal(t, map[string]float64{goGoroutines: 183, processFDs: 41, processRSS: 43515904}, e.gauges)

	_, err = parseExposition([]byte("resilience_x 1\n"))
	assert.ErrorContains(t, err, "no go_goroutines")
	_, err = parseExposition([]byte("go_goroutines many\n"))
	assert.ErrorContains(t, err, `go_goroutines "many"`)
	e, err = parseExposition([]byte("go_goroutines 12 1700000000000\n"))
	require.NoError(t, err, "a timestamp is allowed")
	assert.Equal(t, 12.0, e.gauges[goGoroutines])
}

func TestParseVmRSS(t *testing.T) {
	rss, err := parseVmRSS([]byte("Name:\tstormwatch\nVmHWM:\t  50000 kB\nVmRSS:\t   42496 kB\nThreads:\t9\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(42496*1024), rss)
	_, err = parseVmRSS([]byte("Name:\tzombie\n"))
	assert.ErrorContains(t, err, "no VmRSS")
	_, err = parseVmRSS([]byte("VmRSS:\t 12 MB\n"))
	assert.ErrorContains(t, err, "unexpected VmRSS line")
}

// TestMeasure samples this test process, serving a fixed /metrics on loopback.
func TestMeasure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(expo))
	}))
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()
	s := measure(context.Background(), client, srv.URL+"/metrics", os.Getpid())
	require.NoError(t, s.Err)
	assert.Equal(t, 183, s.Goroutines)
	assert.Equal(t, len(expo), s.Bytes)
	assert.Equal(t, 6, s.Series)
	if runtime.GOOS == "linux" {
		assert.NotEqual(t, uint64(43515904), s.RSS, "the kernel's figure, not the scrape's")
		assert.Positive(t, s.RSS)
		assert.Greater(t, s.FDs, 2)
	} else {
		assert.Equal(t, uint64(43515904), s.RSS)
		assert.Equal(t, 41, s.FDs)
	}

	srv.Config.Handler = http.NotFoundHandler()
	s = measure(context.Background(), client, srv.URL+"/metrics", os.Getpid())
	assert.ErrorContains(t, s.Err, "404")
}

func TestOutputFindsTheURLAndTheCleanStop(t *testing.T) {
	o := newOutput()
	_, _ = o.Write([]byte("stormwatch demo: scenario outage, speed ×1 — metrics on http://127.0.0.1:40"))
	select {
	case <-o.url:
		t.Fatal("a partial line is not read")
	default:
	}
	_, _ = o.Write([]byte("123/metrics, retry log in /tmp/x/retry.log\nscenario outage: …\n"))
	assert.Equal(t, "http://127.0.0.1:40123/metrics", <-o.url)
	assert.False(t, o.stoppedCleanly())
	for i := range 10 {
		_, _ = o.Write([]byte{byte('a' + i), '\n'})
	}
	_, _ = o.Write([]byte("stormwatch demo: interrupted, stopped cleanly\n"))
	assert.True(t, o.stoppedCleanly())
	assert.Equal(t, []string{"f", "g", "h", "i", "j", "stormwatch demo: interrupted, stopped cleanly"}, o.last())
}

func TestBadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"-duration", "30s", "-every", "5s"}, // 10s a third: 2 samples
		{"-every", "0s"},
		{"-outage", "-1m"},
		{"-bogus"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(args, &out, &errOut), "%v", args)
		assert.NotEmpty(t, errOut.String(), "%v", args)
		assert.Empty(t, out.String(), "%v: nothing started", args)
	}
}

func TestAMissingBinaryFails(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, run([]string{"-stormwatch", "/no/such/stormwatch", "-duration", "1m", "-every", "1s"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "starting the demo")
}
