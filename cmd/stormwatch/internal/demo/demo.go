// Package demo is `stormwatch demo`: in one process on 127.0.0.1, a fault-injectable downstream
// HTTP server, an instrumented client driving load through stormwatch's pipeline (Fallback →
// Retry → CircuitBreaker → Bulkhead → Timeout) for three dependencies (payments, inventory,
// recommendations), their metrics on /metrics, the retry log on stderr and a live status line per
// dependency. A scenario scripts the downstream's faults over time; retry-storm instead replays
// the three-layer retry-storm incident of seed 004 with naive per-layer retries and with
// stormwatch, and prints the amplification at the leaf and the time to recover of each.
//
// --speed N divides every scripted duration, breaker open duration, timeout, backoff and
// injected latency by N (a scaled configuration; the servers run on the wall clock), and
// multiplies the request rate by N, so a sped-up run is the same run fast-forwarded: as many
// calls per scripted phase, as many in flight at once.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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
	"github.com/stormwatch-go/stormwatch/retrylog"
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
	// Listen is the address of /metrics; it must be a loopback address (port 0 picks one).
	Listen string
	// Scenario is one of ScenarioNames.
	Scenario string
	// Duration bounds the run in wall time; 0 runs until ctx ends. retry-storm ends by itself.
	Duration time.Duration
	// Speed divides every scripted duration, open duration, timeout and injected latency.
	Speed float64
	// Rate is the calls per second (demo time) the client makes to each dependency; the wall
	// rate is Rate × Speed, at most MaxWallRate.
	Rate float64
	// LogFormat is the retry log's format on Stderr: "json" (default) or "text".
	LogFormat string
	// Stdout receives the status lines, Stderr the retry log. nil means io.Discard.
	Stdout, Stderr io.Writer
	// TTY redraws the status block in place (Stdout is a terminal); StderrTTY says Stderr is the
	// same terminal, so log lines scroll above the block.
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
	// StormResult, when set, receives the retry-storm's measurements.
	StormResult func(StormReport)
}

// UsageError is a bad flag or configuration value; the CLI exits 2 for it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// CheckLoopback returns a UsageError unless addr is host:port with a loopback host
// (127.0.0.0/8, ::1 or localhost). The demo never listens on other interfaces.
func CheckLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: %v", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usagef("--listen %q: bad port %q", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return usagef("--listen %q: the demo only listens on a loopback address (127.0.0.1, ::1 or localhost), not %q", addr, host)
	}
	return nil
}

// withDefaults fills in defaults and validates cfg.
func (cfg Config) withDefaults() (Config, error) {
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

// Run runs the demo until cfg.Duration has passed or ctx ends (SIGINT, SIGTERM), then stops
// everything it started and returns nil. Errors are a UsageError for a bad cfg, else a runtime
// failure (such as the listen address being in use).
func Run(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	reg := cfg.Registry
	if reg == nil {
		if reg, err = instrument.NewRegistry(); err != nil {
			return err
		}
	}
	b := &board{out: cfg.Stdout, tty: cfg.TTY}
	defer b.finish()

	// The retry log on stderr.
	logOut := b.logWriter(cfg.Stderr, cfg.StderrTTY)
	var h slog.Handler = slog.NewJSONHandler(logOut, nil)
	if cfg.LogFormat == "text" {
		h = slog.NewTextHandler(logOut, nil)
	}
	logger, err := retrylog.New(h)
	if err != nil {
		return err
	}
	defer logger.Attach(reg.Events())()

	// /metrics: the stormwatch collector and the Go runtime.
	col, err := collector.New(reg)
	if err != nil {
		return err
	}
	promReg := prometheus.NewRegistry()
	if err := promReg.Register(col); err != nil {
		return err
	}
	if err := promReg.Register(collectors.NewGoCollector()); err != nil {
		return err
	}
	if err := promReg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return err
	}
	ml, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
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
	metrics := serve(ml, mux)
	defer metrics.stop(time.Second)
	metricsURL := "http://" + metrics.addr + "/metrics"
	b.println("stormwatch demo: scenario %s, speed ×%s — metrics on %s, retry log on stderr", cfg.Scenario, trimFloat(cfg.Speed), metricsURL)

	if cfg.Scenario == ScenarioRetryStorm {
		if cfg.Ready != nil {
			cfg.Ready(metricsURL)
		}
		rep, err := RunRetryStorm(ctx, reg, cfg.Storm, cfg.Speed, b.println)
		if err != nil {
			return err
		}
		if cfg.StormResult != nil {
			cfg.StormResult(rep)
		}
		return nil
	}
	return runScripted(ctx, cfg, reg, b, metricsURL)
}

// runScripted runs the three-dependency client against the scripted downstream.
func runScripted(ctx context.Context, cfg Config, reg *instrument.Registry, b *board, metricsURL string) error {
	sc, err := LookupScenario(cfg.Scenario)
	if err != nil {
		return usagef("--scenario: %v", err)
	}
	if err := sc.validate(); err != nil {
		return err
	}
	b.println("scenario %s: %s", sc.Name, sc.Summary)

	down := NewDownstream(cfg.Speed, Dependencies...)
	defer down.Close() // runs before the server stop below: hanging handlers return at once
	dl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	downSrv := serve(dl, down)
	defer downSrv.stop(time.Second)

	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	defer transport.CloseIdleConnections()
	deps := make([]*dependency, len(Dependencies))
	for i, name := range Dependencies {
		if deps[i], err = newDependency(reg, name, "http://"+downSrv.addr+"/"+name, transport, cfg.Profiles[name], cfg.Speed); err != nil {
			return err
		}
	}
	if cfg.Ready != nil {
		cfg.Ready(metricsURL)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var shed atomic.Uint64
	start := time.Now()
	var phase atomic.Pointer[string]
	first := sc.Phases[0].Name
	phase.Store(&first)

	wg.Add(1)
	go func() { defer wg.Done(); runScript(runCtx, sc, down, cfg.Speed, start, &phase, b) }()
	for _, d := range deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			load{rate: cfg.Rate * cfg.Speed, maxInFlight: 1000}.run(runCtx, d, func() { shed.Add(1) })
		}()
	}
	wg.Add(1)
	go func() { defer wg.Done(); showStatus(runCtx, cfg, deps, start, &phase, b) }()

	<-ctx.Done()
	stop()
	wg.Wait()
	b.update(statusBlock(cfg, deps, start, *phase.Load(), nil, 0))
	if n := shed.Load(); n > 0 {
		b.println("%d calls were not started because 1000 were already in flight", n)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		b.println("stormwatch demo: --duration %s reached", cfg.Duration)
	} else {
		b.println("stormwatch demo: interrupted, stopped cleanly")
	}
	return nil
}

// runScript applies the scenario's phases at their (scaled) times.
func runScript(ctx context.Context, sc Scenario, down *Downstream, speed float64, start time.Time, phase *atomic.Pointer[string], b *board) {
	for _, p := range sc.Phases {
		at := start.Add(scaleDuration(p.At, speed))
		if wait := time.Until(at); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		for _, dep := range Dependencies {
			if err := down.SetFault(dep, p.fault(dep)); err != nil {
				b.println("demo: %v", err)
			}
		}
		name := p.Name
		phase.Store(&name)
		if p.At > 0 {
			b.println("t=%s: %s", p.At, p.Name)
		}
	}
}

// showStatus redraws the status block (TTY, 4×/s) or prints it every cfg.StatusEvery.
func showStatus(ctx context.Context, cfg Config, deps []*dependency, start time.Time, phase *atomic.Pointer[string], b *board) {
	every := cfg.StatusEvery
	if cfg.TTY {
		every = 250 * time.Millisecond
	}
	prev := make([]depCounts, len(deps))
	for i, d := range deps {
		prev[i] = d.counts()
	}
	last := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			// Rates over the last second at least, so a 4×/s redraw does not jitter.
			b.update(statusBlock(cfg, deps, start, *phase.Load(), prev, now.Sub(last)))
			if cfg.TTY && now.Sub(last) < time.Second {
				continue
			}
			for i, d := range deps {
				prev[i] = d.counts()
			}
			last = now
		}
	}
}

// statusBlock is the header and one line per dependency. prev == nil shows no rates.
func statusBlock(cfg Config, deps []*dependency, start time.Time, phase string, prev []depCounts, elapsed time.Duration) []string {
	lines := []string{header(cfg.Scenario, phase, time.Since(start), cfg.Speed), columns(prev == nil)}
	for i, d := range deps {
		p := depCounts{}
		if prev != nil {
			p = prev[i]
		} else {
			elapsed = 0
		}
		lines = append(lines, statusLine(d.name, d.counts(), p, elapsed))
	}
	return lines
}
