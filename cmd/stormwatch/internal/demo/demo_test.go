package demo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// guard bounds every wait of these tests for an event that must happen; it is never a measure.
const guard = 10 * time.Second

// epoch is the fake clocks' start: the time the tests began, because httpx measures the time
// left before an attempt's deadline (which the fake clock sets) on the wall clock.
var epoch = time.Now()

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:9464", true},
		{"127.0.0.1:0", true},
		{"127.1.2.3:80", true},
		{"[::1]:9464", true},
		{"localhost:9464", true},
		{"0.0.0.0:9464", false},
		{":9464", false},
		{"[::]:9464", false},
		{"10.0.0.1:9464", false},
		{"example.com:9464", false},
		{"127.0.0.1", false},
		{"127.0.0.1:http-nonsense", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := CheckLoopback(tc.addr)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			var ue *UsageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), "--listen")
		})
	}
}

func TestConfigErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Listen: "0.0.0.0:1"}, `--listen "0.0.0.0:1"`},
		{Config{Scenario: "meltdown"}, `--scenario "meltdown"`},
		{Config{Speed: -1}, "--speed -1"},
		{Config{Speed: 5000}, "--speed 5000"},
		{Config{Duration: -time.Second}, "--duration -1s"},
		{Config{Rate: -3}, "--rps -3"},
		{Config{Rate: 100, Speed: 100}, "--rps 100"},
		{Config{LogFormat: "xml"}, `--log-format "xml"`},
		{Config{LogFile: os.TempDir()}, "--log-file"},
		{Config{Outage: -time.Second}, "--outage -1s"},
		{Config{Scenario: ScenarioSteady, Outage: time.Minute}, `--outage: scenario "steady"`},
		{Config{Scenario: ScenarioRetryStorm, Outage: time.Minute}, `--outage: scenario "retry-storm"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			var ue *UsageError
			require.ErrorAs(t, tc.cfg.Validate(), &ue)
			assert.Contains(t, ue.Error(), tc.want)
			err := Run(context.Background(), tc.cfg)
			require.ErrorAs(t, err, &ue, "Run refuses it too, before starting anything")
		})
	}
	assert.NoError(t, Config{}.Validate(), "the zero Config is the default demo")
}

func TestScenariosAreValid(t *testing.T) {
	for _, name := range ScenarioNames {
		if name == ScenarioRetryStorm {
			continue
		}
		sc, err := LookupScenario(name)
		require.NoError(t, err)
		assert.NoError(t, sc.validate(), name)
		assert.NotEmpty(t, sc.Summary)
	}
	_, err := LookupScenario("nope")
	assert.ErrorContains(t, err, "steady|outage")
	bad := Scenario{Name: "x", Phases: []Phase{{At: 0, Faults: map[string]Fault{"db": Steady}}}}
	assert.ErrorContains(t, bad.validate(), `unknown dependency "db"`)
	bad = Scenario{Name: "x", Phases: []Phase{{At: 0, Faults: map[string]Fault{Payments: {ErrorRate: 0.7, HangRate: 0.7}}}}}
	assert.ErrorContains(t, bad.validate(), "add up to")
}

// draws is a clock.Rand that returns its values in turn (then the last one again).
type draws struct {
	mu sync.Mutex
	v  []float64
}

func (d *draws) Float64() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.v[0]
	if len(d.v) > 1 {
		d.v = d.v[1:]
	}
	return x
}

// serveOne runs one request through d's handler and returns the recorded answer.
func serveOne(t *testing.T, d *Downstream, ctx context.Context) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	d.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/"+Payments, nil).WithContext(ctx))
	return w
}

// TestDownstreamFaults drives each kind of fault with a scripted draw and a fake clock.
func TestDownstreamFaults(t *testing.T) {
	clk := clock.NewFake(epoch)
	// Every request draws its fault share first; latency jitter draws second.
	d := NewDownstream(clk, &draws{v: []float64{0.5}}, 10, Payments)
	t.Cleanup(d.Close)

	assert.Equal(t, Healthy, d.Fault(Payments), "a new endpoint is healthy")
	require.NoError(t, d.SetFault(Payments, Fault{}))
	assert.Equal(t, http.StatusOK, serveOne(t, d, context.Background()).Code, "no fault: answered at once")

	require.NoError(t, d.SetFault(Payments, Fault{ErrorRate: 1, Status: http.StatusBadGateway}))
	assert.Equal(t, http.StatusBadGateway, serveOne(t, d, context.Background()).Code)

	require.NoError(t, d.SetFault(Payments, Fault{RateLimitRate: 1, RetryAfter: 2 * time.Second}))
	w := serveOne(t, d, context.Background())
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "0.2", w.Header().Get("Retry-After"), "2s of demo time at speed 10")

	// Shares are drawn in order reset, hang, rate limit, error: a draw of 0.5 with 0.4 of
	// rate limits and 0.4 of errors is an error.
	require.NoError(t, d.SetFault(Payments, Fault{RateLimitRate: 0.4, ErrorRate: 0.4}))
	assert.Equal(t, http.StatusServiceUnavailable, serveOne(t, d, context.Background()).Code)

	// Latency: 3s of demo time is 300ms at speed 10, plus half of the 1s jitter (50ms).
	require.NoError(t, d.SetFault(Payments, Fault{Latency: 3 * time.Second, Jitter: time.Second}))
	answered := make(chan int, 1)
	go func() { answered <- serveOne(t, d, context.Background()).Code }()
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(349 * time.Millisecond)
	select {
	case <-answered:
		t.Fatal("answered before its latency")
	default:
	}
	clk.Advance(time.Millisecond)
	select {
	case code := <-answered:
		assert.Equal(t, http.StatusOK, code)
	case <-time.After(guard):
		t.Fatal("no answer after the latency")
	}

	// A hanging request gets no answer: its handler returns when the caller has gone (here
	// before it arrived) or when the downstream is closed.
	require.NoError(t, d.SetFault(Payments, Fault{HangRate: 1}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w = serveOne(t, d, ctx)
	assert.Empty(t, w.Body.String(), "no answer")
	assert.False(t, w.Flushed)
	assert.Equal(t, uint64(1), d.endpoints[Payments].hung.Load())
	closed := NewDownstream(clk, nil, 1, Payments)
	require.NoError(t, closed.SetFault(Payments, Fault{HangRate: 1}))
	closed.Close()
	assert.Empty(t, serveOne(t, closed, context.Background()).Body.String(), "a closed downstream releases its hanging requests")

	assert.Error(t, d.SetFault(Payments, Fault{ErrorRate: 2}))
	assert.Error(t, d.SetFault("db", Fault{}))
	assert.Equal(t, uint64(6), d.Received(Payments))
	w = httptest.NewRecorder()
	d.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/db", nil))
	assert.Equal(t, http.StatusNotFound, w.Code)
}

// A reset needs a real connection: the client sees it fail without an answer.
func TestDownstreamResetsTheConnection(t *testing.T) {
	d := NewDownstream(nil, nil, 1, Payments)
	require.NoError(t, d.SetFault(Payments, Fault{ResetRate: 1}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := serve(l, d)
	t.Cleanup(func() { d.Close(); s.stop(time.Second) })
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	_, err = (&http.Client{Transport: tr, Timeout: guard}).Get("http://" + s.addr + "/" + Payments)
	require.Error(t, err)
	assert.Equal(t, uint64(1), d.endpoints[Payments].reset.Load())
}

// TestLoadPacesArrivalsOnTheClock: arrival i is due at start + i/rate; a late wake-up makes the
// missed arrivals at once; arrivals beyond maxInFlight are shed, not queued.
func TestLoadPacesArrivalsOnTheClock(t *testing.T) {
	clk := clock.NewFake(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	var calls, shed atomic.Int64
	arrived := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		load{rate: 10, maxInFlight: 3}.run(ctx, clk, epoch, func(context.Context) {
			calls.Add(1)
			arrived <- struct{}{}
			<-release
		}, func() { shed.Add(1) })
	}()
	wait := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-arrived:
			case <-time.After(guard):
				t.Fatalf("expected %d arrivals, got %d", n, calls.Load())
			}
		}
	}
	require.True(t, clk.WaitForTimers(1, done))
	clk.Advance(99 * time.Millisecond)
	require.True(t, clk.WaitForTimers(1, done))
	assert.Zero(t, calls.Load(), "nothing due before 100ms")
	clk.Advance(time.Millisecond)
	wait(1)
	clk.Advance(200 * time.Millisecond) // arrivals 2 and 3, at once
	wait(2)
	require.True(t, clk.WaitForTimers(1, done))
	clk.Advance(200 * time.Millisecond) // 4 and 5: three in flight already
	require.True(t, clk.WaitForTimers(1, done), "the load waits for arrival 6")
	assert.Equal(t, int64(3), calls.Load())
	assert.Equal(t, int64(2), shed.Load(), "beyond maxInFlight: shed")
	cancel()
	select {
	case <-done:
		t.Fatal("the load returned with calls in flight")
	default:
	}
	close(release) // the calls in flight finish
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("the load did not stop")
	}
	assert.Equal(t, int64(3), calls.Load(), "no arrival after the stop")
}

// printed collects a board's output lines and signals each one.
type printed struct {
	mu    sync.Mutex
	lines []string
	ch    chan string
}

func newPrinted() *printed { return &printed{ch: make(chan string, 1000)} }

func (p *printed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		p.lines = append(p.lines, l)
		p.ch <- l
	}
	return len(b), nil
}

func (p *printed) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// next waits for the next line that contains want and returns it.
func (p *printed) next(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(guard)
	for {
		select {
		case l := <-p.ch:
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("no line with %q; output:\n%s", want, p.String())
		}
	}
}

// TestScriptAppliesPhasesInOrder runs the outage script at speed 5 on a fake clock: each phase's
// faults are set at its scaled time, in order, and announced.
func TestScriptAppliesPhasesInOrder(t *testing.T) {
	clk := clock.NewFake(epoch)
	sc, err := LookupScenario(ScenarioOutage)
	require.NoError(t, err)
	down := NewDownstream(clk, nil, 5, Dependencies...)
	out := newPrinted()
	b := &board{out: out}
	var phase atomic.Pointer[string]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runScript(ctx, clk, sc, down, 5, epoch, &phase, b) }()

	require.True(t, clk.WaitForTimers(1, done))
	clk.Advance(3*time.Second - time.Millisecond) // 15s of demo time at ×5, minus 1ms
	require.True(t, clk.WaitForTimers(1, done))
	assert.Nil(t, phase.Load(), "the fault has not begun")
	assert.Equal(t, Healthy, down.Fault(Payments))
	clk.Advance(time.Millisecond)
	assert.Equal(t, "t=15s: payments down, inventory flaky, recommendations slow", out.next(t, "t="))
	assert.Equal(t, sc.Phases[1].Faults[Payments], down.Fault(Payments))
	assert.Equal(t, sc.Phases[1].Faults[Inventory], down.Fault(Inventory))
	clk.Advance(12 * time.Second) // 75s of demo time
	assert.Equal(t, "t=1m15s: recovered", out.next(t, "t="))
	assert.Equal(t, Steady, down.Fault(Payments))
	assert.Equal(t, "recovered", *phase.Load())
	select {
	case <-done: // the last phase lasts until the end of the run
	case <-time.After(guard):
		t.Fatal("the script did not end after its last phase")
	}
	cancel()
}

// TestStatusLinesOnTheClock: without a terminal, the block is printed every StatusEvery of the
// clock, headed by the demo time.
func TestStatusLinesOnTheClock(t *testing.T) {
	clk := clock.NewFake(epoch)
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	deps := make([]*dependency, len(Dependencies))
	for i, name := range Dependencies {
		deps[i], err = newDependency(reg, name, "http://downstream.invalid/"+name, hanging(), DefaultProfiles()[name], 2, clk)
		require.NoError(t, err)
	}
	out := newPrinted()
	b := &board{out: out}
	var phase atomic.Pointer[string]
	p := "steady"
	phase.Store(&p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	cfg := Config{Scenario: ScenarioSteady, Speed: 2, StatusEvery: 5 * time.Second}
	go func() { defer close(done); showStatus(ctx, cfg, clk, deps, epoch, &phase, b) }()
	for _, want := range []string{"t=10s", "t=20s"} { // 5s of wall time at ×2 each
		require.True(t, clk.WaitForTimers(1, done))
		clk.Advance(5 * time.Second)
		assert.Equal(t, "── steady ×2 t="+strings.TrimPrefix(want, "t=")+" · steady ", out.next(t, "──"))
		assert.Equal(t, columns(false), out.next(t, "dependency"))
		assert.Equal(t, "payments        closed           0.0      0.0         0          0", out.next(t, Payments))
	}
	cancel()
	<-done
}

// scripted is a fake downstream transport: it records each request and, unless answer is set,
// never answers — a request returns its context's error once its caller gives up.
type scripted struct {
	arrived chan *http.Request
	answer  func(*http.Request) (*http.Response, error)
}

func hanging() *scripted { return &scripted{arrived: make(chan *http.Request, 10000)} }

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	s.arrived <- r
	if s.answer != nil {
		return s.answer(r)
	}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// testProfiles are the default profiles with a one-hour time limit per attempt and per call:
// the wall clock (which httpx and http.Client use for them) never interferes with a test on a
// fake clock.
func testProfiles() map[string]Profile {
	ps := DefaultProfiles()
	for name, p := range ps {
		p.AttemptTimeout, p.MaxDuration = time.Hour, time.Hour
		ps[name] = p
	}
	return ps
}

// TestStoppingTheDemoCountsCallsInFlightAsAborted stops a demo whose downstream never answers,
// with calls in flight at every dependency, by Ctrl-C (the context) and by the end of
// --duration: every call is counted once, as aborted; no fallback of any cause runs; the retry
// log has no gave_up (ERROR) record; the run returns nil and releases its port.
func TestStoppingTheDemoCountsCallsInFlightAsAborted(t *testing.T) {
	const rounds = 5 // arrivals per dependency: fewer than the smallest bulkhead (8)
	for _, stop := range []string{"interrupted", "duration"} {
		t.Run(stop, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			reg, err := instrument.NewRegistry()
			require.NoError(t, err)
			down := hanging()
			var stdout, stderr syncBuffer
			ready := make(chan string, 1)
			cfg := Config{
				Listen: "127.0.0.1:0", Scenario: ScenarioSteady, Rate: 10, Clock: clk, Transport: down,
				Profiles: testProfiles(), Registry: reg, Stdout: &stdout, Stderr: &stderr, LogFormat: "json",
				Ready: func(u string) { ready <- u },
			}
			timers := 4 // three loads and the status line
			if stop == "duration" {
				cfg.Duration = rounds*100*time.Millisecond + 50*time.Millisecond
				timers++
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			stopped := make(chan struct{}) // closed when Run has returned
			go func() { done <- Run(ctx, cfg); close(stopped) }()
			var metricsURL string
			select {
			case metricsURL = <-ready:
			case err := <-done:
				t.Fatalf("Run returned early: %v", err)
			}

			for round := range rounds {
				// Each dependency's load waits for its next arrival; each call in flight
				// holds its attempt's timer.
				require.True(t, clk.WaitForTimers(timers+3*round, stopped), "the demo stopped early")
				clk.Advance(100 * time.Millisecond)
				for range Dependencies {
					select {
					case <-down.arrived:
					case <-time.After(guard):
						t.Fatalf("round %d: missing arrivals (%d timers); stdout:\n%s\nstderr:\n%s", round, clk.Timers(), stdout.String(), stderr.String())
					}
				}
			}
			require.True(t, clk.WaitForTimers(timers+3*rounds, stopped), "the demo stopped early")
			body := get(t, metricsURL)
			assert.Contains(t, body, `resilience_circuitbreaker_state{name="payments",state="closed"} 1`)
			assert.Contains(t, body, "go_goroutines")

			if stop == "duration" {
				clk.Advance(50 * time.Millisecond)
			} else {
				cancel()
			}
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(guard):
				t.Fatal("the demo did not stop")
			}

			for _, dep := range Dependencies {
				rs := instrumentRetry(t, reg, dep).Snapshot()
				var total uint64
				for _, n := range rs.Calls {
					total += n
				}
				assert.Equal(t, uint64(rounds), total, "%s: every call counted once", dep)
				assert.Equal(t, uint64(rounds), rs.Calls[catalog.RetryAborted], "%s: as aborted", dep)
				assert.Zero(t, rs.Retries, dep)
				fb := instrumentFallback(t, reg, dep).Snapshot()
				for _, c := range catalog.Causes {
					assert.Zero(t, fb.Calls[c], "%s: fallback %s", dep, c)
				}
			}
			assert.Len(t, down.arrived, 0, "no attempt after the stop")
			assert.NotContains(t, stderr.String(), `"gave_up"`)
			assert.NotContains(t, stderr.String(), `"level":"ERROR"`)
			want := "stormwatch demo: interrupted, stopped cleanly"
			if stop == "duration" {
				want = "stormwatch demo: --duration 550ms reached, stopped cleanly"
			}
			assert.Contains(t, stdout.String(), want)
			assert.Contains(t, stdout.String(), "payments        closed             5        0         0          0",
				"the final totals: 5 calls, no retry, no rejection, no fallback")

			addr := strings.TrimSuffix(strings.TrimPrefix(metricsURL, "http://"), "/metrics")
			l, err := net.Listen("tcp", addr)
			require.NoError(t, err, "the port is released")
			_ = l.Close()
		})
	}
}

func instrumentRetry(t *testing.T, reg *instrument.Registry, name string) *retry.Retry {
	t.Helper()
	for _, r := range reg.Retries() {
		if r.Name == name {
			return r.Value
		}
	}
	t.Fatalf("no retry %q", name)
	return nil
}

func instrumentFallback(t *testing.T, reg *instrument.Registry, name string) *fallback.Fallback {
	t.Helper()
	for _, f := range reg.Fallbacks() {
		if f.Name == name {
			return f.Value
		}
	}
	t.Fatalf("no fallback %q", name)
	return nil
}

func get(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: guard, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestListenAddressInUseIsARuntimeError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	err = Run(context.Background(), Config{Listen: l.Addr().String(), Duration: time.Second})
	require.Error(t, err)
	var ue *UsageError
	assert.False(t, errors.As(err, &ue))
	assert.Contains(t, err.Error(), "listening on")
}

// TestRunUsesTheGivenListener: a caller that bound the listener (to know its address first)
// gets it served and closed.
func TestRunUsesTheGivenListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var got string
	ctx, cancel := context.WithCancel(context.Background())
	err = Run(ctx, Config{Listener: l, Scenario: ScenarioSteady, Transport: hanging(), Clock: clock.NewFake(epoch),
		Ready: func(u string) { got = get(t, u); cancel() }})
	require.NoError(t, err)
	assert.Contains(t, got, "resilience_retry_calls_total")
	l2, err := net.Listen("tcp", l.Addr().String())
	require.NoError(t, err, "Run closed the listener")
	_ = l2.Close()
}

// TestRetryLogDestination: the retry log goes to stderr, unless stdout and stderr are the same
// terminal (then a new file in the temporary directory), or --log-file says otherwise.
func TestRetryLogDestination(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	own := filepath.Join(t.TempDir(), "retries.log")
	for _, tc := range []struct {
		name            string
		cfg             Config
		where, inStderr string
	}{
		{"plain", Config{}, "on stderr", "x"},
		{"stdout a terminal, stderr redirected", Config{TTY: true}, "on stderr", "x"},
		{"terminal", Config{TTY: true, StderrTTY: true}, "in " + filepath.Join(tmp, "stormwatch-demo-"), ""},
		{"terminal, --log-file -", Config{TTY: true, StderrTTY: true, LogFile: "-"}, "on stderr", "x"},
		{"--log-file path", Config{LogFile: own}, "in " + own, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			tc.cfg.Stderr = &stderr
			sink, err := openLog(tc.cfg, &board{out: io.Discard, tty: tc.cfg.TTY})
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(sink.where, tc.where), sink.where)
			_, err = sink.w.Write([]byte("x"))
			require.NoError(t, err)
			sink.close()
			assert.Equal(t, tc.inStderr, stderr.String())
			if path, ok := strings.CutPrefix(sink.where, "in "); ok {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, "x", string(b))
				assert.True(t, strings.HasSuffix(path, ".log"))
			}
		})
	}
	_, err := openLog(Config{LogFile: filepath.Join(tmp, "no", "such", "dir", "x.log")}, &board{out: io.Discard})
	assert.ErrorContains(t, err, "--log-file")
}

// TestRunSaysWhereTheLogIs: the first line names the retry log's file on a terminal.
func TestRunSaysWhereTheLogIs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var stdout syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	err := Run(ctx, Config{Listen: "127.0.0.1:0", Scenario: ScenarioSteady, Transport: hanging(), Clock: clock.NewFake(epoch),
		Stdout: &stdout, TTY: true, StderrTTY: true, Ready: func(string) { cancel() }})
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(tmp, LogFilePattern))
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Contains(t, stdout.String(), "retry log in "+files[0])
}

// TestRetryStormStoppedEarlyIsNotAFailure: Ctrl-C and the end of --duration during the replay
// end the run cleanly (nil: exit 0), with what was measured so far.
func TestRetryStormStoppedEarlyIsNotAFailure(t *testing.T) {
	for _, stop := range []string{"interrupted", "duration"} {
		t.Run(stop, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			var stdout syncBuffer
			var rep *StormReport
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := Config{Listen: "127.0.0.1:0", Scenario: ScenarioRetryStorm, Speed: 10, Clock: clk, Stdout: &stdout,
				StormResult: func(r StormReport) { rep = &r }}
			cfg.Ready = func(string) { cancel() }
			if stop == "duration" {
				cfg.Duration = time.Minute
				cfg.Ready = func(string) { clk.Advance(time.Minute) }
			}
			require.NoError(t, Run(ctx, cfg))
			require.NotNil(t, rep)
			assert.False(t, rep.Complete())
			assert.Zero(t, rep.Measured)
			assert.Contains(t, stdout.String(), "retry-storm: stopped during the naive setup: nothing measured")
			want := "interrupted, stopped cleanly"
			if stop == "duration" {
				want = "--duration 1m0s reached, stopped cleanly"
			}
			assert.Contains(t, stdout.String(), want)
		})
	}
}

func TestStormReportTable(t *testing.T) {
	r := StormReport{
		Naive:      StormResult{Amplification: 9, FaultRequests: 50, BankRequests: 450, Observed: 30 * time.Second, Real: 10, Degraded: 0, Failed: 90},
		Stormwatch: StormResult{Amplification: 0.13, FaultRequests: 50, BankRequests: 7, Recovered: true, TimeToRecover: 3 * time.Second, Real: 60, Degraded: 40},
		Measured:   2,
	}
	assert.True(t, r.Complete())
	assert.Equal(t, []string{
		"                                               naive                  stormwatch",
		"  bank requests per user request (fault)       9.00×                  0.13×",
		"    (user requests during the fault → at bank) 50 → 450               50 → 7",
		"  time to recover after the bank is back       not within 30s         3s",
		"  user answers: real / degraded / failed       10 / 0 / 90            60 / 40 / 0",
	}, r.Table())
}

func TestBoardTerminalAndPlain(t *testing.T) {
	var plain bytes.Buffer
	b := &board{out: &plain}
	b.update([]string{"a", "b"})
	b.update([]string{"c", "d"})
	assert.Equal(t, "a\nb\nc\nd\n", plain.String(), "not a terminal: periodic plain lines")

	var tty bytes.Buffer
	b = &board{out: &tty, tty: true}
	b.update([]string{"a", "b"})
	logs := b.logWriter(&tty, true)
	require.NotNil(t, logs)
	_, _ = logs.Write([]byte("log line\n"))
	b.update([]string{"c", "d"})
	want := "\x1b[2Ka\n\x1b[2Kb\n" + // drawn
		"\r\x1b[2A\x1b[J" + "log line\n" + "\x1b[2Ka\n\x1b[2Kb\n" + // lifted, logged, redrawn
		"\r\x1b[2A\x1b[J" + "\x1b[2Kc\n\x1b[2Kd\n" // redrawn in place
	assert.Equal(t, want, tty.String())

	var other bytes.Buffer
	assert.Equal(t, io.Writer(&other), b.logWriter(&other, false), "stderr elsewhere: written as is")
}

func TestStatusLine(t *testing.T) {
	now := depCounts{state: "open", calls: 120, retries: 30, notPermitted: 50, bulkheadFull: 2, fallbacks: 52, timedOut: 3}
	prev := depCounts{calls: 100, retries: 20}
	line := statusLine(Payments, now, prev, 2*time.Second)
	assert.LessOrEqual(t, len([]rune(line)), termWidth)
	assert.Equal(t, "payments        open            10.0      5.0        52         52", line)
	assert.Equal(t, "dependency      breaker        req/s  retry/s  rejected  fallbacks", columns(false))
	assert.Equal(t, "payments        open             120       30        52         52", statusLine(Payments, now, depCounts{}, 0))
	assert.Equal(t, "── outage ×2.5 t=1m15s · recovered ", header(ScenarioOutage, "recovered", 30*time.Second, 2.5))
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBoardCutsLongLinesOnATerminal(t *testing.T) {
	var tty bytes.Buffer
	b := &board{out: &tty, tty: true}
	b.update([]string{strings.Repeat("x", 200)})
	assert.Equal(t, "\x1b[2K"+strings.Repeat("x", termWidth-1)+"…\n", tty.String())
}
