package promrun

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The test binary doubles as a fake prometheus: started with PROMRUN_FAKE set, it serves
// /-/ready and /config (the configuration file as last loaded; SIGHUP reloads it) on
// --web.listen-address, and exits 0 on SIGTERM (or at once with status 3 when PROMRUN_FAKE is
// "fail").
func TestMain(m *testing.M) {
	switch os.Getenv("PROMRUN_FAKE") {
	case "":
		goleak.VerifyTestMain(m)
	case "fail":
		fmt.Println("fake prometheus: failing")
		os.Exit(3)
	default:
		os.Exit(fakePrometheus(os.Args[1:]))
	}
}

func fakePrometheus(args []string) int {
	var listen, configFile string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--web.listen-address="); ok {
			listen = v
		}
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			configFile = v
		}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	var config atomic.Pointer[string]
	load := func() {
		b, _ := os.ReadFile(configFile)
		s := string(b)
		config.Store(&s)
	}
	load()
	l, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/-/ready", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/config", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, *config.Load()) })
	go func() { _ = http.Serve(l, mux) }()
	fmt.Println("fake prometheus: ready on", listen)
	for sig := range sigs {
		if sig == syscall.SIGHUP {
			load()
			continue
		}
		return 0
	}
	return 0
}

func fake(t *testing.T, mode string) string {
	t.Helper()
	t.Setenv("PROMRUN_FAKE", mode) // inherited by the child
	bin, err := os.Executable()
	require.NoError(t, err)
	return bin
}

var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func TestConfigYAML(t *testing.T) {
	c := Config{RuleFiles: []string{"/tmp/x/rules.yaml"}, Jobs: []Job{{"demo-outage", "127.0.0.1:1"}, {"demo-steady", "127.0.0.1:2"}}}
	assert.Equal(t, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
  scrape_native_histograms: true
rule_files:
  - "/tmp/x/rules.yaml"
scrape_configs:
  - job_name: "demo-outage"
    static_configs:
      - targets: ["127.0.0.1:1"]
  - job_name: "demo-steady"
    static_configs:
      - targets: ["127.0.0.1:2"]
`, c.YAML())
	assert.Equal(t, "global:\n  scrape_interval: 1500ms\n  evaluation_interval: 1500ms\n  scrape_native_histograms: true\nscrape_configs: []\n",
		Config{Interval: 1500 * time.Millisecond}.YAML())
}

func TestStartReadyReloadStop(t *testing.T) {
	bin := fake(t, "serve")
	dir := t.TempDir()
	s, err := Start(Options{Bin: bin, Dir: dir, Listen: "127.0.0.1:0", Config: Config{Jobs: []Job{{"a", "127.0.0.1:1"}}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop(5 * time.Second) })
	assert.NotContains(t, s.URL, ":0", "port 0 is replaced by a free port")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Ready(ctx, client))
	assert.Contains(t, body(t, s.URL+"/config"), `job_name: "a"`)

	require.NoError(t, s.Reload(Config{Jobs: []Job{{"b", "127.0.0.1:2"}}}))
	require.Eventually(t, func() bool { return strings.Contains(body(t, s.URL+"/config"), `job_name: "b"`) },
		10*time.Second, 10*time.Millisecond, "the server reloads its configuration on SIGHUP")

	require.NoError(t, s.Stop(5*time.Second), "exit 0 on SIGTERM")
	<-s.Done()
	assert.NoError(t, s.Stop(time.Second), "a second Stop reports nothing")
	log, err := os.ReadFile(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "fake prometheus: ready on")
}

func TestReadyReportsAnEarlyExit(t *testing.T) {
	bin := fake(t, "fail")
	s, err := Start(Options{Bin: bin, Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	err = s.Ready(context.Background(), client)
	require.ErrorIs(t, err, ErrExited)
	assert.ErrorContains(t, err, "exit status 3")
}

func TestStartRefuses(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(Options{Bin: filepath.Join(dir, "nope"), Dir: dir, Listen: "127.0.0.1:0"})
	assert.Error(t, err)
	_, err = Start(Options{Bin: dir, Dir: dir, Listen: "127.0.0.1:0"})
	assert.ErrorContains(t, err, "not an executable")
	_, err = Start(Options{Bin: fake(t, "serve"), Dir: dir, Listen: "0.0.0.0:9090"})
	assert.ErrorContains(t, err, "not a loopback address")
}

func body(t *testing.T, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
