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

// demoUsage is the synopsis of `stormwatch demo`.
var demoUsage = "usage: stormwatch demo [--listen 127.0.0.1:9464] [--scenario " + strings.Join(demo.ScenarioNames, "|") + "]\n" +
	"                       [--duration 5m] [--outage 60s] [--no-fallback] [--speed 1] [--rps 20] [--log-format json|text] [--log-file path|-]\n" +
	"                       [--prometheus bin/prometheus [--prometheus-listen 127.0.0.1:9090]] [--print-profile]"

// runDemo is `stormwatch demo`. It stops cleanly (exit 0) on SIGINT, SIGTERM and at the end of
// --duration, whatever the scenario.
func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg demo.Config
	var prom promOptions
	var printProfile bool
	fs.StringVar(&cfg.Listen, "listen", demo.DefaultListen, "address of /metrics (loopback only; port 0 picks a free one, printed on the first line)")
	fs.StringVar(&cfg.Scenario, "scenario", demo.DefaultScenario, "fault script: "+strings.Join(demo.ScenarioNames, "|"))
	fs.DurationVar(&cfg.Duration, "duration", demo.DefaultDuration, "how long to run (wall time; 0: until Ctrl-C, the default with --prometheus)")
	fs.DurationVar(&cfg.Outage, "outage", 0, "how long the fault of the "+strings.Join(demo.OutageScenarios, ", ")+" scenarios lasts (demo time; default 60s), e.g. 9m for a soak")
	fs.BoolVar(&cfg.NoFallback, "no-fallback", false, "run the dependencies without their fallbacks: failed calls reach the client as errors (an outage that is not contained: DependencyOutage pages)")
	fs.Float64Var(&cfg.Speed, "speed", demo.DefaultSpeed, "divide every scripted duration, open duration, timeout and injected latency by this (Prometheus's windows do not speed up: keep 1 to watch alerts)")
	fs.Float64Var(&cfg.Rate, "rps", demo.DefaultRate, "calls per second (demo time) to each dependency; --speed multiplies it too")
	fs.StringVar(&cfg.LogFormat, "log-format", "json", "retry log format: json|text")
	fs.StringVar(&cfg.LogFile, "log-file", "", "retry log destination: a file, or - for stderr (default: stderr; when stdout and stderr are a terminal, a new "+demo.LogFilePattern+" in the temporary directory, named on the first line)")
	fs.StringVar(&prom.bin, "prometheus", "", "also run this Prometheus server (bin/prometheus, from make tools-prometheus) with the demo profile's rules, scraping the demo every second")
	fs.StringVar(&prom.listen, "prometheus-listen", "127.0.0.1:9090", "address of that Prometheus server (loopback only; port 0 picks a free one)")
	fs.BoolVar(&printProfile, "print-profile", false, "print the demo profile (the stormwatch.yaml of short windows and for durations that --prometheus uses) and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, demoUsage)
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
	if printProfile {
		fmt.Fprint(stdout, demo.AlertsProfile())
		return exitOK
	}
	// Zero means "default" in demo.Config; on the command line it is a mistake.
	if cfg.Speed <= 0 || cfg.Rate <= 0 {
		fmt.Fprintf(stderr, "stormwatch demo: --speed %v, --rps %v: both must be > 0\n", cfg.Speed, cfg.Rate)
		return exitUsage
	}
	durationSet, outageSet := false, false
	fs.Visit(func(f *flag.Flag) {
		durationSet = durationSet || f.Name == "duration"
		outageSet = outageSet || f.Name == "outage"
	})
	if outageSet && cfg.Outage <= 0 {
		fmt.Fprintf(stderr, "stormwatch demo: --outage %v: must be positive\n", cfg.Outage)
		return exitUsage
	}
	if prom.bin != "" && !durationSet {
		cfg.Duration = 0 // keep Prometheus and the alerts up until Ctrl-C
	}
	cfg.Stdout, cfg.Stderr = stdout, stderr
	cfg.TTY = isTerminal(stdout)
	cfg.StderrTTY = cfg.TTY && isTerminal(stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if prom.bin != "" {
		err = runDemoWithPrometheus(ctx, cfg, prom)
	} else {
		err = demo.Run(ctx, cfg)
	}
	if err != nil {
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
