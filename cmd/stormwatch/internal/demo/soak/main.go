// Command soak runs `stormwatch demo --scenario outage` for a long time with an outage lasting
// most of the run, samples the process every few seconds, and fails if it grows. It is
// `make soak` (SOAK_DURATION, default 10m; SOAK_EVERY, default 5s), not part of `make test`: a
// soak takes minutes of wall time.
//
//	go run ./cmd/stormwatch/internal/demo/soak -stormwatch bin/stormwatch -duration 10m -every 5s
//
// The demo runs on 127.0.0.1 (a port the kernel picks) with its retry log in a temporary file.
// The outage begins at 15s and, unless -outage says otherwise, lasts until the end of the run.
// Every -every the soak records the demo's resident set size and open file descriptors (from
// /proc/<pid>, else the process collector's process_resident_memory_bytes and
// process_open_fds), its goroutines (go_goroutines), and the size and series count of its
// /metrics response, and prints a row. At the end it stops the demo with SIGTERM, which must
// end it with exit status 0 and its "stopped cleanly" line.
//
// The growth rule: the run is cut into thirds. The first is warm-up (start-up, the healthy
// start, the outage's onset and the breakers settling) and is ignored; the middle third is the
// baseline; the last third is compared with it. The median of the last third must not exceed
// the median of the middle third by more than: RSS +20% or +4 MiB, goroutines +10% or +10, fds
// +10% or +5 (whichever is larger), /metrics bytes +10%; and the series count must not exceed
// its maximum in the middle third at all (once the outage is steady, every series exists: a new
// one is a label value minted per call). Medians take a GC cycle or a burst of hanging calls in
// their stride; a leak moves every sample, so it moves the median. Any failed sample (/metrics
// unreachable) or an unclean stop fails the soak as well. Exit status: 0 PASS, 1 FAIL, 2 bad
// flags.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Timings of the soak around the demo.
const (
	// backstop is added to the demo's --duration: the soak stops the demo itself, and the
	// demo's own --duration only ends it if the soak died.
	backstop = 2 * time.Minute
	// readyWithin bounds the wait for the demo's first line (it says where /metrics is).
	readyWithin = time.Minute
	// stopWithin bounds the wait for the demo to exit after SIGTERM.
	stopWithin = 20 * time.Second
	// tailLines of the demo's output (its last status block) are shown at the end.
	tailLines = 6
	// outageStart is when the outage scenario's fault begins (demo time).
	outageStart = 15 * time.Second
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("stormwatch", "bin/stormwatch", "the stormwatch binary to soak")
	dur := fs.Duration("duration", 10*time.Minute, "how long to run the demo")
	every := fs.Duration("every", 5*time.Second, "sampling period")
	outage := fs.Duration("outage", 0, "how long the outage lasts from 15s on (0: until the end of the run)")
	rps := fs.Float64("rps", 20, "the demo's calls per second to each dependency")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "soak: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *every <= 0 || *dur/3 < MinPerWindow**every {
		fmt.Fprintf(stderr, "soak: -duration %s, -every %s: each third of the run needs at least %d samples\n", *dur, *every, MinPerWindow)
		return 2
	}
	if *outage < 0 {
		fmt.Fprintf(stderr, "soak: -outage %s: must not be negative\n", *outage)
		return 2
	}
	if *outage == 0 {
		*outage = *dur // from 15s on, past the end of the run
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp("", "stormwatch-soak-")
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	logFile := filepath.Join(tmp, "retry.log")

	demoArgs := []string{"demo", "--scenario", "outage", "--outage", outage.String(),
		"--duration", (*dur + backstop).String(), "--listen", "127.0.0.1:0",
		"--rps", fmt.Sprint(*rps), "--log-file", logFile}
	cmd := exec.Command(*bin, demoArgs...)
	out := newOutput()
	var errOut capped
	cmd.Stdout, cmd.Stderr = out, &errOut
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "soak: starting the demo: %v (build it with `make bin/stormwatch`)\n", err)
		return 1
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()

	ends := "the end of the run"
	if outageStart+*outage < *dur {
		ends = (outageStart + *outage).String()
	}
	fmt.Fprintf(stdout, "soak: %s %s (pid %d)\n", filepath.Base(*bin), strings.Join(demoArgs, " "), cmd.Process.Pid)
	fmt.Fprintf(stdout, "soak: outage from 15s to %s; a %s run, a sample every %s; warm-up [0, %s), middle [%s, %s), last [%s, %s]\n",
		ends, *dur, *every, *dur/3, *dur/3, 2**dur/3, 2**dur/3, *dur)

	var problems []string
	var samples []Sample
	var url string
	select {
	case url = <-out.url:
	case <-exited:
		problems = append(problems, "the demo exited before serving /metrics")
	case <-time.After(readyWithin):
		problems = append(problems, fmt.Sprintf("the demo did not say where /metrics is within %s", readyWithin))
	case <-ctx.Done():
		problems = append(problems, "interrupted")
	}
	if url != "" {
		samples, problems = sample(ctx, url, cmd.Process.Pid, *dur, *every, exited, stdout)
	}
	stopped := stopDemo(cmd, exited, &waitErr, out)
	if len(stopped) == 0 {
		fmt.Fprintln(stdout, "soak: SIGTERM stopped the demo: exit status 0, \"stopped cleanly\"")
	}
	problems = append(problems, stopped...)

	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "soak: the demo's last status:")
	for _, l := range out.last() {
		fmt.Fprintf(stdout, "  %s\n", l)
	}
	if fi, err := os.Stat(logFile); err == nil {
		n := 0
		if b, err := os.ReadFile(logFile); err == nil {
			n = bytes.Count(b, []byte("\n"))
		}
		fmt.Fprintf(stdout, "soak: retry log: %d records, %.1f MiB\n", n, float64(fi.Size())/mib)
	}
	if s := strings.TrimSpace(errOut.String()); s != "" {
		fmt.Fprintf(stdout, "soak: the demo's stderr:\n%s\n", s)
	}
	v := Judge(samples, *dur, Rule)
	v.Problems = append(problems, v.Problems...)
	fmt.Fprintf(stdout, "soak: growth rule (last third vs middle third, %d and %d samples):\n", count(samples, *dur, Middle), count(samples, *dur, Last))
	v.Print(stdout)
	if !v.Pass() {
		return 1
	}
	return 0
}

// sample measures the demo every period until dur has passed, printing a row per sample. It
// stops early, with a problem, if the demo exits or ctx ends.
func sample(ctx context.Context, url string, pid int, dur, every time.Duration, exited <-chan struct{}, w io.Writer) ([]Sample, []string) {
	client := &http.Client{Timeout: min(every, 10*time.Second)}
	defer client.CloseIdleConnections()
	start := time.Now()
	fmt.Fprintln(w, Header)
	var samples []Sample
	for i := time.Duration(1); i*every <= dur; i++ {
		t := time.NewTimer(time.Until(start.Add(i * every)))
		select {
		case <-t.C:
		case <-exited:
			t.Stop()
			return samples, []string{fmt.Sprintf("the demo exited after %s, before the end of the run", time.Since(start).Round(time.Second))}
		case <-ctx.Done():
			t.Stop()
			return samples, []string{fmt.Sprintf("interrupted after %s", time.Since(start).Round(time.Second))}
		}
		s := measure(ctx, client, url, pid)
		s.At = time.Since(start)
		samples = append(samples, s)
		fmt.Fprintln(w, Row(s, dur))
	}
	return samples, nil
}

// stopDemo ends the demo with SIGTERM (unless it has exited) and returns what went wrong: not
// exiting within stopWithin, an exit status other than 0, no "stopped cleanly" line.
func stopDemo(cmd *exec.Cmd, exited <-chan struct{}, waitErr *error, out *output) []string {
	var problems []string
	select {
	case <-exited:
	default:
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			problems = append(problems, fmt.Sprintf("signalling the demo: %v", err))
		}
		select {
		case <-exited:
		case <-time.After(stopWithin):
			_ = cmd.Process.Kill()
			<-exited
			return append(problems, fmt.Sprintf("the demo did not stop within %s of SIGTERM (killed)", stopWithin))
		}
	}
	if *waitErr != nil {
		problems = append(problems, fmt.Sprintf("the demo exited with %v, want exit status 0", *waitErr))
	}
	if !out.stoppedCleanly() {
		problems = append(problems, `the demo did not print "stopped cleanly"`)
	}
	return problems
}

// count returns how many successful samples fall in window w of a run lasting run.
func count(samples []Sample, run time.Duration, w Window) int {
	n := 0
	for _, s := range samples {
		if s.Err == nil && window(s.At, run) == w {
			n++
		}
	}
	return n
}

// metricsURL finds the /metrics address on the demo's first line.
var metricsURL = regexp.MustCompile(`metrics on (http://127\.0\.0\.1:[0-9]+/metrics)`)

// output is the demo's stdout: it hands over the /metrics URL once seen, notes the clean-stop
// line and keeps the last tailLines lines.
type output struct {
	mu      sync.Mutex
	partial []byte
	tail    []string
	url     chan string
	sent    bool
	clean   bool
}

func newOutput() *output { return &output{url: make(chan string, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.line(string(o.partial[:i]))
		o.partial = o.partial[i+1:]
	}
	return len(p), nil
}

// line handles one complete line. Called with mu held.
func (o *output) line(l string) {
	if m := metricsURL.FindStringSubmatch(l); m != nil && !o.sent {
		o.url <- m[1]
		o.sent = true
	}
	if strings.Contains(l, "stopped cleanly") {
		o.clean = true
	}
	o.tail = append(o.tail, l)
	if len(o.tail) > tailLines {
		o.tail = o.tail[len(o.tail)-tailLines:]
	}
}

func (o *output) last() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.tail...)
}

func (o *output) stoppedCleanly() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.clean
}

// capped keeps the first 8 KiB written to it (the demo's stderr, normally empty).
type capped struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := 8<<10 - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
