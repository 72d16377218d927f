package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// StormConfig shapes the retry-storm replay, in demo time. The chain is user → order → payment → bank channel, all on 127.0.0.1. The bank channel has a fixed
// pool of workers and a bounded queue (beyond it, it refuses at once, as the exhausted thread
// pool of the incident did) and keeps working on requests whose caller has given up. At
// Warmup it turns slow (FaultService per request, "bank maintenance") for Fault, then is healthy
// again; Observe is how long the run watches for the recovery.
type StormConfig struct {
	Rate          float64       // user requests per second (demo time; the wall rate is Rate × speed)
	Warmup        time.Duration // healthy time before the fault
	Fault         time.Duration // how long the bank is slow
	Observe       time.Duration // how long after the fault the run watches
	BankWorkers   int           // the bank's worker pool
	BankQueue     int           // requests that may wait for a worker; more are refused at once
	BankService   time.Duration // time per request when healthy
	FaultService  time.Duration // time per request while slow
	RecoveryRatio float64       // a second of user requests has recovered when this share got a real answer
}

// DefaultStormConfig is the replay's default shape: 10 user requests/s against a bank that
// serves 20/s when healthy (4 workers × 200 ms, half busy, as the incident's bank channel was)
// and turns 6 s slow for 10 s.
func DefaultStormConfig() StormConfig {
	return StormConfig{
		Rate: 10, Warmup: 3 * time.Second, Fault: 10 * time.Second, Observe: 30 * time.Second,
		BankWorkers: 4, BankQueue: 40, BankService: 200 * time.Millisecond, FaultService: 6 * time.Second,
		RecoveryRatio: 0.9,
	}
}

func (c StormConfig) withDefaults() StormConfig {
	d := DefaultStormConfig()
	c.Rate = cmp.Or(c.Rate, d.Rate)
	c.Warmup = cmp.Or(c.Warmup, d.Warmup)
	c.Fault = cmp.Or(c.Fault, d.Fault)
	c.Observe = cmp.Or(c.Observe, d.Observe)
	c.BankWorkers = cmp.Or(c.BankWorkers, d.BankWorkers)
	c.BankQueue = cmp.Or(c.BankQueue, d.BankQueue)
	c.BankService = cmp.Or(c.BankService, d.BankService)
	c.FaultService = cmp.Or(c.FaultService, d.FaultService)
	c.RecoveryRatio = cmp.Or(c.RecoveryRatio, d.RecoveryRatio)
	return c
}

// Setup names.
const (
	SetupNaive      = "naive"
	SetupStormwatch = "stormwatch"
)

// StormResult is what one setup measured.
type StormResult struct {
	Setup string
	// FaultRequests is the number of user requests sent while the bank was slow, and
	// BankRequests the requests the bank received on their behalf (counted per user request
	// through a request id, after every attempt of every layer was over).
	FaultRequests int
	BankRequests  uint64
	// Amplification is BankRequests / FaultRequests: requests at the leaf per user request.
	Amplification float64
	// Recovered says whether the user requests recovered after the bank came back, and
	// TimeToRecover how long that took (demo time): from the end of the fault to the first
	// second from which on every second's requests got a real answer in RecoveryRatio of cases.
	Recovered     bool
	TimeToRecover time.Duration
	Observed      time.Duration
	// Users counts every user request by answer: real, degraded (the fallback), failed.
	Users, Real, Degraded, Failed int
}

// StormReport holds both setups' results. A replay stopped early (Ctrl-C, --duration) has only
// the setups it finished: see Complete.
type StormReport struct {
	Naive, Stormwatch StormResult
	// Measured counts the setups that ran to their end: 0, 1 (naive) or 2.
	Measured int
}

// Complete reports whether both setups were measured.
func (r StormReport) Complete() bool { return r.Measured == 2 }

// RunRetryStorm replays the incident twice — naive per-layer retries, then stormwatch — and
// prints both results side by side with println. The stormwatch setup's primitives are
// registered in reg (names "payment-service" and "bank-channel") and so exported on /metrics.
//
// When ctx ends first, the replay stops (its calls are cancelled), RunRetryStorm prints what it
// measured so far and returns the partial report with a nil error: stopping is not a failure.
// Errors are runtime failures, such as no free loopback port.
func RunRetryStorm(ctx context.Context, reg *instrument.Registry, cfg StormConfig, speed float64, println func(string, ...any)) (StormReport, error) {
	cfg = cfg.withDefaults()
	var rep StormReport
	println("retry-storm: user → order → payment → bank channel; the bank turns slow (%s per request) for %s after %s", cfg.FaultService, cfg.Fault, cfg.Warmup)
	println("retry-storm: 1/2 naive: 3 attempts at order→payment and at payment→bank, no budget, no breaker (%s demo time)…", cfg.Warmup+cfg.Fault+cfg.Observe)
	res, done, err := runStorm(ctx, SetupNaive, reg, cfg, speed)
	if err != nil || !done {
		return rep, stormStopped(rep, err, println)
	}
	rep.Naive, rep.Measured = res, 1
	println("retry-storm: 2/2 stormwatch: one retry layer (2 attempts, 10%% budget, deadline) + breakers + bulkhead + timeouts + do-not-retry…")
	res, done, err = runStorm(ctx, SetupStormwatch, reg, cfg, speed)
	if err != nil || !done {
		return rep, stormStopped(rep, err, println)
	}
	rep.Stormwatch, rep.Measured = res, 2
	for _, l := range rep.Table() {
		println("%s", l)
	}
	return rep, nil
}

// stormStopped reports a replay that ended early: err, or the run was stopped.
func stormStopped(rep StormReport, err error, println func(string, ...any)) error {
	if err != nil {
		return err
	}
	switch rep.Measured {
	case 0:
		println("retry-storm: stopped during the naive setup: nothing measured")
	case 1:
		println("retry-storm: stopped during the stormwatch setup; the naive setup measured %.2f× bank requests per user request", rep.Naive.Amplification)
	}
	return nil
}

// Table renders the report side by side.
func (r StormReport) Table() []string {
	rec := func(s StormResult) string {
		if !s.Recovered {
			return fmt.Sprintf("not within %s", s.Observed)
		}
		return s.TimeToRecover.Round(100 * time.Millisecond).String()
	}
	row := func(label, a, b string) string { return fmt.Sprintf("  %-44s %-22s %s", label, a, b) }
	return []string{
		row("", SetupNaive, SetupStormwatch),
		row("bank requests per user request (fault)", fmt.Sprintf("%.2f×", r.Naive.Amplification), fmt.Sprintf("%.2f×", r.Stormwatch.Amplification)),
		row("  (user requests during the fault → at bank)", fmt.Sprintf("%d → %d", r.Naive.FaultRequests, r.Naive.BankRequests), fmt.Sprintf("%d → %d", r.Stormwatch.FaultRequests, r.Stormwatch.BankRequests)),
		row("time to recover after the bank is back", rec(r.Naive), rec(r.Stormwatch)),
		row("user answers: real / degraded / failed", fmt.Sprintf("%d / %d / %d", r.Naive.Real, r.Naive.Degraded, r.Naive.Failed), fmt.Sprintf("%d / %d / %d", r.Stormwatch.Real, r.Stormwatch.Degraded, r.Stormwatch.Failed)),
	}
}

const (
	requestIDHeader = "X-Demo-Request"
	degradedHeader  = "X-Demo-Degraded"
)

// bank is the leaf: a worker pool with a bounded queue that ignores its callers' cancellation.
type bank struct {
	workers  chan struct{}
	admitted chan struct{} // workers + queue
	service  atomic.Int64  // ns per request, wall time
	perUser  []atomic.Uint32
	stop     <-chan struct{}
}

func (b *bank) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, err := strconv.Atoi(r.Header.Get(requestIDHeader)); err == nil && id >= 0 && id < len(b.perUser) {
		b.perUser[id].Add(1)
	}
	select {
	case b.admitted <- struct{}{}:
	default:
		http.Error(w, "pool exhausted", http.StatusServiceUnavailable)
		return
	}
	defer func() { <-b.admitted }()
	select {
	case b.workers <- struct{}{}:
	case <-b.stop:
		return
	}
	defer func() { <-b.workers }()
	t := time.NewTimer(time.Duration(b.service.Load()))
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.stop:
		return
	}
	_, _ = io.WriteString(w, "paid\n")
}

// stormLayer is one caller→callee hop: naive (a plain retry loop) or stormwatch (primitives).
type stormLayer struct {
	url    string
	client *http.Client
	// naive
	attempts       int
	attemptTimeout time.Duration
	pause          time.Duration
}

// send makes one HTTP request carrying the user request id. With a stormwatch transport the
// request goes through the layer's pipeline; fromFallback says the answer is its fallback's.
func (l *stormLayer) send(ctx context.Context, id string) (fromFallback bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set(requestIDHeader, id)
	resp, err := l.client.Do(req)
	if err != nil {
		return false, httpx.Result(req, nil, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	if _, ok := httpx.FromFallback(resp); ok {
		return true, nil
	}
	return false, httpx.Result(req, resp, nil)
}

// naiveCall is the naive retry loop: a fixed number of attempts with a per-attempt timeout and a
// short fixed pause, no budget, no breaker.
func (l *stormLayer) naiveCall(ctx context.Context, id string) error {
	var err error
	for a := 1; a <= l.attempts; a++ {
		actx, cancel := context.WithTimeout(ctx, l.attemptTimeout)
		_, err = l.send(actx, id)
		cancel()
		if err == nil || ctx.Err() != nil || a == l.attempts {
			return err
		}
		t := time.NewTimer(l.pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return err
}

// constKey keys every request of a transport to one dependency name.
func constKey(name string) func(*http.Request) string {
	return func(*http.Request) string { return name }
}

// runStorm runs one setup and measures it. done is false when ctx ended first (the result is
// then empty); err is a runtime failure.
func runStorm(ctx context.Context, setup string, reg *instrument.Registry, cfg StormConfig, speed float64) (res StormResult, done bool, err error) {
	r := newStormRun(ctx, setup, reg, cfg, speed)
	defer r.close()
	orderURL, err := r.startChain()
	if err != nil {
		return StormResult{}, false, err
	}
	r.drive(orderURL)
	r.settle()
	if ctx.Err() != nil || r.firstFault < 0 || r.firstAfter < 0 {
		return StormResult{Setup: setup}, false, nil // stopped before the replay was over
	}
	return r.result(), true, nil
}

// stormRun is one setup's run: the chain's servers, the bank, and what the users got.
type stormRun struct {
	setup string
	reg   *instrument.Registry
	cfg   StormConfig
	speed float64

	runCtx    context.Context // the run's calls; cancelled by close
	stop      context.CancelFunc
	stopCh    chan struct{} // closed by close: releases the bank's waiting handlers
	servers   []*server     // in start order: bank, payment, order
	transport *http.Transport
	client    *http.Client
	bank      *bank

	wallRate float64        // user requests per wall second
	n        int            // user requests the run may send
	outcomes []stormOutcome // per user request, by id
	issued   int            // user requests sent
	// firstFault and firstAfter are the ids of the first user request of the fault and of the
	// first after it; -1 until then.
	firstFault, firstAfter int
}

// stormOutcome is what one user request got.
type stormOutcome struct {
	at            time.Duration // demo time since start
	real, degrade bool
}

func newStormRun(ctx context.Context, setup string, reg *instrument.Registry, cfg StormConfig, speed float64) *stormRun {
	r := &stormRun{setup: setup, reg: reg, cfg: cfg, speed: speed, stopCh: make(chan struct{}), firstFault: -1, firstAfter: -1}
	r.runCtx, r.stop = context.WithCancel(ctx)
	r.transport = &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 10 * time.Second}
	r.client = &http.Client{Transport: r.transport}
	r.wallRate = cfg.Rate * speed
	r.n = int(r.wallRate*r.s(r.total()).Seconds()) + 1
	r.outcomes = make([]stormOutcome, r.n)
	r.bank = &bank{
		workers: make(chan struct{}, cfg.BankWorkers), admitted: make(chan struct{}, cfg.BankWorkers+cfg.BankQueue),
		perUser: make([]atomic.Uint32, r.n), stop: r.stopCh,
	}
	r.bank.service.Store(int64(r.s(cfg.BankService)))
	return r
}

// s scales a demo duration to wall time.
func (r *stormRun) s(d time.Duration) time.Duration { return scaleDuration(d, r.speed) }

// total is the run's length in demo time.
func (r *stormRun) total() time.Duration { return r.cfg.Warmup + r.cfg.Fault + r.cfg.Observe }

// close cancels what still runs, releases the bank's waiting handlers, then stops the servers
// (callers first) and closes the idle connections.
func (r *stormRun) close() {
	r.stop()
	close(r.stopCh)
	for i := len(r.servers) - 1; i >= 0; i-- {
		r.servers[i].stop(500 * time.Millisecond)
	}
	r.transport.CloseIdleConnections()
}

// listen serves h on a new loopback port and returns its URL.
func (r *stormRun) listen(h http.Handler) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := serve(l, h)
	r.servers = append(r.servers, srv)
	return "http://" + srv.addr + "/", nil
}

// startChain starts the bank, the payment service and the order service of the setup, and
// returns the order service's URL.
func (r *stormRun) startChain() (string, error) {
	bankURL, err := r.listen(r.bank)
	if err != nil {
		return "", err
	}
	toBank := &stormLayer{url: bankURL, client: r.client}
	var payment http.Handler
	if r.setup == SetupNaive {
		payment = r.naivePayment(toBank)
	} else if payment, err = r.stormwatchPayment(toBank); err != nil {
		return "", err
	}
	paymentURL, err := r.listen(payment)
	if err != nil {
		return "", err
	}
	toPayment := &stormLayer{url: paymentURL, client: r.client}
	if r.setup == SetupNaive {
		toPayment.attempts, toPayment.attemptTimeout, toPayment.pause = 3, r.s(1500*time.Millisecond), r.s(100*time.Millisecond)
	} else if toPayment.client, err = r.stormwatchPaymentClient(); err != nil {
		return "", err
	}
	return r.listen(r.order(toPayment))
}

// naivePayment is the naive payment service: 3 attempts at the bank, each bounded by 1s, 100ms
// apart.
func (r *stormRun) naivePayment(toBank *stormLayer) http.Handler {
	toBank.attempts, toBank.attemptTimeout, toBank.pause = 3, r.s(time.Second), r.s(100*time.Millisecond)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// The naive payment service keeps retrying the bank after its caller gave up (its
		// threads are not interrupted): the run's context, not the request's.
		if err := toBank.naiveCall(r.runCtx, req.Header.Get(requestIDHeader)); err != nil {
			http.Error(w, "bank failed", http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, "paid\n")
	})
}

// stormwatchPayment is the stormwatch payment service. payment → bank: no retry (one retry
// layer only, at the top), a breaker, a bulkhead and a per-attempt timeout, through an httpx
// transport; its own refusals tell the caller not to retry.
func (r *stormRun) stormwatchPayment(toBank *stormLayer) (http.Handler, error) {
	bankTr, err := httpx.NewTransport(r.transport, httpx.WithRegistry(r.reg), httpx.WithKey(constKey("bank-channel")),
		httpx.WithPipeline(instrument.PipelineConfig{
			Breaker: &breaker.Config{
				Window: breaker.CountBased, WindowSize: 10, MinCalls: 5, SlowCallDuration: r.s(800 * time.Millisecond),
				OpenDuration: r.s(5 * time.Second),
			},
			Bulkhead: &bulkhead.Config{MaxConcurrent: 8, MaxWait: r.s(200 * time.Millisecond)},
			Timeout:  &timeout.Config{Timeout: r.s(time.Second)},
		}))
	if err != nil {
		return nil, err
	}
	toBank.client = &http.Client{Transport: bankTr}
	payment := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, err := toBank.send(req.Context(), req.Header.Get(requestIDHeader)); err != nil {
			// Our own refusals (breaker open, bulkhead full) tell the caller not to retry
			// (the do-not-retry signal): retrying them at once only adds load.
			if errors.Is(err, breaker.ErrOpen) || errors.Is(err, bulkhead.ErrFull) {
				w.Header().Set(httpx.RetryDisabledHeader, "true")
			}
			http.Error(w, "bank unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "paid\n")
	})
	return httpx.Middleware(payment), nil // the do-not-retry signal, server side
}

// stormwatchPaymentClient is order → payment in the stormwatch setup: the one retry layer (2
// attempts, 10% budget, 4s deadline), a breaker, a bulkhead, a per-attempt timeout and the
// fallback "payment pending", through an httpx transport.
func (r *stormRun) stormwatchPaymentClient() (*http.Client, error) {
	rc := retry.Config{}
	rc.MaxAttempts = 2
	rc.Backoff = retry.Backoff{Strategy: retry.Randomized, Base: r.s(500 * time.Millisecond), Multiplier: 2, Factor: 0.5, Cap: r.s(2 * time.Second)}
	rc.Budget.DecayWindow = r.s(retryDefaults.Budget.DecayWindow)
	rc.Idempotent = true
	payTr, err := httpx.NewTransport(r.transport, httpx.WithRegistry(r.reg), httpx.WithKey(constKey("payment-service")),
		httpx.WithPipeline(instrument.PipelineConfig{
			Retry: &rc,
			Breaker: &breaker.Config{
				Window: breaker.CountBased, WindowSize: 20, MinCalls: 10, OpenDuration: r.s(5 * time.Second),
			},
			Bulkhead: &bulkhead.Config{MaxConcurrent: 30, MaxWait: r.s(200 * time.Millisecond)},
			Timeout:  &timeout.Config{Timeout: r.s(2 * time.Second)},
			Fallback: &fallback.Config{On: fallbackCauses},
		}),
		httpx.WithFallback(paymentPending))
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: payTr, Timeout: r.s(4 * time.Second)}, nil // the call's deadline
}

// paymentPending is the order service's fallback for the payment service.
func paymentPending(req *http.Request, _ catalog.Cause, _ error) (*http.Response, error) {
	const pending = "payment pending (check later)\n"
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Request: req,
		Body: io.NopCloser(strings.NewReader(pending)), ContentLength: int64(len(pending))}, nil
}

// order is the order service: it calls the payment service through toPayment (naive: its
// retry loop; stormwatch: its pipeline, whose fallback answers "payment pending").
func (r *stormRun) order(toPayment *stormLayer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get(requestIDHeader)
		if r.setup == SetupNaive {
			if err := toPayment.naiveCall(req.Context(), id); err != nil {
				http.Error(w, "payment failed", http.StatusBadGateway)
				return
			}
			_, _ = io.WriteString(w, "ordered\n")
			return
		}
		degraded, err := toPayment.send(req.Context(), id)
		if err != nil {
			http.Error(w, "payment failed", http.StatusBadGateway)
			return
		}
		if degraded {
			w.Header().Set(degradedHeader, "true")
			_, _ = io.WriteString(w, "ordered, payment pending (check later)\n")
			return
		}
		_, _ = io.WriteString(w, "ordered\n")
	})
}

// drive runs the users: an open loop of requests at the wall rate, each bounded in time, and
// turns the bank slow and healthy again on schedule. It returns when every request is over.
func (r *stormRun) drive(orderURL string) {
	start := time.Now()
	faultAt, recoverAt := start.Add(r.s(r.cfg.Warmup)), start.Add(r.s(r.cfg.Warmup+r.cfg.Fault))
	interval := time.Duration(float64(time.Second) / r.wallRate)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 0; i < r.n; i++ {
		// Request i is due at start + i·interval: a late wake-up sends the missed ones at once,
		// so the number of user requests per phase does not depend on the machine's load.
		timer.Reset(time.Until(start.Add(time.Duration(i) * interval)))
		select {
		case <-r.runCtx.Done():
			return
		case <-timer.C:
		}
		now := start.Add(time.Duration(i) * interval)
		r.schedule(i, now, faultAt, recoverAt)
		if now.Sub(start) >= r.s(r.total()) {
			return
		}
		r.issued++
		wg.Add(1)
		go func(i int, at time.Duration) {
			defer wg.Done()
			r.user(i, at, orderURL)
		}(i, time.Duration(float64(now.Sub(start))*r.speed))
	}
}

// schedule turns the bank slow at faultAt and healthy again at recoverAt, noting the first
// user request i (due at now) of each phase.
func (r *stormRun) schedule(i int, now, faultAt, recoverAt time.Time) {
	if r.firstFault < 0 && !now.Before(faultAt) {
		r.firstFault = i
		r.bank.service.Store(int64(r.s(r.cfg.FaultService)))
	}
	if r.firstFault >= 0 && r.firstAfter < 0 && !now.Before(recoverAt) {
		r.firstAfter = i
		r.bank.service.Store(int64(r.s(r.cfg.BankService)))
	}
}

// user sends user request i, sent at demo time at, and records what it got.
func (r *stormRun) user(i int, at time.Duration, orderURL string) {
	r.outcomes[i].at = at
	rctx, cancel := context.WithTimeout(r.runCtx, r.s(10*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, orderURL, nil)
	if err != nil {
		return
	}
	req.Header.Set(requestIDHeader, strconv.Itoa(i))
	resp, err := r.client.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		r.outcomes[i].degrade = resp.Header.Get(degradedHeader) != ""
		r.outcomes[i].real = !r.outcomes[i].degrade
	}
}

// settle lets the naive payment service's orphaned retries reach the bank before counting.
func (r *stormRun) settle() {
	if r.setup != SetupNaive {
		return
	}
	t := time.NewTimer(r.s(3*time.Second + 300*time.Millisecond))
	select {
	case <-r.runCtx.Done():
	case <-t.C:
	}
	t.Stop()
}

// result counts the answers, the amplification at the bank during the fault and the time to
// recover.
func (r *stormRun) result() StormResult {
	res := StormResult{Setup: r.setup, Observed: r.cfg.Observe, Users: r.issued}
	for _, o := range r.outcomes[:r.issued] {
		switch {
		case o.real:
			res.Real++
		case o.degrade:
			res.Degraded++
		default:
			res.Failed++
		}
	}
	for i := r.firstFault; i < r.firstAfter; i++ {
		res.FaultRequests++
		res.BankRequests += uint64(r.bank.perUser[i].Load())
	}
	if res.FaultRequests > 0 {
		res.Amplification = float64(res.BankRequests) / float64(res.FaultRequests)
	}
	res.TimeToRecover, res.Recovered = r.recovery()
	return res
}

// recovery finds the first second (demo time, after the fault) from which on every second's
// requests got a real answer in RecoveryRatio of cases. The last second alone is not a
// recovery: it takes two good seconds.
func (r *stormRun) recovery() (time.Duration, bool) {
	buckets := int(r.cfg.Observe / time.Second)
	okN, allN := make([]int, buckets), make([]int, buckets)
	for i := r.firstAfter; i < r.issued; i++ {
		b := int((r.outcomes[i].at - r.cfg.Warmup - r.cfg.Fault) / time.Second)
		if b < 0 || b >= buckets {
			continue
		}
		allN[b]++
		if r.outcomes[i].real {
			okN[b]++
		}
	}
	recovered := -1
	for b := buckets - 1; b >= 0; b-- {
		if allN[b] == 0 || float64(okN[b]) < r.cfg.RecoveryRatio*float64(allN[b]) {
			break
		}
		recovered = b
	}
	if recovered >= 0 && recovered < buckets-1 {
		return time.Duration(recovered) * time.Second, true
	}
	return 0, false
}
