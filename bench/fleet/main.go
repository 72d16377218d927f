// Command fleet measures what stormwatch's rules cost Prometheus at fleet scale: N dependencies
// (retry around a circuit breaker, each having run every path: successes, a rescued failure,
// exhausted retries, budget refusals, a trip, rejections, the half-open probe) in each of M
// exporters on 127.0.0.1, scraped by a real Prometheus 3.16 every interval (5s), which evaluates
// a rule file (the default generated rules unless -rules says otherwise) at the same interval.
// After a warm-up that fills the 5-minute rate windows it prints, per N: the head series (in
// total and per dependency-instance), each rule group's and each rule's evaluation time (from
// /api/v1/rules, averaged over -cycles evaluations), the iterations Prometheus missed, and
// Prometheus's resident memory (process_resident_memory_bytes). Everything runs on loopback
// and stops by itself; `make bench-fleet` runs it.
//
// -rules takes several files separated by commas, and -rounds repeats the measurement: for each
// N, every round measures every file, in alternating order (ABBA…), so that a before/after
// comparison is interleaved on the same machine; a summary table closes the output.
//
//	go run ./fleet -n 500,2000 [-m 1] [-rules FILE[,FILE…]] [-rounds 1] [-interval 5s] [-warmup 5m30s] [-cycles 6]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stormwatch-go/stormwatch/rules"
)

type options struct {
	sizes      []int
	exporters  int
	rulesFiles []string
	rounds     int
	prometheus string
	interval   time.Duration
	warmup     time.Duration
	cycles     int
	top        int
	cpuProfile string
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	sizes := fs.String("n", "500,2000", "dependencies per exporter: a comma-separated list, one run each")
	fs.IntVar(&o.exporters, "m", 1, "exporters (each its own scrape job, fleet-1…fleet-M, with the same N dependencies)")
	rulesFlag := fs.String("rules", "", "rule file(s) to evaluate, separated by commas; none: no rules, the cost of scraping alone (default: `stormwatch generate rules` with the built-in defaults)")
	fs.IntVar(&o.rounds, "rounds", 1, "measurements of each rule file at each N, interleaved")
	fs.StringVar(&o.prometheus, "prometheus", "../bin/prometheus", "Prometheus 3.16 executable (scripts/install-tools.sh prometheus)")
	fs.DurationVar(&o.interval, "interval", 5*time.Second, "scrape and evaluation interval")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Minute+30*time.Second, "time before measuring, so that the rate windows fill (the default rules' is 5m)")
	fs.IntVar(&o.cycles, "cycles", 6, "evaluations of each group to average")
	fs.IntVar(&o.top, "top", 0, "print only the N most expensive rules (0: all)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write Prometheus's CPU profile over the measurement (30s, /debug/pprof/profile) to FILE-N-ROUND-RULES.pprof")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "fleet: -n %q: want positive integers separated by commas\n", *sizes)
			return o, fmt.Errorf("bad -n")
		}
		o.sizes = append(o.sizes, n)
	}
	if *rulesFlag != "" {
		o.rulesFiles = strings.Split(*rulesFlag, ",")
	}
	switch {
	case o.rounds < 1:
		fmt.Fprintf(stderr, "fleet: -rounds %d: want at least 1\n", o.rounds)
		return o, fmt.Errorf("bad -rounds")
	case o.exporters < 1:
		fmt.Fprintf(stderr, "fleet: -m %d: want at least 1\n", o.exporters)
		return o, fmt.Errorf("bad -m")
	case o.interval < time.Second:
		fmt.Fprintf(stderr, "fleet: -interval %s: want at least 1s\n", o.interval)
		return o, fmt.Errorf("bad -interval")
	case o.cycles < 1:
		fmt.Fprintf(stderr, "fleet: -cycles %d: want at least 1\n", o.cycles)
		return o, fmt.Errorf("bad -cycles")
	}
	return o, nil
}

func run(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "stormwatch-fleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	files, labels, err := ruleFiles(o.rulesFiles, dir)
	if err != nil {
		return err
	}
	prom, err := filepath.Abs(o.prometheus)
	if err != nil {
		return err
	}
	if _, err := os.Stat(prom); err != nil {
		return fmt.Errorf("%w: run scripts/install-tools.sh prometheus", err)
	}
	fmt.Fprintf(out, "# stormwatch fleet benchmark: rules %s; scrape and evaluation every %s; warm-up %s; %d cycles averaged; %d exporter(s); %d round(s)\n",
		strings.Join(labels, ", "), o.interval, o.warmup, o.cycles, o.exporters, o.rounds)
	var all []*result
	for _, n := range o.sizes {
		for round := range o.rounds {
			for k := range files {
				i := k
				if round%2 == 1 { // ABBA: alternate the order
					i = len(files) - 1 - k
				}
				r, err := measure(ctx, o, n, prom, files[i], filepath.Join(dir, fmt.Sprintf("%d-%d-%d", n, round, i)))
				if err != nil {
					return fmt.Errorf("N=%d, rules %s: %w", n, labels[i], err)
				}
				r.ruleFile, r.round = labels[i], round+1
				r.print(out, o.top)
				all = append(all, r)
			}
		}
	}
	summary(out, all)
	return nil
}

// ruleFiles returns the absolute paths of the rule files to evaluate, and their labels: the
// paths as given, or the default rules written into dir.
func ruleFiles(paths []string, dir string) (files, labels []string, err error) {
	if len(paths) == 0 {
		b, err := rules.Generate(rules.Config{})
		if err != nil {
			return nil, nil, err
		}
		p := filepath.Join(dir, "stormwatch-rules.yaml")
		return []string{p}, []string{"default generated rules"}, os.WriteFile(p, b, 0o644)
	}
	for _, p := range paths {
		abs, err := filepath.Abs(strings.TrimSpace(p))
		if err != nil {
			return nil, nil, err
		}
		if _, err := os.Stat(abs); err != nil {
			// No rules: what scraping alone costs. `make bench-fleet` makes every name absolute,
			// so none also arrives as /some/dir/none (when no such file exists).
			if strings.TrimSpace(p) == "none" || filepath.Base(abs) == "none" {
				files, labels = append(files, ""), append(labels, "none")
				continue
			}
			return nil, nil, err
		}
		files, labels = append(files, abs), append(labels, strings.TrimSpace(p))
	}
	return files, labels, nil
}
