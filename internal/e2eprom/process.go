package e2eprom

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/internal/promrun"
)

// Command describes a child process for Start.
type Command struct {
	// Name names the process in messages; its output goes to Dir/Name.log.
	Name string
	// Dir is the process's working directory (normally the test's t.TempDir()).
	Dir string
	// Bin is the executable and Args its arguments.
	Bin  string
	Args []string
	// Lines, when non-nil, receives the process's stdout line by line instead of the log file;
	// a line nobody is ready to receive is dropped.
	Lines chan<- string
	// StopSignal is what Stop sends to the process's PID; nil means SIGTERM.
	StopSignal os.Signal
	// StopGrace is how long Stop waits after StopSignal before it kills the process; zero
	// means 15s.
	StopGrace time.Duration
}

// Process is a started child process. It is stopped by its PID: by Stop, or at the latest by
// the test's cleanup; on Linux the kernel also kills it if the test process dies first.
type Process struct {
	// Name is Command.Name.
	Name  string
	cmd   *exec.Cmd
	done  chan error // holds the exit error once the process has been reaped
	log   string
	sig   os.Signal
	grace time.Duration
}

// Start starts c and registers a cleanup that stops it. It fails the test if the process
// cannot be started.
func Start(t testing.TB, c Command) *Process {
	t.Helper()
	logPath := filepath.Join(c.Dir, c.Name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(c.Bin, c.Args...)
	cmd.Dir = c.Dir
	cmd.Stderr = logFile
	cmd.SysProcAttr = promrun.SysProcAttr()
	var stdout io.ReadCloser
	if c.Lines != nil {
		stdout, err = cmd.StdoutPipe()
		require.NoError(t, err)
	} else {
		cmd.Stdout = logFile
	}
	p := &Process{Name: c.Name, cmd: cmd, done: make(chan error, 1), log: logPath,
		sig: c.StopSignal, grace: c.StopGrace}
	if p.sig == nil {
		p.sig = syscall.SIGTERM
	}
	if p.grace == 0 {
		p.grace = 15 * time.Second
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		require.NoError(t, err, c.Name)
	}
	var readers sync.WaitGroup
	if stdout != nil {
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				select {
				case c.Lines <- sc.Text():
				default: // nobody listens any more
				}
			}
		}()
	}
	go func() {
		readers.Wait() // all reads from the pipe come before Wait
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	t.Logf("started %s (pid %d): %s %s", c.Name, cmd.Process.Pid, filepath.Base(c.Bin), strings.Join(c.Args, " "))
	t.Cleanup(func() { _ = p.Stop(t) })
	return p
}

// Stop sends the stop signal to the process's PID, waits for it to exit for the stop grace,
// then kills it (failing the test). It returns the exit error (nil for exit status 0), or nil
// when the process had already exited before (an earlier Stop, for example).
func (p *Process) Stop(t testing.TB) error {
	if exited, _ := p.exited(); exited {
		return nil
	}
	_ = p.cmd.Process.Signal(p.sig)
	select {
	case err := <-p.done:
		p.done <- err // keep it for a second Stop
		return err
	case <-time.After(p.grace):
		t.Errorf("%s (pid %d) ignored %v for %s; killing it", p.Name, p.cmd.Process.Pid, p.sig, p.grace)
		_ = p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
		return err
	}
}

// Pid returns the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process's PID.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits at most d for the process to exit and returns its exit error (nil for status 0);
// it fails the test when the process is still running after d.
func (p *Process) Wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(d):
		t.Fatalf("%s (pid %d) still running after %s", p.Name, p.Pid(), d)
		return nil
	}
}

// exited reports whether the process has exited, and its exit error if so.
func (p *Process) exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Tail returns the last n lines of the process's log (stderr, and stdout unless it went to
// Command.Lines).
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
