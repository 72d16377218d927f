// Command stormwatch generates Prometheus rules, promtool tests, runbooks and Grafana
// dashboards for services instrumented with stormwatch.
//
//	stormwatch generate [all|rules|tests|runbooks|dashboards] [-c stormwatch.yaml] [-o dir] [--format prometheus|operator]
//	stormwatch demo [--listen 127.0.0.1:9464] [--scenario name] [--duration 5m] [--outage 60s] [--speed 1]
//	stormwatch backtest --prometheus URL --from T [--to T] [-c stormwatch.yaml] [--compare-alerts | --suggest --incident START/END]
//	stormwatch version
//
// "stormwatch <command> -h" prints a command's usage on stdout. Exit codes: 0 ok, 1 runtime
// failure, 2 usage or config error (a *catalog.ConfigError).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"; when empty, the
// module version from the build info is used.
var version string

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// command is one subcommand. run returns the exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands are the subcommands; adding one is adding an entry.
var commands = map[string]command{
	"generate": {"generate rules, promtool tests, runbooks and dashboards", runGenerate},
	"backtest": {"replay the generated alerts over a Prometheus's history; compare with ALERTS, tune", runBacktest},
	"version":  {"print the version", runVersion},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help", "--h":
		if args[0] == "help" && len(args) > 1 {
			if cmd, ok := commands[args[1]]; ok {
				return cmd.run([]string{"-h"}, stdout, stdout)
			}
		}
		usage(stdout)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "stormwatch: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	if len(args) > 1 && isHelpFlag(args[1]) {
		// Help is output, not a diagnostic: a command asked for help with a leading -h prints
		// its usage on stdout, whichever writer its flag set reports on.
		return cmd.run(args[1:], stdout, stdout)
	}
	return cmd.run(args[1:], stdout, stderr)
}

// isHelpFlag reports whether arg is one of the flag package's spellings of help.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: stormwatch <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'stormwatch <command> -h' for a command's flags. Exit codes: 0 ok, 1 failure, 2 usage or config error.")
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: stormwatch version")
		fmt.Fprintln(fs.Output())
		fmt.Fprintln(fs.Output(), "Prints the version of stormwatch, the Go version it was built with and the platform.")
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		return report(stderr, "version", err)
	}
	if fs.NArg() > 0 {
		return report(stderr, "version", usageErr("arguments", fs.Args(), "version takes no arguments"))
	}
	fmt.Fprintf(stdout, "stormwatch %s %s %s/%s\n", currentVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}

// currentVersion is the -ldflags version, else the main module's version from the build
// info (set by `go install module@version` and by `go tool` from the version in go.mod),
// else "devel" (a build from a checkout, or a module replaced by a local directory).
func currentVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	m := bi.Main
	if m.Replace != nil {
		m = *m.Replace
	}
	switch m.Version {
	case "", "(devel)", "v0.0.0-00010101000000-000000000000":
		return "devel"
	}
	return m.Version
}

// parseFlags parses args with fs. A help flag prints fs.Usage on stdout and returns
// flag.ErrHelp. Any other problem is returned as a usage error for the caller to print once:
// the flag package's own message and usage dump are suppressed. fs.Usage must write to
// fs.Output().
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return flag.ErrHelp
	}
	if err != nil {
		return usageErr("", nil, "%v (run 'stormwatch %s -h' for usage)", err, fs.Name())
	}
	return nil
}

// report prints err for command cmd on stderr and returns its exit code; flag.ErrHelp is
// success (the usage was printed).
func report(stderr io.Writer, cmd string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "stormwatch %s: %s\n", cmd, describe(err))
	return exitCode(err)
}

// primitiveConfig is the catalog.ConfigError.Primitive of the command line's and the config
// file's own errors; the generators report theirs as "rules" and "dashboards".
const primitiveConfig = "config"

// exitCode maps an error to the exit code: a configuration or usage error (a
// *catalog.ConfigError, whoever reported it) is 2, anything else 1.
func exitCode(err error) int {
	var ce *catalog.ConfigError
	if errors.As(err, &ce) {
		return exitUsage
	}
	return exitFailure
}

// usageErr returns a command-line usage error naming the flag or argument (field) and the
// rejected value.
func usageErr(field string, value any, format string, args ...any) error {
	return &catalog.ConfigError{Primitive: primitiveConfig, Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// describe renders err for the user. A *catalog.ConfigError reads
// "file:LINE: field.path = value: reason" (its Name holds the file position, when there is
// one); long values are shortened.
func describe(err error) string {
	var ce *catalog.ConfigError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	var b strings.Builder
	if ce.Name != "" {
		b.WriteString(ce.Name + ": ")
	}
	if ce.Field != "" {
		b.WriteString(clip(ce.Field))
		if ce.Value != nil {
			b.WriteString(" = " + clip(formatValue(ce.Value)))
		}
		b.WriteString(": ")
	}
	b.WriteString(ce.Reason)
	return b.String()
}

// formatValue renders a rejected value: strings quoted, the rest as fmt prints them.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case []string:
		return "[" + strings.Join(v, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// maxShown is the longest value or field path a message shows in full, in bytes.
const maxShown = 120

// clip shortens s to about maxShown bytes, on a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

func quoteList(ss []string) string { return strings.Join(ss, "|") }
