//go:build e2e

package victoriametrics

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var client = e2eprom.NewClient(5 * time.Second)

// vmMustFire are the alerts the outage scenario fires under the demo profile.
var vmMustFire = []string{"CircuitBreakerStuckOpen", "RetryRateHigh", "FallbackSustained"}

// TestDemoOnVictoriaMetricsAndVmalert runs the generated rules on the other engine users run
// them on: VictoriaMetrics single-node scrapes `stormwatch demo --scenario outage` (speed 1)
// every second, and vmalert evaluates `stormwatch generate rules --target victoriametrics` of
// the demo profile every second against it, writing the recorded series back. The outage
// must fire CircuitBreakerStuckOpen, RetryRateHigh and FallbackSustained for the demo's job,
// and vmalert must send them to its notifier (a stub Alertmanager here). Needs bin/vmalert and
// bin/victoria-metrics (scripts/install-tools.sh victoriametrics).
func TestDemoOnVictoriaMetricsAndVmalert(t *testing.T) {
	root := e2eprom.ModuleRoot(t)
	vmBin, vmalertBin := filepath.Join(root, "bin", "victoria-metrics"), filepath.Join(root, "bin", "vmalert")
	for _, b := range []string{vmBin, vmalertBin} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("%s is absent: run scripts/install-tools.sh victoriametrics (make e2e does)", b)
		}
	}
	dir := t.TempDir()
	stormwatch := e2eprom.Build(t, root, dir, "stormwatch", "./cmd/stormwatch")
	ruleFile := vmRules(t, stormwatch, dir)

	demo := e2eprom.StartDemo(t, stormwatch, dir, e2eprom.DemoSpec{Job: "outage", Args: []string{"--scenario", "outage", "--duration", "4m"}},
		client, time.Now().Add(30*time.Second))
	scrape := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: outage\n    static_configs:\n      - targets: [%q]\n", demo.Addr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scrape.yaml"), []byte(scrape), 0o644))

	vmAddr := fmt.Sprintf("127.0.0.1:%d", e2eprom.FreePort(t))
	vm := e2eprom.Start(t, e2eprom.Command{Name: "victoria-metrics", Dir: dir, Bin: vmBin, Args: []string{
		"-httpListenAddr=" + vmAddr, "-storageDataPath=" + filepath.Join(dir, "vm-data"),
		"-promscrape.config=" + filepath.Join(dir, "scrape.yaml"), "-retentionPeriod=1d",
		// Samples are queryable after 1s instead of 30s: the demo's incident lasts a minute.
		"-search.latencyOffset=1s", "-search.disableCache", "-selfScrapeInterval=0"}})
	e2eprom.WaitHTTP(t, client, "http://"+vmAddr+"/health", time.Now().Add(30*time.Second), vm)

	notified := stubAlertmanager(t)
	vmalertAddr := fmt.Sprintf("127.0.0.1:%d", e2eprom.FreePort(t))
	vmalert := e2eprom.Start(t, e2eprom.Command{Name: "vmalert", Dir: dir, Bin: vmalertBin, Args: []string{
		"-rule=" + ruleFile, "-httpListenAddr=" + vmalertAddr, "-evaluationInterval=1s",
		"-datasource.url=http://" + vmAddr, "-remoteWrite.url=http://" + vmAddr, "-remoteRead.url=http://" + vmAddr,
		"-notifier.url=" + notified.url}})
	e2eprom.WaitHTTP(t, client, "http://"+vmalertAddr+"/health", time.Now().Add(30*time.Second), vmalert)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*e2eprom.Process{vm, vmalert, demo.Process} {
				t.Logf("--- %s log (tail) ---\n%s", p.Name, p.Tail(20))
			}
		}
	})

	api := e2eprom.API{URL: "http://" + vmalertAddr, Client: client}
	fired := map[string]time.Duration{}
	end := time.Now().Add(3 * time.Minute)
	for len(fired) < len(vmMustFire) {
		require.True(t, time.Now().Before(end), "within 3m of the start only %v fired on vmalert", fired)
		for _, a := range api.Alerts(t) {
			n := a.Labels["alertname"]
			if a.State == "firing" && a.Labels["job"] == "outage" && slices.Contains(vmMustFire, n) {
				if _, ok := fired[n]; !ok {
					fired[n] = time.Since(demo.Started)
					t.Logf("t=%s: %s firing on vmalert (%v)", fired[n].Round(time.Second), n, a.Labels)
				}
			}
		}
		time.Sleep(time.Second) // polling a wall-clock scenario (e2e only)
	}
	// vmalert sends what fires to its notifiers.
	deadline := time.Now().Add(30 * time.Second)
	for !notified.sawAll(vmMustFire) {
		require.True(t, time.Now().Before(deadline), "vmalert did not notify all of %v: %s", vmMustFire, notified.body())
		time.Sleep(500 * time.Millisecond)
	}
}

// vmRules generates the demo profile's rules for vmalert and returns the file.
func vmRules(t *testing.T, stormwatch, dir string) string {
	t.Helper()
	profile, err := exec.Command(stormwatch, "demo", "--print-profile").Output()
	require.NoError(t, err, "stormwatch demo --print-profile")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "profile.yaml"), profile, 0o644))
	out, err := exec.Command(stormwatch, "generate", "rules", "-c", filepath.Join(dir, "profile.yaml"), "--target", "victoriametrics", "-o", filepath.Join(dir, "rules")).CombinedOutput()
	require.NoError(t, err, "stormwatch generate --target victoriametrics: %s", out)
	f := filepath.Join(dir, "rules", "stormwatch-rules.victoriametrics.yaml")
	require.FileExists(t, f)
	return f
}

// notifierStub is an Alertmanager stand-in that keeps what it is sent.
type notifierStub struct {
	url  string
	mu   sync.Mutex
	sent []byte
}

func stubAlertmanager(t *testing.T) *notifierStub {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	n := &notifierStub{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		n.mu.Lock()
		n.sent = append(n.sent, b...)
		n.mu.Unlock()
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return n
}

func (n *notifierStub) body() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return string(n.sent)
}

func (n *notifierStub) sawAll(names []string) bool {
	b := n.body()
	for _, name := range names {
		if !strings.Contains(b, `"alertname":"`+name+`"`) {
			return false
		}
	}
	return true
}
