package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/internal/backtest"
	"github.com/stormwatch-go/stormwatch/rules"
)

// Environment variables holding credentials (never flags: a flag's value shows in ps).
const (
	envBearerToken   = "STORMWATCH_BEARER_TOKEN"
	envBasicUser     = "STORMWATCH_BASIC_AUTH_USER"
	envBasicPassword = "STORMWATCH_BASIC_AUTH_PASSWORD"
)

// backtestFlags are the parsed flags of `stormwatch backtest`.
type backtestFlags struct {
	url, cfgPath, from, to, output, recording string
	tokenFile, basicUser, passwordFile        string
	incidentsFile                             string
	incidents                                 incidentFlags
	interval, timeout                         time.Duration
	compare, suggest, noSLO                   bool
	chunk                                     int
}

// incidentFlags collects repeated --incident values.
type incidentFlags []string

func (f *incidentFlags) String() string     { return strings.Join(*f, ",") }
func (f *incidentFlags) Set(v string) error { *f = append(*f, v); return nil }

func backtestFlagSet(f *backtestFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("backtest", flag.ContinueOnError)
	fs.StringVar(&f.url, "prometheus", "", "base URL of the Prometheus-compatible API holding the history (Prometheus, Mimir, Thanos Query, VictoriaMetrics)")
	fs.StringVar(&f.cfgPath, "c", "", "config file (YAML) the alerts are generated from; default: built-in defaults")
	fs.StringVar(&f.cfgPath, "config", "", "same as -c")
	fs.StringVar(&f.from, "from", "", "start of the range: RFC 3339, Unix seconds, now or now-<duration> (now-7d)")
	fs.StringVar(&f.to, "to", "now", "end of the range, as --from")
	fs.DurationVar(&f.interval, "interval", 0, "evaluation interval (the range queries' step); default: the server's interval for the stormwatch rule groups, else 1m")
	fs.DurationVar(&f.interval, "step", 0, "same as --interval")
	fs.StringVar(&f.output, "o", "text", "output: text or json")
	fs.StringVar(&f.recording, "recording", string(backtest.RecordingAuto), "recorded series: auto (from the server when it has them, else inlined), server or inline")
	fs.BoolVar(&f.compare, "compare-alerts", false, "compare the replay with the server's own ALERTS series")
	fs.BoolVar(&f.suggest, "suggest", false, "propose thresholds and fors that fire inside the --incident windows and stay quiet otherwise")
	fs.Var(&f.incidents, "incident", "START/END[:name] of an incident (repeatable); START and END as --from")
	fs.StringVar(&f.incidentsFile, "incidents", "", "file of incidents, one START/END[:name] a line (# comments)")
	fs.BoolVar(&f.noSLO, "no-slo", false, "leave out the SLO alerts of the config")
	fs.StringVar(&f.tokenFile, "bearer-token-file", "", "file holding a bearer token (or set "+envBearerToken+")")
	fs.StringVar(&f.basicUser, "basic-auth-user", "", "basic-auth user (or set "+envBasicUser+"); the password from --basic-auth-password-file or "+envBasicPassword)
	fs.StringVar(&f.passwordFile, "basic-auth-password-file", "", "file holding the basic-auth password")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "timeout of each request")
	fs.IntVar(&f.chunk, "chunk-steps", backtest.DefaultChunkSteps, "evaluation steps per range query (smaller: less memory; a server's point limit splits them further)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: stormwatch backtest --prometheus URL --from T [--to T] [-c stormwatch.yaml] [--interval 1m] [-o text|json]")
		fmt.Fprintln(w, "                           [--compare-alerts] [--suggest --incident START/END[:name]...]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Replays the generated alerts (and SLO alerts) over recorded data with range queries, simulating")
		fmt.Fprintln(w, "for and keep_firing_for as Prometheus does: per alert and label set, when it would have been")
		fmt.Fprintln(w, "pending, firing and resolved, pages per day and firing time. Read-only: it only queries.")
		fmt.Fprintln(w, "\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

func runBacktest(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := backtestCmd(ctx, args, stdout, stderr, time.Now()); err != nil {
		return report(stderr, "backtest", err)
	}
	return exitOK
}

// backtestRun is one parsed invocation.
type backtestRun struct {
	flags     backtestFlags
	cfg       rules.Config
	groups    []rules.Group
	start     time.Time
	end       time.Time
	incidents []backtest.Incident
	source    *backtest.HTTPSource
}

func backtestCmd(ctx context.Context, args []string, stdout, stderr io.Writer, now time.Time) error {
	r, err := parseBacktest(args, stdout, now)
	if err != nil {
		return err
	}
	progress := progressPrinter(stderr)
	opts := backtest.Options{Source: r.source, Start: r.start, End: r.end, ChunkSteps: r.flags.chunk,
		Recording: backtest.Recording(r.flags.recording), Progress: progress}
	if opts.Interval, err = r.interval(ctx, stderr); err != nil {
		return err
	}
	if err := backtest.CheckData(ctx, r.source, r.cfg, r.start, r.end); err != nil {
		return err
	}
	var out backtestOutput
	if r.flags.suggest {
		out.Incidents = r.incidents
		if out.Suggestions, err = backtest.Suggest(ctx, r.cfg, opts, r.incidents); err != nil {
			return err
		}
		out.Snippet = backtest.Snippet(out.Suggestions)
	} else {
		if out.Report, err = backtest.Run(ctx, r.groups, opts); err != nil {
			return err
		}
		if r.flags.compare {
			if out.Agreement, err = backtest.Compare(ctx, r.source, out.Report, 1, progress); err != nil {
				return err
			}
		}
	}
	if r.source.Splits > 0 {
		fmt.Fprintf(stderr, "stormwatch backtest: the server refused %d queries as too large; they were split and retried\n", r.source.Splits)
	}
	return out.write(stdout, r.flags.output)
}

// backtestOutput is what -o json prints.
type backtestOutput struct {
	Report      *backtest.Report      `json:"report,omitempty"`
	Agreement   []backtest.Agreement  `json:"agreement,omitempty"`
	Incidents   []backtest.Incident   `json:"incidents,omitempty"`
	Suggestions []backtest.Suggestion `json:"suggestions,omitempty"`
	Snippet     string                `json:"config_snippet,omitempty"`
}

func (o backtestOutput) write(w io.Writer, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(o)
	}
	if o.Suggestions != nil {
		backtest.WriteSuggestions(w, o.Suggestions)
		return nil
	}
	backtest.WriteText(w, o.Report, o.Agreement)
	return nil
}

// progressPrinter reports the chunks of long ranges on stderr (nothing for one-chunk queries).
func progressPrinter(stderr io.Writer) func(string, int, int) {
	return func(alert string, done, total int) {
		if total > 1 {
			fmt.Fprintf(stderr, "stormwatch backtest: %s: %d/%d\n", alert, done, total)
		}
	}
}

// interval is --interval, else the server's interval for the generated groups, else 1m.
func (r *backtestRun) interval(ctx context.Context, stderr io.Writer) (time.Duration, error) {
	if r.flags.interval > 0 {
		return r.flags.interval, nil
	}
	got, err := r.source.RuleGroupIntervals(ctx)
	if err != nil {
		return 0, err
	}
	for _, g := range r.groups {
		if iv, ok := got[g.Name]; ok && iv > 0 {
			fmt.Fprintf(stderr, "stormwatch backtest: evaluation interval %s (the server's rule group %s)\n", iv, g.Name)
			return iv, nil
		}
	}
	return time.Minute, nil
}

func parseBacktest(args []string, stdout io.Writer, now time.Time) (*backtestRun, error) {
	r := &backtestRun{}
	f := &r.flags
	fs := backtestFlagSet(f)
	if err := parseFlags(fs, args, stdout); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageErr("arguments", fs.Args(), "backtest takes flags only")
	}
	if err := r.checkFlags(now); err != nil {
		return nil, err
	}
	c, err := loadConfig(f.cfgPath)
	if err != nil {
		return nil, err
	}
	r.cfg = c.rules
	if r.groups, err = rules.Groups(r.cfg); err != nil {
		return nil, c.locate(err)
	}
	if len(r.cfg.SLOs) > 0 && !f.noSLO {
		slo, err := rules.SLOGroups(r.cfg)
		if err != nil {
			return nil, c.locate(err)
		}
		r.groups = append(r.groups, slo...)
	}
	auth, err := credentials(f)
	if err != nil {
		return nil, err
	}
	r.source, err = backtest.NewHTTPSource(backtest.HTTPConfig{URL: f.url, Auth: auth, Timeout: f.timeout})
	if err != nil {
		return nil, usageErr("--prometheus", nil, "%v", err)
	}
	return r, nil
}

func (r *backtestRun) checkFlags(now time.Time) error {
	f := &r.flags
	var err error
	switch {
	case f.url == "":
		return usageErr("--prometheus", "", "required: the base URL of the server holding the history")
	case f.from == "":
		return usageErr("--from", "", "required: the start of the range (RFC 3339, Unix seconds, now-<duration>)")
	case f.output != "text" && f.output != "json":
		return usageErr("-o", f.output, "want text or json")
	case f.interval < 0:
		return usageErr("--interval", f.interval.String(), "must be positive")
	case f.chunk < 1:
		return usageErr("--chunk-steps", f.chunk, "must be at least 1")
	case f.suggest && f.compare:
		return usageErr("--suggest", true, "cannot be combined with --compare-alerts")
	}
	switch backtest.Recording(f.recording) {
	case backtest.RecordingAuto, backtest.RecordingServer, backtest.RecordingInline:
	default:
		return usageErr("--recording", f.recording, "want auto, server or inline")
	}
	if r.start, err = parseTime(f.from, now); err != nil {
		return usageErr("--from", f.from, "%v", err)
	}
	if r.end, err = parseTime(f.to, now); err != nil {
		return usageErr("--to", f.to, "%v", err)
	}
	if !r.end.After(r.start) {
		return usageErr("--to", f.to, "must be after --from (%s)", r.start.UTC().Format(time.RFC3339))
	}
	return r.loadIncidents(now)
}
