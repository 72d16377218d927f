package e2eprom

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/internal/promrun"
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
type Job = promrun.Job

// Config returns a Prometheus configuration that scrapes jobs and evaluates ruleFile every
// second.
func Config(ruleFile string, jobs ...Job) string {
	return promrun.Config{RuleFiles: []string{ruleFile}, Jobs: jobs}.YAML()
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
// returns the process (stopped with SIGTERM) and the server's API. s.Jobs may be empty (see
// SetJobs).
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

// SetJobs replaces the scrape jobs of the Prometheus p started by StartPrometheus with s (same
// Dir and RuleFile, new Jobs), makes it reload its configuration (SIGHUP) and waits until every
// job's target has been scraped successfully, failing the test if that has not happened by
// upBy.
func SetJobs(t testing.TB, p *Process, api API, s Server, upBy time.Time) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "prometheus.yml"), []byte(Config(s.RuleFile, s.Jobs...)), 0o644))
	require.NoError(t, p.Signal(syscall.SIGHUP))
	for {
		up := api.TargetsUp(t)
		missing := 0
		for _, j := range s.Jobs {
			if !up[j.Name] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if exited, err := p.exited(); exited {
			t.Fatalf("prometheus exited (%v):\n%s", err, p.Tail(30))
		}
		if time.Now().After(upBy) {
			t.Fatalf("%d of %d jobs not up after the reload (up: %v)", missing, len(s.Jobs), up)
		}
		time.Sleep(200 * time.Millisecond) // polling a real server
	}
}

// MainWithCLI is an end-to-end package's TestMain: it builds the stormwatch CLI into a
// temporary directory, sets *bin to its path, runs the tests with goleak's check, removes the
// directory and exits.
func MainWithCLI(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "stormwatch-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "stormwatch")
	build := exec.Command("go", "build", "-o", *bin, "github.com/stormwatch-go/stormwatch/cmd/stormwatch")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building stormwatch: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}
