package e2eprom

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// DemoSpec describes one `stormwatch demo` for StartDemo and StartFleet.
type DemoSpec struct {
	// Job is the Prometheus job that scrapes the demo (the `job` label of its series and
	// alerts) and the name of its process (log: Dir/<Job>.log). Unique within a fleet.
	Job string
	// Args are the demo's flags, e.g. --scenario outage --duration 0. StartDemo adds
	// --listen 127.0.0.1:0 (the kernel picks the port), --log-file - and --log-format json
	// (the retry log goes to the process log).
	Args []string
}

// Demo is a running `stormwatch demo`.
type Demo struct {
	*Process
	// Job is DemoSpec.Job.
	Job string
	// Addr is the host:port of its /metrics.
	Addr string
	// Started is when it printed its metrics URL, which it does right before its scenario's
	// script starts: the scenario's t=0 is Started, within a few milliseconds.
	Started time.Time
}

var metricsLine = regexp.MustCompile(`metrics on http://(127\.0\.0\.1:\d+)/metrics`)

// StartDemo starts `bin demo` as spec says and waits until it serves /metrics, failing the test
// if that has not happened by readyBy. The demo stops on SIGINT (its Stop signal), exiting 0.
func StartDemo(t testing.TB, bin, dir string, spec DemoSpec, client *http.Client, readyBy time.Time) *Demo {
	t.Helper()
	require.NotEmpty(t, spec.Job, "DemoSpec.Job")
	lines := make(chan string, 256)
	args := append([]string{"demo", "--listen", "127.0.0.1:0", "--log-file", "-", "--log-format", "json"}, spec.Args...)
	p := Start(t, Command{Name: spec.Job, Dir: dir, Bin: bin, Args: args, Lines: lines,
		StopSignal: syscall.SIGINT, StopGrace: 10 * time.Second})
	timeout := time.NewTimer(time.Until(readyBy))
	defer timeout.Stop()
	for {
		select {
		case l := <-lines:
			if m := metricsLine.FindStringSubmatch(l); m != nil {
				d := &Demo{Process: p, Job: spec.Job, Addr: m[1], Started: time.Now()}
				WaitHTTP(t, client, "http://"+d.Addr+"/metrics", readyBy, p)
				return d
			}
		case <-timeout.C:
			t.Fatalf("%s printed no metrics URL by the deadline:\n%s", spec.Job, p.Tail(20))
		}
	}
}

// Fleet is one Prometheus scraping several demos, each under a job of its own.
type Fleet struct {
	Prometheus *Process
	API        API
	// Demos are in the order of FleetConfig.Demos.
	Demos []*Demo
}

// FleetConfig describes a Fleet.
type FleetConfig struct {
	// Stormwatch and Prometheus are the binaries (see Build and PrometheusBin).
	Stormwatch, Prometheus string
	// Dir receives the processes' logs, Prometheus's configuration and TSDB.
	Dir string
	// RuleFile is the rule file Prometheus evaluates (see DemoProfileRules).
	RuleFile string
	// Demos are the demos to run, one job each.
	Demos []DemoSpec
	// Client reads the HTTP APIs.
	Client *http.Client
}

// StartFleet starts Prometheus (without targets), then every demo on a port the kernel picks,
// then points Prometheus at them — one job per demo, scraped every second — and waits until
// every target has been scraped, failing the test if all that has not happened by readyBy. A
// demo's first scrape comes within about two seconds of its start. The demos and Prometheus are
// stopped by the test's cleanup (or Fleet.Stop), and killed by the kernel if the test process
// dies.
func StartFleet(t testing.TB, c FleetConfig, readyBy time.Time) *Fleet {
	t.Helper()
	server := Server{Bin: c.Prometheus, Dir: c.Dir, RuleFile: c.RuleFile, Client: c.Client}
	prom, api := StartPrometheus(t, server, readyBy)
	f := &Fleet{Prometheus: prom, API: api}
	seen := map[string]bool{}
	for _, spec := range c.Demos {
		require.False(t, seen[spec.Job], "two demos with job %q", spec.Job)
		seen[spec.Job] = true
		d := StartDemo(t, c.Stormwatch, c.Dir, spec, c.Client, readyBy)
		f.Demos = append(f.Demos, d)
		server.Jobs = append(server.Jobs, Job{Name: d.Job, Target: d.Addr})
	}
	SetJobs(t, prom, api, server, readyBy)
	return f
}

// Demo returns the fleet's demo of job, failing the test when there is none.
func (f *Fleet) Demo(t testing.TB, job string) *Demo {
	t.Helper()
	for _, d := range f.Demos {
		if d.Job == job {
			return d
		}
	}
	t.Fatalf("no demo with job %q", job)
	return nil
}

// Stop stops every demo (SIGINT), then Prometheus, and returns the first error: a demo that
// did not exit 0.
func (f *Fleet) Stop(t testing.TB) error {
	t.Helper()
	var first error
	for _, d := range f.Demos {
		if err := d.Stop(t); err != nil && first == nil {
			first = fmt.Errorf("%s: %w\n%s", d.Job, err, d.Tail(10))
		}
	}
	_ = f.Prometheus.Stop(t)
	return first
}

// DemoProfileRules writes the demo profile (`bin demo --print-profile`) to dir/demo-profile.yaml,
// generates its rules with `bin generate rules` into dir/demo-profile and returns the rule
// file's path.
func DemoProfileRules(t testing.TB, bin, dir string) string {
	t.Helper()
	profile, err := exec.Command(bin, "demo", "--print-profile").Output()
	require.NoError(t, err, "stormwatch demo --print-profile")
	cfg := filepath.Join(dir, "demo-profile.yaml")
	require.NoError(t, os.WriteFile(cfg, profile, 0o644))
	out := filepath.Join(dir, "demo-profile")
	b, err := exec.Command(bin, "generate", "rules", "-c", cfg, "-o", out).CombinedOutput()
	require.NoError(t, err, "stormwatch generate rules: %s", b)
	ruleFile := filepath.Join(out, "stormwatch-rules.yaml")
	require.FileExists(t, ruleFile)
	return ruleFile
}
