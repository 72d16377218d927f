// Package demo is `stormwatch demo`: in one process on 127.0.0.1, a fault-injectable downstream
// HTTP server, an instrumented client driving load through stormwatch's pipeline (Fallback →
// Retry → CircuitBreaker → Bulkhead → Timeout) for three dependencies (payments, inventory,
// recommendations), their metrics on /metrics, the retry log (on stderr, or in a file when the
// terminal shows the live status) and a live status line per dependency. A scenario scripts the
// downstream's faults over time; retry-storm instead replays a three-layer retry-storm incident
// with naive per-layer retries and with stormwatch, and prints the amplification at the leaf and
// the time to recover of each.
//
// --speed N divides every scripted duration, breaker open duration, timeout, backoff and
// injected latency by N (a scaled configuration; the servers run on the wall clock), and
// multiplies the request rate by N, so a sped-up run is the same run fast-forwarded: as many
// calls per scripted phase, as many in flight at once. (Prometheus's windows and `for`
// durations do not speed up: to watch alerts, run at speed 1.)
//
// Stopping the demo — Ctrl-C, SIGTERM or the end of --duration — cancels the calls in flight:
// they count as aborted, never as failures, fallbacks or gave_up records.
package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
)

// Defaults of Config.
const (
	DefaultListen      = "127.0.0.1:9464"
	DefaultScenario    = ScenarioOutage
	DefaultDuration    = 5 * time.Minute
	DefaultSpeed       = 1.0
	DefaultRate        = 20.0
	DefaultStatusEvery = 5 * time.Second
	MaxSpeed           = 1000.0
	MaxWallRate        = 5000.0
)

// Config configures a demo run. Zero fields take the defaults above, except Duration (0 runs
// until the context ends).
type Config struct {
	// Listen is the address of /metrics; it must be a loopback address (port 0 picks one, and
	// the first line printed says which).
	Listen string
	// Listener, when set, serves /metrics instead of a listener on Listen: the caller bound it
	// (to know the address before Run, as the --prometheus mode does). Run closes it.
	Listener net.Listener
	// Scenario is one of ScenarioNames.
	Scenario string
	// Duration bounds the run; 0 runs until ctx ends. retry-storm ends by itself when its
	// replay is over, unless Duration is 0: then /metrics stays up until ctx ends.
	Duration time.Duration
	// Outage, when positive, is how long the fault window of the one-shot scenarios
	// (OutageScenarios) lasts, in demo time; 0 keeps their 60s. Long soak runs set it to keep
	// the outage up for most of the run.
	Outage time.Duration
	// Speed divides every scripted duration, open duration, timeout and injected latency.
	Speed float64
	// Rate is the calls per second (demo time) the client makes to each dependency; the wall
	// rate is Rate × Speed, at most MaxWallRate.
	Rate float64
	// LogFormat is the retry log's format: "json" (default) or "text".
	LogFormat string
	// LogFile is where the retry log goes: "-" means Stderr; a path means that file (created,
	// or truncated); "" means Stderr, except when Stdout and Stderr are the same terminal (TTY
	// and StderrTTY), where the log would bury the live status: then it goes to a new file
	// stormwatch-demo-*.log in the temporary directory, whose path the first lines print.
	LogFile string
	// Stdout receives the status lines, Stderr the retry log. nil means io.Discard.
	Stdout, Stderr io.Writer
	// TTY redraws the status block in place (Stdout is a terminal); StderrTTY says Stderr is the
	// same terminal.
	TTY, StderrTTY bool
	// StatusEvery is the period of the plain status lines when not a TTY (default 5s); on a TTY
	// the block is redrawn four times a second.
	StatusEvery time.Duration
	// Registry, when set, receives the demo's primitives (tests read it after Run returns).
	Registry *instrument.Registry
	// Ready, when set, is called with the /metrics URL once everything is serving.
	Ready func(metricsURL string)
	// Profiles overrides the dependencies' configurations (tests); nil means DefaultProfiles.
	Profiles map[string]Profile
	// Storm configures the retry-storm scenario; zero fields take DefaultStormConfig's values.
	Storm StormConfig
	// StormResult, when set, receives the retry-storm's measurements (also of an interrupted
	// replay: see StormReport.Complete).
	StormResult func(StormReport)
	// Clock paces the scripted scenarios — arrivals, phases, status lines, Duration — and runs
	// the dependencies' primitives; nil means the wall clock. Tests drive a clock.Fake.
	Clock clock.Clock
	// Transport, when set, replaces the loopback downstream under the dependencies' pipelines
	// (tests: a scripted fake); the scenario's faults then have no effect.
	Transport http.RoundTripper
	// InProcess calls the downstream's handler in the calling goroutine instead of over a
	// loopback socket (Transport, when set, wins). A run on a fake Clock then has no work in
	// flight outside its goroutines, so a test can tell when it waits for the clock.
	InProcess bool
	// NoFallback runs every dependency without its fallback (--no-fallback): a failed call is
	// an error for its caller instead of the degraded answer, so an outage is not contained.
	NoFallback bool
}

// UsageError is a bad flag or configuration value; the CLI exits 2 for it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// CheckLoopback returns a UsageError unless addr is host:port with a loopback host
// (127.0.0.0/8, ::1 or localhost). The demo never listens on other interfaces.
func CheckLoopback(addr string) error { return CheckLoopbackFlag("--listen", addr) }

// CheckLoopbackFlag is CheckLoopback for the address given by the flag called flag, which the
// error names.
func CheckLoopbackFlag(flag, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("%s %q: %v", flag, addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usagef("%s %q: bad port %q", flag, addr, port)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return usagef("%s %q: the demo only listens on a loopback address (127.0.0.1, ::1 or localhost), not %q", flag, addr, host)
	}
	return nil
}

// withDefaults fills in defaults and validates cfg.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Listener != nil {
		cfg.Listen = cfg.Listener.Addr().String()
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if err := CheckLoopback(cfg.Listen); err != nil {
		return cfg, err
	}
	if cfg.Scenario == "" {
		cfg.Scenario = DefaultScenario
	}
	if !slices.Contains(ScenarioNames, cfg.Scenario) {
		return cfg, usagef("--scenario %q: want one of %s", cfg.Scenario, strings.Join(ScenarioNames, "|"))
	}
	if cfg.NoFallback && cfg.Scenario == ScenarioRetryStorm {
		return cfg, usagef("--no-fallback: scenario %q replays its own setups; --no-fallback applies to the scripted scenarios", cfg.Scenario)
	}
	if cfg.Outage != 0 {
		sc, err := LookupScenario(cfg.Scenario)
		if err != nil {
			sc.Name = cfg.Scenario // retry-storm: no script
		}
		if _, err := sc.WithOutage(cfg.Outage); err != nil {
			return cfg, err
		}
	}
	if cfg.Speed == 0 {
		cfg.Speed = DefaultSpeed
	}
	if !(cfg.Speed > 0 && cfg.Speed <= MaxSpeed) {
		return cfg, usagef("--speed %v: must be > 0 and at most %v", cfg.Speed, MaxSpeed)
	}
	if cfg.Duration < 0 {
		return cfg, usagef("--duration %v: must not be negative (0 runs until interrupted)", cfg.Duration)
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if !(cfg.Rate > 0 && cfg.Rate*cfg.Speed <= MaxWallRate) {
		return cfg, usagef("--rps %v: must be > 0, and --rps × --speed (%v) at most %v calls per second", cfg.Rate, cfg.Rate*cfg.Speed, MaxWallRate)
	}
	switch cfg.LogFormat {
	case "":
		cfg.LogFormat = "json"
	case "json", "text":
	default:
		return cfg, usagef("--log-format %q: want json or text", cfg.LogFormat)
	}
	if cfg.StatusEvery == 0 {
		cfg.StatusEvery = DefaultStatusEvery
	}
	if cfg.StatusEvery < 0 {
		return cfg, usagef("status period %v: must be positive", cfg.StatusEvery)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if cfg.LogFile != "" && cfg.LogFile != "-" {
		if fi, err := os.Stat(cfg.LogFile); err == nil && fi.IsDir() {
			return cfg, usagef("--log-file %q: is a directory", cfg.LogFile)
		}
	}
	if cfg.Profiles == nil {
		cfg.Profiles = DefaultProfiles()
	}
	for _, dep := range Dependencies {
		if _, ok := cfg.Profiles[dep]; !ok {
			return cfg, fmt.Errorf("demo: Profiles: no profile for %q", dep)
		}
	}
	return cfg, nil
}

// Validate reports the first invalid field of cfg as Run would, without running anything: a
// *UsageError naming the flag, or an error about a programmatic field.
func (cfg Config) Validate() error {
	_, err := cfg.withDefaults()
	return err
}

// Why a run ended: the causes of the run context's cancellation.
var (
	errDurationReached = errors.New("--duration reached")
	errInterrupted     = errors.New("interrupted")
)

// Run runs the demo until cfg.Duration has passed or ctx ends (SIGINT, SIGTERM), then stops
// everything it started and returns nil. Errors are a UsageError for a bad cfg, else a runtime
// failure (such as the listen address being in use).
//
// However the run ends, the calls in flight see their caller's cancellation (context.Canceled,
// never a deadline), so stopping the demo counts them as aborted: never a failure, a fallback
// or a gave_up record.
func Run(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if cfg.Listener != nil {
		defer cfg.Listener.Close()
	}
	if err != nil {
		return err
	}
	clk := clock.Or(cfg.Clock)

	// The run's own context: cancelled (never expired) when ctx ends or Duration has passed;
	// its cause says which.
	runCtx, stopRun := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopRun(nil)
	defer context.AfterFunc(ctx, func() { stopRun(errInterrupted) })()
	if cfg.Duration > 0 {
		// The timer starts now, before anything can advance a test's clock.
		go stopAfter(runCtx, clk.NewTimer(cfg.Duration), stopRun)
	}

	reg := cfg.Registry
	if reg == nil {
		if reg, err = instrument.NewRegistry(); err != nil {
			return err
		}
	}
	b := &board{out: cfg.Stdout, tty: cfg.TTY}
	defer b.finish()
	logWhere, stopLog, err := startRetryLog(cfg, reg, b)
	if err != nil {
		return err
	}
	defer stopLog()
	metrics, err := serveMetrics(cfg, reg)
	if err != nil {
		return err
	}
	defer metrics.stop(time.Second)
	metricsURL := "http://" + metrics.addr + "/metrics"
	b.println("stormwatch demo: scenario %s, speed ×%s — metrics on %s, retry log %s", cfg.Scenario, trimFloat(cfg.Speed), metricsURL, logWhere)

	if cfg.Scenario == ScenarioRetryStorm {
		return runStormScenario(runCtx, cfg, reg, b, metricsURL)
	}
	return runScripted(runCtx, cfg, clk, reg, b, metricsURL)
}

// stopAfter cancels the run with errDurationReached when t fires, unless the run ends first.
func stopAfter(runCtx context.Context, t clock.Timer, stopRun context.CancelCauseFunc) {
	select {
	case <-t.C():
		stopRun(errDurationReached)
	case <-runCtx.Done():
		t.Stop()
	}
}

// serveMetrics serves /metrics — the stormwatch collector and the Go runtime — on
// cfg.Listener, or on a new listener on cfg.Listen.
func serveMetrics(cfg Config, reg *instrument.Registry) (*server, error) {
	col, err := collector.New(reg)
	if err != nil {
		return nil, err
	}
	promReg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{col, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := promReg.Register(c); err != nil {
			return nil, err
		}
	}
	ml := cfg.Listener
	if ml == nil {
		if ml, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "stormwatch demo (%s): see /metrics\n", cfg.Scenario)
	})
	return serve(ml, mux), nil
}

// stopReason is the line that ends a run whose context ended with cause.
func stopReason(cfg Config, cause error) string {
	if errors.Is(cause, errDurationReached) {
		return fmt.Sprintf("stormwatch demo: --duration %s reached, stopped cleanly", cfg.Duration)
	}
	return "stormwatch demo: interrupted, stopped cleanly"
}

// runStormScenario replays the retry storm. The replay ends the run, unless Duration is 0: then
// /metrics stays up until the run is stopped.
func runStormScenario(ctx context.Context, cfg Config, reg *instrument.Registry, b *board, metricsURL string) error {
	if cfg.Ready != nil {
		cfg.Ready(metricsURL)
	}
	rep, err := RunRetryStorm(ctx, reg, cfg.Storm, cfg.Speed, b.println)
	if cfg.StormResult != nil {
		cfg.StormResult(rep)
	}
	if err != nil {
		return err
	}
	if rep.Complete() && cfg.Duration == 0 && ctx.Err() == nil {
		b.println("retry-storm: replay over; /metrics stays up on %s until Ctrl-C", metricsURL)
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		b.println("%s", stopReason(cfg, context.Cause(ctx)))
	}
	return nil
}

// runScripted runs the three-dependency client against the scripted downstream until ctx ends.
func runScripted(ctx context.Context, cfg Config, clk clock.Clock, reg *instrument.Registry, b *board, metricsURL string) error {
	sc, err := scriptedScenario(cfg)
	if err != nil {
		return err
	}
	b.println("scenario %s: %s", sc.Name, sc.Summary)

	down := NewDownstream(cfg.Clock, nil, cfg.Speed, Dependencies...)
	defer down.Close() // runs before the server stop below: hanging handlers return at once
	base := cfg.Transport
	downURL := "http://downstream.invalid"
	if base == nil && cfg.InProcess {
		base = inProcess{h: down}
	}
	if base == nil {
		dl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		downSrv := serve(dl, down)
		defer downSrv.stop(time.Second)
		transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
		defer transport.CloseIdleConnections()
		base, downURL = transport, "http://"+downSrv.addr
	}
	deps, err := newDependencies(cfg, sc, reg, downURL, base)
	if err != nil {
		return err
	}

	start := clk.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	var shed atomic.Uint64
	var phase atomic.Pointer[string]
	first := sc.Phases[0].Name
	phase.Store(&first)
	applyPhase(sc.Phases[0], down, b)
	if cfg.Ready != nil {
		cfg.Ready(metricsURL)
	}

	wg.Add(1)
	go func() { defer wg.Done(); runScript(loadCtx, clk, sc, down, cfg.Speed, start, &phase, b) }()
	for _, d := range deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call := func(ctx context.Context) { _, _, _ = d.Call(ctx) }
			mult := func() float64 { return down.Fault(d.name).Load }
			load{rate: cfg.Rate * cfg.Speed, maxInFlight: 1000, mult: mult}.run(loadCtx, clk, start, call, func() { shed.Add(1) })
		}()
		if d.tw != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				load{rate: twinShare * cfg.Rate * cfg.Speed, maxInFlight: 1000}.run(loadCtx, clk, start, d.tw.call, func() { shed.Add(1) })
			}()
		}
	}
	wg.Add(1)
	go func() { defer wg.Done(); showStatus(loadCtx, cfg, clk, deps, start, &phase, b) }()

	<-ctx.Done()
	stopLoad()
	wg.Wait()
	b.update(statusBlock(cfg, deps, clk.Now().Sub(start), *phase.Load(), nil, 0))
	if n := shed.Load(); n > 0 {
		b.println("%d calls were not started because 1000 were already in flight", n)
	}
	b.println("%s", stopReason(cfg, context.Cause(ctx)))
	return nil
}

// scriptedScenario returns cfg's scenario, its fault lasting cfg.Outage when set.
func scriptedScenario(cfg Config) (Scenario, error) {
	sc, err := LookupScenario(cfg.Scenario)
	if err != nil {
		return sc, usagef("--scenario: %v", err)
	}
	if cfg.Outage != 0 {
		if sc, err = sc.WithOutage(cfg.Outage); err != nil {
			return sc, err
		}
	}
	return sc, sc.validate()
}

// newDependencies builds the client of every dependency, calling downURL/<name> through base.
// The scenario's limited dependencies get an adaptive limiter unless their profile has one.
func newDependencies(cfg Config, sc Scenario, reg *instrument.Registry, downURL string, base http.RoundTripper) ([]*dependency, error) {
	deps := make([]*dependency, len(Dependencies))
	for i, name := range Dependencies {
		prof := cfg.Profiles[name]
		if slices.Contains(sc.Limited, name) && prof.Limit == nil {
			prof.Limit = &limit.Config{}
		}
		prof.NoFallback = prof.NoFallback || cfg.NoFallback
		hedged := slices.Contains(sc.Hedged, name)
		if hedged && prof.Hedge == nil {
			hc := stragglersHedge
			prof.Hedge, prof.BudgetRatio = &hc, cmp.Or(prof.BudgetRatio, stragglersBudget)
		}
		var err error
		if deps[i], err = newDependency(reg, name, downURL+"/"+name, base, prof, cfg.Speed, cfg.Clock); err != nil {
			return nil, err
		}
		if hedged {
			deps[i].tw = newTwin(downURL+"/"+name, base, cfg.Clock)
		}
	}
	return deps, nil
}

// applyPhase sets every dependency's fault of phase p.
func applyPhase(p Phase, down *Downstream, b *board) {
	for _, dep := range Dependencies {
		if err := down.SetFault(dep, p.fault(dep)); err != nil {
			b.println("demo: %v", err)
		}
	}
}

// runScript applies the scenario's phases after the first at their (scaled) times on clk.
func runScript(ctx context.Context, clk clock.Clock, sc Scenario, down *Downstream, speed float64, start time.Time, phase *atomic.Pointer[string], b *board) {
	for _, p := range sc.Phases[1:] {
		at := start.Add(scaleDuration(p.At, speed))
		if wait := at.Sub(clk.Now()); wait > 0 {
			t := clk.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		if ctx.Err() != nil {
			return
		}
		applyPhase(p, down, b)
		name := p.Name
		phase.Store(&name)
		b.println("t=%s: %s", p.At, p.Name)
	}
}

// showStatus redraws the status block (TTY, 4×/s) or prints it every cfg.StatusEvery, on clk.
func showStatus(ctx context.Context, cfg Config, clk clock.Clock, deps []*dependency, start time.Time, phase *atomic.Pointer[string], b *board) {
	every := cfg.StatusEvery
	if cfg.TTY {
		every = 250 * time.Millisecond
	}
	prev := make([]depCounts, len(deps))
	for i, d := range deps {
		prev[i] = d.counts()
	}
	last := start
	next := start
	for {
		// The next line is due one period after the last one that was due; after a stall,
		// one period from now (missed lines are not printed in a burst).
		if next = next.Add(every); !next.After(clk.Now()) {
			next = clk.Now().Add(every)
		}
		t := clk.NewTimer(next.Sub(clk.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		now := clk.Now()
		// Rates over the last second at least, so a 4×/s redraw does not jitter.
		b.update(statusBlock(cfg, deps, now.Sub(start), *phase.Load(), prev, now.Sub(last)))
		if cfg.TTY && now.Sub(last) < time.Second {
			continue
		}
		for i, d := range deps {
			prev[i] = d.counts()
		}
		last = now
	}
}

// statusBlock is the header (at wall time since the start) and one line per dependency, with
// rates over elapsed since prev. prev == nil shows totals instead of rates.
func statusBlock(cfg Config, deps []*dependency, since time.Duration, phase string, prev []depCounts, elapsed time.Duration) []string {
	lines := []string{header(cfg.Scenario, phase, since, cfg.Speed), columns(prev == nil)}
	for i, d := range deps {
		p := depCounts{}
		if prev != nil {
			p = prev[i]
		} else {
			elapsed = 0
		}
		now := d.counts()
		lines = append(lines, statusLine(d.name, now, p, elapsed))
		if d.tw != nil {
			lines = append(lines, hedgeLine(d, now, p, elapsed))
		}
	}
	return lines
}
