// Command stormwatch generates Prometheus rules, promtool tests, runbooks and Grafana
// dashboards for services instrumented with stormwatch.
//
//	stormwatch generate [all|rules|tests|runbooks|dashboards] [-c stormwatch.yaml] [-o dir] [--format prometheus|operator]
//	stormwatch version
//
// Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
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
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "stormwatch: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.run(args[1:], stdout, stderr)
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
	if len(args) > 0 {
		fmt.Fprintf(stderr, "stormwatch version: unexpected arguments %q\n", args)
		return exitUsage
	}
	fmt.Fprintf(stdout, "stormwatch %s %s %s/%s\n", currentVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}

// currentVersion is the -ldflags version, else the main module's version from the build
// info (set by `go install module@version`), else "devel".
func currentVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// exitCode maps an error to the exit code: config and usage errors are 2, the rest 1.
func exitCode(err error) int {
	var ce *configError
	var ue *usageError
	if errors.As(err, &ce) || errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

// usageError is a command-line usage error; it exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func quoteList(ss []string) string { return strings.Join(ss, "|") }
