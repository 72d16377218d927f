package e2eprom

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ModuleRoot returns the directory of the nearest go.mod at or above the working directory
// (a test's working directory is its package directory).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the working directory")
		dir = parent
	}
}

// PrometheusBin returns root/bin/prometheus, failing the test when it is missing.
func PrometheusBin(t testing.TB, root string) string {
	t.Helper()
	bin := filepath.Join(root, "bin", "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/prometheus missing (%v): run scripts/install-tools.sh", err)
	}
	return bin
}

// Build runs `go build -o dir/name pkg` in root and returns the binary's path.
func Build(t testing.TB, root, dir, name, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
	return out
}

// Job is one scrape job: a job name and its one target (host:port).
type Job struct {
	Name, Target string
}

// Config returns a Prometheus configuration that scrapes jobs and evaluates ruleFile every
// second.
func Config(ruleFile string, jobs ...Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
`, ruleFile)
	for _, j := range jobs {
		fmt.Fprintf(&b, `  - job_name: %s
    static_configs:
      - targets: ['%s']
`, j.Name, j.Target)
	}
	return b.String()
}

// Server describes a Prometheus server for StartPrometheus.
type Server struct {
	// Bin is the prometheus binary (see PrometheusBin).
	Bin string
	// Dir receives prometheus.yml, the TSDB (Dir/data) and the server's log.
	Dir string
	// RuleFile and Jobs go into the configuration (see Config).
	RuleFile string
	Jobs     []Job
	// Client reads the API.
	Client *http.Client
}

// StartPrometheus writes s's configuration, starts Prometheus on a free port of 127.0.0.1
// and waits until /-/ready answers 200, failing the test if it is not ready by readyBy. It
// returns the process (stopped with SIGTERM) and the server's API.
func StartPrometheus(t testing.TB, s Server, readyBy time.Time) (*Process, API) {
	t.Helper()
	configFile := filepath.Join(s.Dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(configFile, []byte(Config(s.RuleFile, s.Jobs...)), 0o644))
	port := FreePort(t)
	p := Start(t, Command{Name: "prometheus", Dir: s.Dir, Bin: s.Bin, Args: []string{
		"--config.file=" + configFile,
		"--storage.tsdb.path=" + filepath.Join(s.Dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--log.level=warn",
	}})
	api := API{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Client: s.Client}
	WaitHTTP(t, s.Client, api.URL+"/-/ready", readyBy, p)
	return p, api
}
