// Package exampletest holds the test helpers the examples' main_test.go files share.
package exampletest

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/internal/exampleutil"
)

// SyncBuffer is a bytes.Buffer safe for concurrent writers (an example's log or status output
// in a test); WaitFor blocks until it holds a string.
type SyncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed and replaced by every Write
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// String returns what was written.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor waits until the buffer contains want, or fails the test after timeout (a bound on a
// failure, not a measure).
func (s *SyncBuffer) WaitFor(t testing.TB, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		found := strings.Contains(s.b.String(), want)
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		if found {
			return
		}
		select {
		case <-written:
		case <-deadline:
			t.Fatalf("%q not written within %s; got:\n%s", want, timeout, s.String())
		}
	}
}

// ExitCase is a command line and the exit line the example must print for it on stderr.
type ExitCase struct {
	Args   []string
	Stderr string // without the "name: " prefix and the " (run with -h for usage)" suffix
}

// TestExitCodes checks an example's exit-code convention (see the package documentation)
// through parseArgs, its command-line entry: no flags run; -h and --help print the usage (which
// lists -duration) on stdout and exit 0; an unknown flag, a flag without its value and each of
// bad exit 2 with one line on stderr.
func TestExitCodes(t *testing.T, name, usage string, parseArgs func(args []string, stdout, stderr io.Writer) int, bad ...ExitCase) {
	t.Helper()
	cases := append([]ExitCase{
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-duration"}, "flag needs an argument: -duration"},
	}, bad...)
	for _, c := range cases {
		var stdout, stderr strings.Builder
		if code := parseArgs(c.Args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit code %d, want 2", c.Args, code)
		}
		if want := name + ": " + c.Stderr + " (run with -h for usage)\n"; stderr.String() != want {
			t.Errorf("%v: stderr %q, want %q", c.Args, stderr.String(), want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q, want nothing", c.Args, stdout.String())
		}
	}
	for _, help := range []string{"-h", "--help"} {
		var stdout, stderr strings.Builder
		if code := parseArgs([]string{help}, &stdout, &stderr); code != 0 {
			t.Errorf("%s: exit code %d, want 0", help, code)
		}
		if out := stdout.String(); !strings.HasPrefix(out, "usage: "+usage+"\n") || !strings.Contains(out, "-duration") {
			t.Errorf("%s: usage %q", help, out)
		}
		if stderr.Len() != 0 {
			t.Errorf("%s: stderr %q", help, stderr.String())
		}
	}
	if code := parseArgs(nil, io.Discard, io.Discard); code != exampleutil.Run {
		t.Errorf("no flags: exit code %d, want Run", code)
	}
}
