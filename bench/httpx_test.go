package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"

	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
)

// The httpx benchmarks measure one GET on loopback (a small 200 response, read to the end and
// closed, keep-alive) through a plain http.Transport, through httpx.Transport over the same kind
// of transport with the full pipeline (retry, breaker, bulkhead, timeout — the configuration of
// BenchmarkPipelineSuccess) and with its default pipeline (httpx_default: retry and breaker), and
// through failsafe-go's failsafehttp with the same four policies. Every row runs with the same
// kind of background scrape (see idleScrape).
// BenchmarkHTTPXOverheadRatio interleaves plain and httpx requests in one loop so that both see
// the same machine load, and reports their ratio.

func loopbackServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func plainTransport(b *testing.B) *http.Transport {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return tr
}

func httpxTransport(b *testing.B) *httpx.Transport {
	tr, err := httpx.NewTransport(plainTransport(b), httpx.WithRegistry(scrapedRegistry(b)),
		httpx.WithPipeline(benchPipelineConfig(breaker.Config{})))
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// httpxDefaultTransport is httpx.NewTransport with its default pipeline (httpx.DefaultPipeline:
// the default retry and circuit breaker, no timeout layer).
func httpxDefaultTransport(b *testing.B) http.RoundTripper {
	tr, err := httpx.NewTransport(plainTransport(b), httpx.WithRegistry(scrapedRegistry(b)))
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

func failsafeTransport(b *testing.B) http.RoundTripper {
	rp := retrypolicy.NewBuilder[*http.Response]().WithMaxAttempts(3).
		WithBackoff(100*time.Millisecond, 10*time.Second).WithJitterFactor(0.5).Build()
	cb := fscircuitbreaker.NewBuilder[*http.Response]().WithFailureThresholdRatio(50, 100).WithDelay(30 * time.Second).Build()
	return failsafehttp.NewRoundTripper(plainTransport(b), rp, cb,
		fsbulkhead.New[*http.Response](bulkheadBenchPermits), fstimeout.New[*http.Response](time.Second))
}

// roundTrip sends one GET through rt and reads and closes the response.
func roundTrip(b *testing.B, rt http.RoundTripper, url string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// idleScrape runs the background scrape that an httpx transport's registry has — of a registry
// holding a dependency with httpx's default pipeline, never called — so that the plain and
// failsafehttp rows carry the same background work: allocs/op is process-wide, and a scrape's
// allocations (about 200, every 10 ms) land on however many requests ran meanwhile, more on a
// loaded machine. (The full-pipeline httpx row scrapes two primitives more than this.)
func idleScrape(b *testing.B) {
	if _, err := scrapedRegistry(b).Pipeline("127.0.0.1", httpx.DefaultPipeline()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHTTPXOverhead reports, next to the wall ns/op, the process's CPU time per request
// (cpu-ns/op: client, server and background scrape), which a loaded machine inflates less.
func BenchmarkHTTPXOverhead(b *testing.B) {
	url := loopbackServer(b).URL + "/v1/items"
	for _, c := range []struct {
		name string
		rt   func(*testing.B) http.RoundTripper
	}{
		{"plain", func(b *testing.B) http.RoundTripper { idleScrape(b); return plainTransport(b) }},
		{"httpx", func(b *testing.B) http.RoundTripper { return httpxTransport(b) }},
		{"httpx_default", httpxDefaultTransport},
		{"failsafehttp", func(b *testing.B) http.RoundTripper { idleScrape(b); return failsafeTransport(b) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			rt := c.rt(b)
			roundTrip(b, rt, url) // connect outside the measurement
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				roundTrip(b, rt, url)
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

func BenchmarkHTTPXOverheadRatio(b *testing.B) {
	url := loopbackServer(b).URL + "/v1/items"
	plain, instrumented := plainTransport(b), httpxTransport(b)
	roundTrip(b, plain, url)
	roundTrip(b, instrumented, url)
	var plainNs, httpxNs time.Duration
	for b.Loop() {
		t0 := time.Now()
		roundTrip(b, plain, url)
		t1 := time.Now()
		roundTrip(b, instrumented, url)
		plainNs += t1.Sub(t0)
		httpxNs += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(plainNs)/n, "plain-ns/req")
	b.ReportMetric(float64(httpxNs)/n, "httpx-ns/req")
	b.ReportMetric(float64(httpxNs)/float64(plainNs), "httpx/plain")
}
