package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
)

func init() {
	commands["demo"] = command{"run a fault-injected demo on 127.0.0.1 with /metrics, the retry log and a live status", runDemo}
}

// runDemo is `stormwatch demo [--listen addr] [--scenario name] [--duration d] [--speed n]
// [--rps n] [--log-format json|text]`. It stops cleanly (exit 0) on SIGINT or SIGTERM.
func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg demo.Config
	fs.StringVar(&cfg.Listen, "listen", demo.DefaultListen, "address of /metrics (loopback only; port 0 picks a free one)")
	fs.StringVar(&cfg.Scenario, "scenario", demo.DefaultScenario, "fault script: "+strings.Join(demo.ScenarioNames, "|"))
	fs.DurationVar(&cfg.Duration, "duration", demo.DefaultDuration, "how long to run (wall time); 0 runs until Ctrl-C")
	fs.Float64Var(&cfg.Speed, "speed", demo.DefaultSpeed, "divide every scripted duration, open duration, timeout and injected latency by this")
	fs.Float64Var(&cfg.Rate, "rps", demo.DefaultRate, "calls per second (demo time) to each dependency; --speed multiplies it too")
	fs.StringVar(&cfg.LogFormat, "log-format", "json", "retry log format on stderr: json|text")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: stormwatch demo [--listen 127.0.0.1:9464] [--scenario "+strings.Join(demo.ScenarioNames, "|")+"] [--duration 5m] [--speed 1] [--rps 20] [--log-format json|text]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "stormwatch demo: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	// Zero means "default" in demo.Config; on the command line it is a mistake.
	if cfg.Speed <= 0 || cfg.Rate <= 0 {
		fmt.Fprintf(stderr, "stormwatch demo: --speed %v, --rps %v: both must be > 0\n", cfg.Speed, cfg.Rate)
		return exitUsage
	}
	cfg.Stdout, cfg.Stderr = stdout, stderr
	cfg.TTY = isTerminal(stdout)
	cfg.StderrTTY = cfg.TTY && isTerminal(stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "stormwatch demo: %v\n", err)
		var ue *demo.UsageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitFailure
	}
	return exitOK
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
