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
	o, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
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
	d, err := startDemo(o, logFile)
	if err != nil {
		fmt.Fprintf(stderr, "soak: starting the demo: %v (build it with `make bin/stormwatch`)\n", err)
		return 1
	}
	o.printPlan(stdout, d)

	var samples []Sample
	url, problems := waitURL(ctx, d)
	if url != "" {
		samples, problems = sample(ctx, url, d.cmd.Process.Pid, o.dur, o.every, d.exited, stdout)
	}
	stopped := stopDemo(d.cmd, d.exited, &d.waitErr, d.out)
	if len(stopped) == 0 {
		fmt.Fprintln(stdout, "soak: SIGTERM stopped the demo: exit status 0, \"stopped cleanly\"")
	}
	problems = append(problems, stopped...)
	d.printEnd(stdout, logFile)
	v := Judge(samples, o.dur, Rule)
	v.Problems = append(problems, v.Problems...)
	fmt.Fprintf(stdout, "soak: growth rule (last third vs middle third, %d and %d samples):\n", count(samples, o.dur, Middle), count(samples, o.dur, Last))
	v.Print(stdout)
	if !v.Pass() {
		return 1
	}
	return 0
}

// options are the soak's flags.
type options struct {
	bin                string
	dur, every, outage time.Duration
	rps                float64
}

// parseFlags parses and checks the flags. When ok is false the soak ends with exit status code
// (0 for -help, 2 for bad flags, which it has reported on stderr).
func parseFlags(args []string, stderr io.Writer) (o options, code int, ok bool) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "stormwatch", "bin/stormwatch", "the stormwatch binary to soak")
	fs.DurationVar(&o.dur, "duration", 10*time.Minute, "how long to run the demo")
	fs.DurationVar(&o.every, "every", 5*time.Second, "sampling period")
	fs.DurationVar(&o.outage, "outage", 0, "how long the outage lasts from 15s on (0: until the end of the run)")
	fs.Float64Var(&o.rps, "rps", 20, "the demo's calls per second to each dependency")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, 0, false
		}
		return o, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "soak: unexpected arguments %q\n", fs.Args())
		return o, 2, false
	}
	if o.every <= 0 || o.dur/3 < MinPerWindow*o.every {
		fmt.Fprintf(stderr, "soak: -duration %s, -every %s: each third of the run needs at least %d samples\n", o.dur, o.every, MinPerWindow)
		return o, 2, false
	}
	if o.outage < 0 {
		fmt.Fprintf(stderr, "soak: -outage %s: must not be negative\n", o.outage)
		return o, 2, false
	}
	if o.outage == 0 {
		o.outage = o.dur // from 15s on, past the end of the run
	}
	return o, 0, true
}

// printPlan prints the demo's command line and the run's schedule.
func (o options) printPlan(stdout io.Writer, d *demoProc) {
	ends := "the end of the run"
	if outageStart+o.outage < o.dur {
		ends = (outageStart + o.outage).String()
	}
	fmt.Fprintf(stdout, "soak: %s %s (pid %d)\n", filepath.Base(o.bin), strings.Join(d.args, " "), d.cmd.Process.Pid)
	fmt.Fprintf(stdout, "soak: outage from 15s to %s; a %s run, a sample every %s; warm-up [0, %s), middle [%s, %s), last [%s, %s]\n",
		ends, o.dur, o.every, o.dur/3, o.dur/3, 2*o.dur/3, 2*o.dur/3, o.dur)
}

// demoProc is the running demo: its command, its output and its exit.
type demoProc struct {
	cmd     *exec.Cmd
	args    []string
	out     *output
	errOut  capped
	exited  chan struct{} // closed once the demo has exited; waitErr is then set
	waitErr error
}

// startDemo starts `stormwatch demo --scenario outage` as o asks, its retry log in logFile.
func startDemo(o options, logFile string) (*demoProc, error) {
	d := &demoProc{out: newOutput(), exited: make(chan struct{})}
	d.args = []string{"demo", "--scenario", "outage", "--outage", o.outage.String(),
		"--duration", (o.dur + backstop).String(), "--listen", "127.0.0.1:0",
		"--rps", fmt.Sprint(o.rps), "--log-file", logFile}
	d.cmd = exec.Command(o.bin, d.args...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, &d.errOut
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.waitErr = d.cmd.Wait(); close(d.exited) }()
	return d, nil
}

// waitURL waits for the demo's first line, which says where /metrics is. An empty URL comes
// with the problem that prevented it.
func waitURL(ctx context.Context, d *demoProc) (string, []string) {
	select {
	case url := <-d.out.url:
		return url, nil
	case <-d.exited:
		return "", []string{"the demo exited before serving /metrics"}
	case <-time.After(readyWithin):
		return "", []string{fmt.Sprintf("the demo did not say where /metrics is within %s", readyWithin)}
	case <-ctx.Done():
		return "", []string{"interrupted"}
	}
}

// printEnd prints the demo's last status, the retry log's size and the demo's stderr.
func (d *demoProc) printEnd(stdout io.Writer, logFile string) {
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "soak: the demo's last status:")
	for _, l := range d.out.last() {
		fmt.Fprintf(stdout, "  %s\n", l)
	}
	if fi, err := os.Stat(logFile); err == nil {
		n := 0
		if b, err := os.ReadFile(logFile); err == nil {
			n = bytes.Count(b, []byte("\n"))
		}
		fmt.Fprintf(stdout, "soak: retry log: %d records, %.1f MiB\n", n, float64(fi.Size())/mib)
	}
	if s := strings.TrimSpace(d.errOut.String()); s != "" {
		fmt.Fprintf(stdout, "soak: the demo's stderr:\n%s\n", s)
	}
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
