// Package retrylog writes the retry log: one log/slog record per retry decision.
//
// A [Logger] listens to the Retries of an events hub (usually a registry's) and writes, for every
// decision, a record with message "retry" and exactly these attributes:
//
//	event           "retry"
//	name            the retry's name (the dependency)
//	correlation_id  from the context (see WithCorrelationID); the retry generates one when absent
//	endpoint        method and host+path or route — never a query string or userinfo
//	attempt         the attempt that just finished, 1-based
//	max_attempts    the configured bound
//	elapsed_ms      since the logical call began
//	delay_ms        the delay before the next attempt (0 when none follows)
//	delay_source    backoff or retry_after; absent when no delay follows (outcome other than retrying)
//	error_class     the attempt's failure class; absent on success
//	http_status     the response status; absent when there was no response
//	outcome         retrying, succeeded, gave_up, aborted or budget_exhausted
//
// Levels: WARN for retrying and budget_exhausted, ERROR for gave_up, INFO for succeeded, DEBUG
// for aborted (configurable with [WithLevel]). Bodies, headers, query strings, userinfo, tokens
// and error messages are never logged. Under a storm, each name logs at most 10 lines per second
// (configurable with [WithRateLimit]); the lines dropped are reported by one summary record with
// the attribute suppressed=N when the next second begins or on [Logger.Flush].
//
//	reg, _ := instrument.NewRegistry()
//	l, _ := retrylog.New(nil) // JSON to stderr
//	defer l.Attach(reg.Events())()
package retrylog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/internal/redact"
)

// Message is the message of every retry log record.
const Message = "retry"

// DefaultRateLimit is the default number of lines per name per second.
const DefaultRateLimit = 10

// maxNames bounds the per-name rate-limit state; past it, idle names are forgotten.
const maxNames = 10_000

// Logger turns retry events into slog records. It is safe for concurrent use.
type Logger struct {
	h      slog.Handler
	levels [catalog.NumOutcomes]slog.Level
	limit  int
	clk    clock.Clock

	mu    sync.Mutex
	names map[string]*window
}

type window struct {
	start      time.Time
	lines      int
	suppressed int
}

// Option configures a Logger.
type Option func(*Logger) error

// WithLevel sets the level of the records of one outcome.
func WithLevel(outcome catalog.Outcome, level slog.Level) Option {
	return func(l *Logger) error {
		if outcome >= catalog.NumOutcomes {
			return &catalog.ConfigError{Primitive: "retrylog", Field: "WithLevel", Value: fmt.Sprint(outcome), Reason: fmt.Sprintf("unknown outcome (want one of %v)", catalog.Outcomes)}
		}
		l.levels[outcome] = level
		return nil
	}
}

// WithRateLimit sets the most lines per name per second (default 10); 0 turns the limit off.
func WithRateLimit(perSecond int) Option {
	return func(l *Logger) error {
		if perSecond < 0 {
			return &catalog.ConfigError{Primitive: "retrylog", Field: "WithRateLimit", Value: perSecond, Reason: "must not be negative"}
		}
		l.limit = perSecond
		return nil
	}
}

// WithClock sets the clock of the rate limit (default: the wall clock).
func WithClock(c clock.Clock) Option {
	return func(l *Logger) error {
		if c == nil {
			return &catalog.ConfigError{Primitive: "retrylog", Field: "WithClock", Reason: "clock must not be nil"}
		}
		l.clk = c
		return nil
	}
}

// New returns a Logger writing to h; a nil h means JSON lines on stderr at level INFO and above.
func New(h slog.Handler, opts ...Option) (*Logger, error) {
	if h == nil {
		h = slog.NewJSONHandler(os.Stderr, nil)
	}
	l := &Logger{
		h: h,
		levels: [catalog.NumOutcomes]slog.Level{
			catalog.OutcomeRetrying:        slog.LevelWarn,
			catalog.OutcomeBudgetExhausted: slog.LevelWarn,
			catalog.OutcomeGaveUp:          slog.LevelError,
			catalog.OutcomeSucceeded:       slog.LevelInfo,
			catalog.OutcomeAborted:         slog.LevelDebug,
		},
		limit: DefaultRateLimit,
		clk:   clock.Real{},
		names: map[string]*window{},
	}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Attach registers the logger on hub's retry events. The returned function detaches it and
// flushes pending suppressed summaries. A nil hub has no events: Attach does nothing.
func (l *Logger) Attach(hub *events.Hub) (detach func()) {
	if hub == nil {
		return func() {}
	}
	remove := hub.Retries.Add(l.Log)
	return func() {
		remove()
		l.Flush()
	}
}

// Log writes the record of one retry decision, unless the name's rate limit suppresses it.
func (l *Logger) Log(e events.Retry) {
	level := slog.LevelWarn
	if e.Outcome < catalog.NumOutcomes {
		level = l.levels[e.Outcome]
	}
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if !l.h.Enabled(ctx, level) {
		return
	}
	now := l.clk.Now()
	emit, summary := l.admit(e.Name, now)
	if summary > 0 {
		l.summary(ctx, e.Name, summary, now)
	}
	if !emit {
		return
	}
	at := e.At
	if at.IsZero() {
		at = now
	}
	id := events.CorrelationID(ctx)
	if id == "" {
		id = events.NewCorrelationID()
	}
	r := slog.NewRecord(at, level, Message, 0)
	attrs := [12]slog.Attr{
		slog.String("event", Message),
		slog.String(catalog.LabelName, e.Name),
		slog.String("correlation_id", id),
		slog.String("endpoint", redact.Endpoint(e.Endpoint)),
		slog.Int(catalog.FieldAttempt, e.Attempt),
		slog.Int("max_attempts", e.MaxAttempts),
		slog.Int64("elapsed_ms", e.Elapsed.Milliseconds()),
		slog.Int64("delay_ms", e.Delay.Milliseconds()),
	}
	n := 8
	if e.HasDelay() {
		attrs[n] = slog.String(catalog.FieldDelaySource, e.DelaySource.String())
		n++
	}
	if e.ErrorClass != catalog.ClassNone {
		attrs[n] = slog.String("error_class", e.ErrorClass.String())
		n++
	}
	if e.HTTPStatus != 0 {
		attrs[n] = slog.Int("http_status", e.HTTPStatus)
		n++
	}
	attrs[n] = slog.String(catalog.FieldOutcome, e.Outcome.String())
	r.AddAttrs(attrs[:n+1]...)
	_ = l.h.Handle(ctx, r)
}

// admit applies the per-name rate limit at now: whether to write the line, and the count of lines
// suppressed in the name's previous window when a new window begins.
func (l *Logger) admit(name string, now time.Time) (emit bool, summary int) {
	if l.limit == 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.names[name]
	if w == nil {
		if len(l.names) >= maxNames {
			l.forgetIdle(now)
		}
		w = &window{start: now}
		l.names[name] = w
	}
	if now.Sub(w.start) >= time.Second || now.Before(w.start) {
		summary = w.suppressed
		*w = window{start: now}
	}
	if w.lines < l.limit {
		w.lines++
		return true, summary
	}
	w.suppressed++
	return false, summary
}

// forgetIdle drops the state of names whose window ended with nothing suppressed. Called with mu held.
func (l *Logger) forgetIdle(now time.Time) {
	for name, w := range l.names {
		if w.suppressed == 0 && now.Sub(w.start) >= time.Second {
			delete(l.names, name)
		}
	}
}

// Flush writes the summary of every name with suppressed lines in its current window.
func (l *Logger) Flush() {
	now := l.clk.Now()
	type pending struct {
		name string
		n    int
	}
	var out []pending
	l.mu.Lock()
	for name, w := range l.names {
		if w.suppressed > 0 {
			out = append(out, pending{name, w.suppressed})
			w.suppressed = 0
		}
	}
	l.mu.Unlock()
	for _, p := range out {
		l.summary(context.Background(), p.name, p.n, now)
	}
}

// summary writes the record that reports n suppressed lines of name.
func (l *Logger) summary(ctx context.Context, name string, n int, now time.Time) {
	r := slog.NewRecord(now, slog.LevelWarn, Message, 0)
	r.AddAttrs(slog.String("event", Message), slog.String("name", name), slog.Int("suppressed", n))
	_ = l.h.Handle(ctx, r)
}

// WithCorrelationID returns a context carrying id as the correlation id of the logical call (the
// same helper as events.WithCorrelationID).
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return events.WithCorrelationID(ctx, id)
}

// CorrelationID returns the correlation id carried by ctx, or "" (see events.CorrelationID).
func CorrelationID(ctx context.Context) string { return events.CorrelationID(ctx) }
