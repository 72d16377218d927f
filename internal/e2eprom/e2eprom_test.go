package e2eprom

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// With E2EPROM_FAKE_SERVER set, the test binary is a fake server for TestSetJobs: it prints
// "started", creates the file "hup" on SIGHUP and exits 0 on SIGTERM. (A shell script cannot be
// the fake: a shell cannot trap a signal its parent ignores, as under nohup; Go re-enables it.)
func TestMain(m *testing.M) {
	if os.Getenv("E2EPROM_FAKE_SERVER") != "" {
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM)
		fmt.Println("started")
		for sig := range sigs {
			if sig == syscall.SIGTERM {
				os.Exit(0)
			}
			_ = os.WriteFile("hup", nil, 0o644)
		}
	}
	goleak.VerifyTestMain(m)
}

func TestConfig(t *testing.T) {
	got := Config("/tmp/rules.yaml", Job{Name: "a", Target: "127.0.0.1:1"}, Job{Name: "b", Target: "127.0.0.1:2"})
	assert.Equal(t, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
  scrape_native_histograms: true
rule_files:
  - "/tmp/rules.yaml"
scrape_configs:
  - job_name: "a"
    static_configs:
      - targets: ["127.0.0.1:1"]
  - job_name: "b"
    static_configs:
      - targets: ["127.0.0.1:2"]
`, got)
}

func shell(t *testing.T) string {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	return sh
}

func TestStartStopTail(t *testing.T) {
	sh := shell(t)
	tests := []struct {
		name    string
		script  string
		signal  syscall.Signal
		wantErr bool
	}{
		{"exits 0 on its stop signal", `trap 'echo bye; exit 0' INT; echo one; echo two >&2; while :; do sleep 0.05; done`, syscall.SIGINT, false},
		{"killed by SIGTERM", `echo one; echo two >&2; exec sleep 30`, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Command{Name: "sh", Dir: t.TempDir(), Bin: sh, Args: []string{"-c", tc.script}, StopGrace: 5 * time.Second}
			if tc.signal != 0 {
				c.StopSignal = tc.signal
			}
			p := Start(t, c)
			require.Eventually(t, func() bool { return p.Tail(5) == "one\ntwo" || p.Tail(5) == "two\none" },
				5*time.Second, 10*time.Millisecond, p.Tail(5))
			exited, _ := p.exited()
			require.False(t, exited)
			err := p.Stop(t)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				assert.Contains(t, p.Tail(1), "bye")
			}
			assert.NoError(t, p.Stop(t), "a second Stop reports nothing")
		})
	}
}

func TestStartLines(t *testing.T) {
	lines := make(chan string, 4)
	p := Start(t, Command{Name: "sh", Dir: t.TempDir(), Bin: shell(t), Lines: lines,
		Args: []string{"-c", "echo out; echo err >&2"}})
	select {
	case l := <-lines:
		assert.Equal(t, "out", l)
	case <-time.After(5 * time.Second):
		t.Fatal("no line from stdout")
	}
	require.Eventually(t, func() bool { exited, _ := p.exited(); return exited }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "err", p.Tail(5), "stderr goes to the log, stdout does not")
	assert.NoError(t, p.Stop(t))
}

func TestAPI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/-/ready":
		case r.URL.Path == "/api/v1/alerts":
			fmt.Fprint(w, `{"status":"success","data":{"alerts":[{"labels":{"alertname":"X"},"state":"firing"}]}}`)
		case r.URL.Path == "/api/v1/query" && r.URL.Query().Get("query") == `up{job="a"}`:
			fmt.Fprint(w, `{"status":"success","data":{"result":[{"value":[1,"2.5"]}]}}`)
		case r.URL.Path == "/api/v1/query":
			fmt.Fprint(w, `{"status":"success","data":{"result":[]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	client := NewClient(5 * time.Second)
	WaitHTTP(t, client, srv.URL+"/-/ready", time.Now().Add(5*time.Second))
	api := API{URL: srv.URL, Client: client}
	assert.Equal(t, []Alert{{Labels: map[string]string{"alertname": "X"}, State: "firing"}}, api.Alerts(t))
	v, ok := api.Query(t, `up{job="a"}`)
	assert.True(t, ok)
	assert.Equal(t, 2.5, v)
	_, ok = api.Query(t, `up{job="b"}`)
	assert.False(t, ok)
}

func TestFreePortAndModuleRoot(t *testing.T) {
	assert.Positive(t, FreePort(t))
	assert.FileExists(t, ModuleRoot(t)+"/go.mod")
}

// fakeAPI serves /-/ready, /api/v1/targets (the jobs listed in up, healthy) and /metrics.
func fakeAPI(t *testing.T, up func() []string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/-/ready", "/metrics":
		case "/api/v1/targets":
			var ts []string
			for _, j := range up() {
				ts = append(ts, fmt.Sprintf(`{"labels":{"job":%q},"health":"up"}`, j))
			}
			ts = append(ts, `{"labels":{"job":"down"},"health":"down"}`)
			fmt.Fprintf(w, `{"status":"success","data":{"activeTargets":[%s]}}`, strings.Join(ts, ","))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTargetsUp(t *testing.T) {
	srv := fakeAPI(t, func() []string { return []string{"a"} })
	api := API{URL: srv.URL, Client: NewClient(5 * time.Second)}
	assert.Equal(t, map[string]bool{"a": true, "down": false}, api.TargetsUp(t))
}

// TestSetJobs: the configuration is rewritten, the server gets SIGHUP, and SetJobs returns once
// the new jobs are up.
func TestSetJobs(t *testing.T) {
	dir := t.TempDir()
	hup := filepath.Join(dir, "hup")
	t.Setenv("E2EPROM_FAKE_SERVER", "1")
	self, err := os.Executable()
	require.NoError(t, err)
	p := Start(t, Command{Name: "fake-server", Dir: dir, Bin: self, StopGrace: 5 * time.Second})
	require.Eventually(t, func() bool { return p.Tail(1) == "started" }, 5*time.Second, 10*time.Millisecond)
	srv := fakeAPI(t, func() []string {
		if _, err := os.Stat(hup); err == nil {
			return []string{"a", "b"}
		}
		return nil
	})
	api := API{URL: srv.URL, Client: NewClient(5 * time.Second)}
	s := Server{Dir: dir, RuleFile: "/r.yaml", Jobs: []Job{{Name: "a", Target: "127.0.0.1:1"}, {Name: "b", Target: "127.0.0.1:2"}}}
	SetJobs(t, p, api, s, time.Now().Add(10*time.Second))
	cfg, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	require.NoError(t, err)
	assert.Equal(t, Config("/r.yaml", s.Jobs...), string(cfg))
	assert.NoError(t, p.Stop(t))
}

// TestStartDemo: the demo's address is read from the line it prints; it is stopped by SIGINT.
func TestStartDemo(t *testing.T) {
	srv := fakeAPI(t, func() []string { return nil })
	addr := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	fakeDemo := filepath.Join(dir, "stormwatch")
	require.NoError(t, os.WriteFile(fakeDemo, []byte("#!/bin/sh\n"+
		"echo \"$@\" > args\n"+
		"trap 'echo stopped; exit 0' INT\n"+
		"echo 'stormwatch demo: scenario outage, speed ×1 — metrics on http://"+addr+"/metrics, retry log on stderr'\n"+
		"while :; do sleep 0.05; done\n"), 0o755))
	shell(t)
	d := StartDemo(t, fakeDemo, dir, DemoSpec{Job: "demo-outage", Args: []string{"--scenario", "outage"}},
		NewClient(5*time.Second), time.Now().Add(10*time.Second))
	assert.Equal(t, addr, d.Addr)
	assert.Equal(t, "demo-outage", d.Job)
	assert.False(t, d.Started.IsZero())
	assert.NoError(t, d.Stop(t), "exit 0 on SIGINT")
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, err)
	assert.Equal(t, "demo --listen 127.0.0.1:0 --log-file - --log-format json --scenario outage\n", string(args))
}
