// Package promrun runs a local Prometheus server as a child process: it writes a configuration
// that scrapes a few loopback targets and evaluates rule files, starts the server so that it
// dies with its parent (Pdeathsig on Linux), waits until it is ready, reloads its configuration
// and stops it by PID. `stormwatch demo --prometheus` and the end-to-end tests (through
// internal/e2eprom) use it; it binds to loopback addresses only.
package promrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultInterval is the scrape and evaluation interval of a Config that sets none: short, so
// that alerts with short `for` durations fire and resolve within seconds of the data.
const DefaultInterval = time.Second

// Job is one scrape job: its name (the `job` label of its series and alerts) and its one
// target, host:port.
type Job struct {
	Name, Target string
}

// Config is what a server scrapes and evaluates.
type Config struct {
	// RuleFiles are the rule files to evaluate (absolute paths).
	RuleFiles []string
	// Jobs are the scrape jobs; job names must be unique.
	Jobs []Job
	// Interval is the scrape and evaluation interval; 0 means DefaultInterval.
	Interval time.Duration
}

// YAML returns the Prometheus configuration file of c. It scrapes native histograms.
func (c Config) YAML() string {
	iv := c.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", promDuration(iv), promDuration(iv))
	// stormwatch exports its latency histograms as native histograms: scrape them (Prometheus
	// then negotiates protobuf first), as the generated dashboards' quantiles expect.
	b.WriteString("  scrape_native_histograms: true\n")
	if len(c.RuleFiles) > 0 {
		b.WriteString("rule_files:\n")
		for _, f := range c.RuleFiles {
			fmt.Fprintf(&b, "  - %s\n", strconv.Quote(f))
		}
	}
	if len(c.Jobs) == 0 {
		b.WriteString("scrape_configs: []\n")
		return b.String()
	}
	b.WriteString("scrape_configs:\n")
	for _, j := range c.Jobs {
		fmt.Fprintf(&b, "  - job_name: %s\n    static_configs:\n      - targets: [%s]\n", strconv.Quote(j.Name), strconv.Quote(j.Target))
	}
	return b.String()
}

// promDuration writes d in Prometheus's duration syntax (whole milliseconds at least).
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// Options describe a server for Start.
type Options struct {
	// Bin is the prometheus executable.
	Bin string
	// Dir receives prometheus.yml and the TSDB (Dir/data); it must exist.
	Dir string
	// Listen is the server's host:port, a loopback address; port 0 picks a free port.
	Listen string
	// Config is what it scrapes and evaluates.
	Config Config
	// Output receives the server's stdout and stderr; nil means Dir/prometheus.log.
	Output io.Writer
	// LogLevel is Prometheus's --log.level; "" means warn.
	LogLevel string
}

// Server is a running Prometheus child process.
type Server struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:9090.
	URL string
	// LogFile is where its output goes (empty when Options.Output was set).
	LogFile string

	cmd        *exec.Cmd
	configFile string
	done       chan struct{} // closed once the process has been reaped
	err        error         // its exit error, valid after done
}

// ErrExited is returned (wrapped) when the server exits while it is being waited for.
var ErrExited = errors.New("prometheus exited")

// Start writes the configuration and starts the server; it does not wait for it to be ready
// (see Server.Ready). On Linux the process is in its own process group, so a Ctrl-C meant for
// the parent does not reach it (the parent stops it in order), and the kernel kills it if the
// parent dies first.
func Start(o Options) (*Server, error) {
	if o.Bin == "" {
		return nil, errors.New("promrun: no prometheus executable")
	}
	bin, err := filepath.Abs(o.Bin) // the process runs in Dir
	if err != nil {
		return nil, fmt.Errorf("promrun: %w", err)
	}
	if fi, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("promrun: %w", err)
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("promrun: %s is not an executable file", o.Bin)
	}
	listen, err := loopbackAddr(o.Listen)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + listen, configFile: filepath.Join(o.Dir, "prometheus.yml"), done: make(chan struct{})}
	if err := s.writeConfig(o.Config); err != nil {
		return nil, err
	}
	level := o.LogLevel
	if level == "" {
		level = "warn"
	}
	s.cmd = exec.Command(bin,
		"--config.file="+s.configFile,
		"--storage.tsdb.path="+filepath.Join(o.Dir, "data"),
		"--web.listen-address="+listen,
		"--log.level="+level,
	)
	s.cmd.Dir = o.Dir
	s.cmd.SysProcAttr = serverAttr()
	out := o.Output
	if out == nil {
		s.LogFile = filepath.Join(o.Dir, "prometheus.log")
		f, err := os.Create(s.LogFile)
		if err != nil {
			return nil, fmt.Errorf("promrun: %w", err)
		}
		defer f.Close() // the child has its own descriptor
		out = f
	}
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("promrun: starting %s: %w", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// loopbackAddr checks that addr is a loopback host:port and replaces port 0 by a free port.
func loopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("promrun: listen address %q: %w", addr, err)
	}
	if ip, err := netip.ParseAddr(host); host != "localhost" && (err != nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("promrun: listen address %q: not a loopback address", addr)
	}
	if port != "0" {
		return addr, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("promrun: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (s *Server) writeConfig(c Config) error {
	if err := os.WriteFile(s.configFile, []byte(c.YAML()), 0o644); err != nil {
		return fmt.Errorf("promrun: %w", err)
	}
	return nil
}

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Done is closed once the process has exited (and been reaped).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err returns the process's exit error once Done is closed (nil for exit status 0).
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Ready polls /-/ready every 100ms until it answers 200. It returns an error wrapping ErrExited
// when the process exits first, or ctx's error when ctx ends first.
func (s *Server) Ready(ctx context.Context, client *http.Client) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("%w before it was ready (%v)", ErrExited, s.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Reload rewrites the configuration as c and asks the server to load it (SIGHUP). Loading is
// asynchronous: poll the API (for example /api/v1/targets) to see its effect.
func (s *Server) Reload(c Config) error {
	if err := s.writeConfig(c); err != nil {
		return err
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("promrun: reloading: %w", err)
	}
	return nil
}

// Stop sends SIGTERM to the server's PID and waits for it to exit, at most grace; then it kills
// it. It returns the exit error (nil when it exited with status 0), or nil when it had already
// exited before. It is safe to call more than once.
func (s *Server) Stop(grace time.Duration) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.done:
		return s.err
	case <-t.C:
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("promrun: prometheus (pid %d) ignored SIGTERM for %s and was killed", s.Pid(), grace)
	}
}
