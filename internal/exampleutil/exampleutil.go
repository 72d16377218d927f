// Package exampleutil is the command-line and serving code the runnable examples share
// (examples/… and instrument/grpcx/examples/…), so that each example's main.go shows stormwatch
// and little else: flags that return their errors, one exit-code convention, a context ended by
// SIGINT or SIGTERM, loopback HTTP servers that shut down cleanly, and /metrics for a registry.
//
// The exit-code convention: 0 after -h (the usage goes to stdout), 2 after a bad flag or value
// (one line on stderr: "name: problem (run with -h for usage)"), 1 when the run fails.
package exampleutil

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// Run means "go on and run": the code [ExitCode] returns when the command line was fine.
const Run = -1

// NewFlagSet returns an example's flag set: parse errors are returned (and printed once, by
// [ExitCode]), never printed by the flag package.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// Parse parses args into the flags of fs, then checks their values with check (nil: no check).
// After -h it writes the usage line ("usage: " + usage) and the flags' defaults on stdout and
// returns flag.ErrHelp. Positional arguments are an error.
func Parse(fs *flag.FlagSet, usage string, args []string, stdout io.Writer, check func() error) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage:", usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if check != nil {
		return check()
	}
	return nil
}

// ExitCode turns the error of [Parse] into the command's fate: [Run] for nil, 0 for -h, and 2
// for anything else, after one line on stderr naming the command.
func ExitCode(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return Run
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v (run with -h for usage)\n", name, err)
	return 2
}

// Main ends the process with code unless it is [Run]; otherwise it calls run with a context
// that SIGINT or SIGTERM cancels, and exits 1 (after "name: error" on stderr) if run fails.
func Main(name string, code int, run func(ctx context.Context) error) {
	if code != Run {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// WithDuration bounds ctx by d when d > 0 (the examples' -duration flag; 0 runs until the
// context ends). Call the returned function when done.
func WithDuration(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// Serve serves h on l and returns a function that shuts the server down (within 2 s) and waits
// for it.
func Serve(l net.Listener, h http.Handler) (stop func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}

// Loopback serves h on a free port of 127.0.0.1 and returns its host:port and the stop function.
func Loopback(h http.Handler) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	return l.Addr().String(), Serve(l, h), nil
}

// ServeMetrics serves reg's metrics (a collector.New of it, plus extra collectors) on
// http://listen/metrics and returns that URL and the stop function. An address that cannot be
// listened on is an error naming the -listen flag.
func ServeMetrics(listen string, reg *instrument.Registry, extra ...prometheus.Collector) (url string, stop func(), err error) {
	col, err := collector.New(reg)
	if err != nil {
		return "", nil, err
	}
	promReg := prometheus.NewRegistry()
	for _, c := range append([]prometheus.Collector{col}, extra...) {
		if err := promReg.Register(c); err != nil {
			return "", nil, err
		}
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, fmt.Errorf("-listen %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	return "http://" + l.Addr().String() + "/metrics", Serve(l, mux), nil
}
