//go:build e2e

package otelx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/collector/internal/history"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/rules"
)

// e2eBudget bounds the whole test; make e2e's go test -timeout is a little longer.
const e2eBudget = 150 * time.Second

// The OTLP sources: service.name becomes the job label, service.instance.id the instance.
const (
	jobScrapeDefault = "scrape-default" // the Prometheus collector, scraped
	jobScrapeFull    = "scrape-full"    // the Prometheus collector in full detail, scraped
	jobOTLPDefault   = "otlp-default"   // the bridge, pushed over OTLP
	jobOTLPFull      = "otlp-full"      // the bridge in full detail, pushed over OTLP
	jobCheckout      = "checkout"       // a live workload, pushed over OTLP only
	instance         = "pod-1"
)

// TestOTLPIngestionOnRealPrometheus is the end-to-end check of the bridge: a real Prometheus
// 3.16 on 127.0.0.1 with its OTLP receiver enabled (--web.enable-otlp-receiver) and its default
// OTLP configuration receives the OTel SDK's pushes (otlpmetrichttp, every 500ms).
//
//  1. One registry, after a scripted history that runs every path, is exported both ways: by
//     the Prometheus collector (scraped) and by the bridge (pushed), each by default and in
//     full detail. Every series Prometheus stores from the pushes has the name and labels
//     (job and instance aside) of one it stores from the scrapes, and the other way round, with
//     the same values.
//  2. A live workload on the wall clock — a dependency whose breaker trips and stays open
//     while calls keep arriving, and one whose calls each need a retry — pushed over OTLP only,
//     fires the generated CircuitBreakerStuckOpen and RetryRateHigh alerts (with short
//     durations), labelled with the job and instance Prometheus derives from the resource's
//     service.name and service.instance.id.
func TestOTLPIngestionOnRealPrometheus(t *testing.T) {
	deadline := time.Now().Add(e2eBudget)
	bin, err := filepath.Abs(filepath.Join("..", "..", "bin", "prometheus"))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/prometheus missing (%v): run scripts/install-tools.sh prometheus", err)
	}
	dir := t.TempDir()

	// The generated rules, with short durations: StuckOpen after 15s not closed, for 5s;
	// RetryRateHigh over a 1m window, for 5s.
	stuckFor, rateFor, stuckAfter := 5*time.Second, 5*time.Second, 15.0
	ruleYAML, err := rules.Generate(rules.Config{RateWindow: time.Minute, Alerts: map[string]rules.AlertConfig{
		rules.AlertStuckOpen:     {Threshold: &stuckAfter, For: &stuckFor},
		rules.AlertRetryRateHigh: {For: &rateFor},
	}})
	require.NoError(t, err)
	ruleFile := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(ruleFile, ruleYAML, 0o644))

	// 1. The scripted history, on a fake clock, exported both ways.
	h := history.New(t, history.WithMoreNames())
	h.EveryPath()
	mux := http.NewServeMux()
	for path, opts := range map[string][]collector.Option{"/default": nil, "/full": {collector.WithFullDetail()}} {
		c, err := collector.New(h.Registry(), opts...)
		require.NoError(t, err)
		pr := prometheus.NewPedanticRegistry()
		require.NoError(t, pr.Register(c))
		mux.Handle(path, promhttp.HandlerFor(pr, promhttp.HandlerOpts{}))
	}
	scrape := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(scrape.Close)
	target := strings.TrimPrefix(scrape.URL, "http://")

	prom := startPrometheus(t, bin, dir, ruleFile, target, deadline)
	otlpURL := prom.url + "/api/v1/otlp/v1/metrics"
	push(t, otlpURL, jobOTLPDefault, h.Registry())
	push(t, otlpURL, jobOTLPFull, h.Registry(), WithFullDetail())

	// 2. The live workload, pushed as job checkout.
	live, err := instrument.NewRegistry()
	require.NoError(t, err)
	workloadStart := time.Now()
	stop := runWorkload(t, live)
	defer stop()
	push(t, otlpURL, jobCheckout, live)

	// (1) Same series, same values, once every source has been stored for a few seconds.
	compare := func(otlpJob, scrapeJob string) {
		var otlp, scraped map[string]stored
		for {
			otlp, scraped = prom.series(t, otlpJob), prom.series(t, scrapeJob)
			if len(otlp) > 0 && len(otlp) == len(scraped) {
				break
			}
			require.True(t, time.Now().Before(deadline), "%s: %d series, %s: %d", otlpJob, len(otlp), scrapeJob, len(scraped))
			time.Sleep(500 * time.Millisecond) // polling a real server
		}
		require.Equal(t, slices.Sorted(maps.Keys(scraped)), slices.Sorted(maps.Keys(otlp)),
			"series names and labels of %s and %s", otlpJob, scrapeJob)
		for k, s := range scraped {
			o := otlp[k]
			assert.Equal(t, s.instance, instance, "%s: instance", k)
			assert.Equal(t, o.instance, instance, "%s: instance from service.instance.id", k)
			if s.hist {
				assert.True(t, o.hist, "%s: a native histogram both ways", k)
				assert.Equal(t, s.count, o.count, "%s: count", k)
				assert.InDelta(t, s.sum, o.sum, 1e-9, "%s: sum", k)
				continue
			}
			if math.IsNaN(s.value) {
				assert.True(t, math.IsNaN(o.value), "%s: NaN", k)
			} else {
				assert.Equal(t, s.value, o.value, k)
			}
		}
		t.Logf("%s and %s: the same %d series", otlpJob, scrapeJob, len(otlp))
	}
	compare(jobOTLPDefault, jobScrapeDefault)
	compare(jobOTLPFull, jobScrapeFull)

	// (2) The alerts fire from the pushed data.
	fired := map[string]time.Duration{}
	for len(fired) < 2 {
		require.True(t, time.Now().Before(deadline), "alerts fired: %v", fired)
		for _, a := range prom.alerts(t) {
			if a.State != "firing" || a.Labels["job"] != jobCheckout {
				continue
			}
			name := a.Labels["alertname"]
			switch {
			case name == rules.AlertStuckOpen && a.Labels["name"] == "payments":
				assert.Equal(t, instance, a.Labels["instance"], "the per-process alert keeps the instance")
			case name == rules.AlertRetryRateHigh && a.Labels["name"] == "search":
			default:
				continue
			}
			if _, ok := fired[name]; !ok {
				fired[name] = time.Since(workloadStart)
				t.Logf("%s firing %s after the workload began: %v", name, fired[name].Round(100*time.Millisecond), a.Labels)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Every generated rule evaluates without error on the pushed data.
	var rs struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name, Health, LastError string
				}
			}
		}
	}
	prom.getJSON(t, "/api/v1/rules", &rs)
	for _, g := range rs.Data.Groups {
		for _, r := range g.Rules {
			assert.NotEqual(t, "err", r.Health, "%s: %s", r.Name, r.LastError)
		}
	}
	stop()
}

// push exports reg through a bridge and the OTel SDK's OTLP/HTTP exporter every 500ms, as
// service.name job and service.instance.id instance, until the test ends.
func push(t *testing.T, endpoint, job string, reg *instrument.Registry, opts ...Option) {
	t.Helper()
	b, err := New(reg, opts...)
	require.NoError(t, err)
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	exp, err := otlpmetrichttp.New(context.Background(), otlpmetrichttp.WithEndpointURL(endpoint), otlpmetrichttp.WithHTTPClient(httpClient))
	require.NoError(t, err)
	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(500*time.Millisecond), sdkmetric.WithProducer(b))
	res := resource.NewSchemaless(attribute.String("service.name", job), attribute.String("service.instance.id", instance))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	_, err = b.Register(mp)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mp.Shutdown(ctx)
	})
}

// runWorkload calls two dependencies of reg every 50ms on the wall clock until stop: payments,
// whose breaker trips on its failures and stays open (rejecting the calls that keep coming),
// and search, whose first attempt of every call fails and whose retry succeeds.
func runWorkload(t *testing.T, reg *instrument.Registry) (stop func()) {
	t.Helper()
	payments, err := reg.Breaker("payments", breaker.Config{WindowSize: 10, MinCalls: 5, OpenDuration: 10 * time.Minute, DisableJitter: true})
	require.NoError(t, err)
	search, err := reg.Retry("search", retry.Config{MaxAttempts: 3, Backoff: retry.Backoff{Strategy: retry.None},
		DisableBudget: true})
	require.NoError(t, err)
	down := errors.New("payments: connection refused")
	flaky := errors.New("search: 503") // any other error: class error, retryable
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_ = payments.Do(ctx, func(context.Context) error { return down })
			n := 0
			_ = search.Do(ctx, func(context.Context) error {
				n++
				if n == 1 {
					return flaky
				}
				return nil
			})
		}
	}()
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
}

// prometheusServer is a Prometheus child process and its API.
type prometheusServer struct {
	url    string
	cmd    *exec.Cmd
	client *http.Client
}

// startPrometheus starts bin on a free port of 127.0.0.1 with the OTLP receiver on, scraping
// target's /default and /full every second and evaluating ruleFile, and waits until it is
// ready. The OTLP section of the configuration is left out: the defaults are under test.
func startPrometheus(t *testing.T, bin, dir, ruleFile, target string, deadline time.Time) *prometheusServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listen := l.Addr().String()
	require.NoError(t, l.Close())
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
  scrape_native_histograms: true
rule_files: [%q]
scrape_configs:
  - job_name: %q
    metrics_path: /default
    static_configs: [{targets: [%q], labels: {instance: %q}}]
  - job_name: %q
    metrics_path: /full
    static_configs: [{targets: [%q], labels: {instance: %q}}]
`, ruleFile, jobScrapeDefault, target, instance, jobScrapeFull, target, instance)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(cfg), 0o644))
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	defer logFile.Close()
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen, "--web.enable-otlp-receiver", "--log.level=warn")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	p := &prometheusServer{url: "http://" + listen, cmd: cmd, client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", log)
		}
	})
	for {
		resp, err := p.client.Get(p.url + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited before it was ready: %v", err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "prometheus not ready")
		time.Sleep(200 * time.Millisecond) // polling a real server
	}
}

func (p *prometheusServer) getJSON(t *testing.T, path string, into any) {
	t.Helper()
	resp, err := p.client.Get(p.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
	require.NoError(t, json.Unmarshal(body, into), string(body))
}

// stored is a series as Prometheus holds it: its latest value, or its latest native
// histogram's count and sum, and its instance label.
type stored struct {
	instance   string
	value      float64
	hist       bool
	count, sum float64
}

// series returns job's resilience_* series with a sample in the last 3 seconds (a series that
// ended in a scrape has a staleness marker, which a range selector skips), keyed by name and
// labels without job and instance.
func (p *prometheusServer) series(t *testing.T, job string) map[string]stored {
	t.Helper()
	var r struct {
		Status string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric     map[string]string
				Values     [][2]any
				Histograms [][2]json.RawMessage
			}
		}
	}
	q := fmt.Sprintf(`{job=%q, __name__=~"resilience_.+"}[3s]`, job)
	p.getJSON(t, "/api/v1/query?query="+url.QueryEscape(q), &r)
	require.Equal(t, "matrix", r.Data.ResultType)
	out := map[string]stored{}
	for _, s := range r.Data.Result {
		var st stored
		st.instance = s.Metric["instance"]
		labels := map[string]string{}
		for k, v := range s.Metric {
			if k != "job" && k != "instance" && k != "__name__" {
				labels[k] = v
			}
		}
		key := seriesKey(s.Metric["__name__"], labels)
		switch {
		case len(s.Histograms) > 0:
			var h struct{ Count, Sum string }
			require.NoError(t, json.Unmarshal(s.Histograms[len(s.Histograms)-1][1], &h))
			st.hist = true
			st.count, _ = strconv.ParseFloat(h.Count, 64)
			st.sum, _ = strconv.ParseFloat(h.Sum, 64)
		case len(s.Values) > 0:
			st.value, _ = strconv.ParseFloat(s.Values[len(s.Values)-1][1].(string), 64)
		default:
			continue
		}
		require.NotContains(t, out, key)
		out[key] = st
	}
	return out
}

type alert struct {
	Labels map[string]string
	State  string
}

func (p *prometheusServer) alerts(t *testing.T) []alert {
	t.Helper()
	var r struct{ Data struct{ Alerts []alert } }
	p.getJSON(t, "/api/v1/alerts", &r)
	return r.Data.Alerts
}
