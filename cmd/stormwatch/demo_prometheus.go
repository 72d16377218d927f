package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
	"github.com/stormwatch-go/stormwatch/internal/promrun"
)

// promOptions are the --prometheus flags of `stormwatch demo`.
type promOptions struct {
	bin    string // the prometheus executable
	listen string // its address
}

// Limits of the --prometheus mode.
const (
	promReadyTimeout = 2 * time.Minute  // Prometheus's start (a cold TSDB takes a second or two)
	promStopGrace    = 15 * time.Second // SIGTERM to exit, then SIGKILL
	promJob          = "stormwatch-demo"
)

// runDemoWithPrometheus runs the demo together with a local Prometheus server that evaluates
// the demo profile's rules, generated into a temporary directory, and scrapes the demo every
// second. Prometheus is stopped, and the directory removed, when the demo ends; a Prometheus
// that dies meanwhile ends the demo with an error.
func runDemoWithPrometheus(ctx context.Context, cfg demo.Config, p promOptions) (err error) {
	if err := checkPromFlags(cfg, p); err != nil {
		return err
	}
	out := cfg.Stdout
	dir, err := os.MkdirTemp("", "stormwatch-demo-prometheus-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ruleFile, err := generateDemoRules(dir)
	if err != nil {
		return err
	}
	// The demo's listener first: Prometheus's configuration names its address.
	l, err := listenDemo(cfg.Listen)
	if err != nil {
		return err
	}
	cfg.Listener = l // demo.Run closes it
	defer l.Close()

	server, err := promrun.Start(promrun.Options{
		Bin: p.bin, Dir: dir, Listen: p.listen,
		Config: promrun.Config{RuleFiles: []string{ruleFile}, Jobs: []promrun.Job{{Name: promJob, Target: l.Addr().String()}}},
	})
	if err != nil {
		return err
	}
	defer func() {
		if serr := server.Stop(promStopGrace); serr != nil && err == nil {
			err = serr
		}
		fmt.Fprintf(out, "stormwatch demo: Prometheus (pid %d) stopped\n", server.Pid())
	}()
	fmt.Fprintf(out, "stormwatch demo: starting Prometheus (pid %d) on %s…\n", server.Pid(), server.URL)
	if stop, err := awaitPrometheus(ctx, server, out, ruleFile); stop {
		return err
	}
	return runBesidePrometheus(ctx, cfg, server)
}

// checkPromFlags validates the demo's configuration and the --prometheus flags.
func checkPromFlags(cfg demo.Config, p promOptions) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := demo.CheckLoopbackFlag("--prometheus-listen", p.listen); err != nil {
		return err
	}
	if fi, err := os.Stat(p.bin); err != nil || fi.IsDir() {
		return &demo.UsageError{Msg: fmt.Sprintf("--prometheus %q: no such executable (build it with `make tools-prometheus`, which runs scripts/install-tools.sh prometheus)", p.bin)}
	}
	return nil
}

// generateDemoRules writes the demo profile into dir, generates its rules there and returns
// the rule file's path.
func generateDemoRules(dir string) (string, error) {
	profile := filepath.Join(dir, "stormwatch.yaml")
	if err := os.WriteFile(profile, []byte(demo.AlertsProfile()), 0o644); err != nil {
		return "", err
	}
	var genErr bytes.Buffer
	if code := commands["generate"].run([]string{"rules", "-c", profile, "-o", dir}, io.Discard, &genErr); code != exitOK {
		return "", fmt.Errorf("generating the demo profile's rules: %s", strings.TrimSpace(genErr.String()))
	}
	ruleFile := filepath.Join(dir, "stormwatch-rules.yaml")
	if _, err := os.Stat(ruleFile); err != nil {
		return "", fmt.Errorf("generating the demo profile's rules: %w", err)
	}
	return ruleFile, nil
}

// listenDemo binds the demo's /metrics address (--listen, default demo.DefaultListen).
func listenDemo(listen string) (net.Listener, error) {
	if listen == "" {
		listen = demo.DefaultListen
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", listen, err)
	}
	return l, nil
}

// awaitPrometheus waits for Prometheus to be ready and prints where to look. stop says the
// run is over: ctx ended meanwhile (err nil), or Prometheus did not start (err says why).
func awaitPrometheus(ctx context.Context, server *promrun.Server, out io.Writer, ruleFile string) (stop bool, err error) {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	readyCtx, cancelReady := context.WithTimeout(ctx, promReadyTimeout)
	err = server.Ready(readyCtx, client)
	cancelReady()
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(out, "stormwatch demo: interrupted, stopped cleanly")
		return true, nil
	case err != nil:
		return true, fmt.Errorf("prometheus did not start: %v; its log:\n%s", err, logTail(server.LogFile, 20))
	}
	fmt.Fprintf(out, "stormwatch demo: Prometheus scrapes this demo every %s (job %q) and evaluates the demo profile's rules:\n", promrun.DefaultInterval, promJob)
	fmt.Fprintf(out, "  alerts  %s/alerts\n", server.URL)
	fmt.Fprintf(out, "  graph   %s/graph?g0.expr=ALERTS\n", server.URL)
	fmt.Fprintf(out, "  rules   %s (stormwatch demo --print-profile shows the profile)\n", ruleFile)
	return false, nil
}

// runBesidePrometheus runs the demo, stopped early (with an error) if Prometheus dies.
func runBesidePrometheus(ctx context.Context, cfg demo.Config, server *promrun.Server) error {
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	died := make(chan struct{})
	go func() {
		select {
		case <-server.Done():
			close(died)
			cancelRun()
		case <-runCtx.Done():
		}
	}()
	err := demo.Run(runCtx, cfg)
	select {
	case <-died:
		if ctx.Err() == nil {
			return fmt.Errorf("prometheus exited (%v); its log:\n%s", server.Err(), logTail(server.LogFile, 20))
		}
	default:
	}
	return err
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
