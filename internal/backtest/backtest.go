// Package backtest replays generated alerting rules over a time range of recorded data read
// through a Prometheus-compatible HTTP API (Prometheus, Mimir, Thanos Query, VictoriaMetrics),
// simulating `for` and `keep_firing_for` as Prometheus's rule manager does, and reports per
// alert and label set when each alert would have been pending, firing and resolved. It also
// compares that replay with the server's own ALERTS series and searches thresholds and fors
// that separate marked incidents from quiet time.
//
// Each alert's expression is evaluated with range queries at the evaluation interval, in
// chunks of a bounded number of steps, and fed step by step into a state machine per label
// set: memory holds one chunk's answer and the episodes found. It never writes to the server.
package backtest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormwatch-go/stormwatch/rules"
)

// DefaultChunkSteps is how many evaluation steps one range query covers at most.
const DefaultChunkSteps = 1440

// Options describe a backtest.
type Options struct {
	Source Source
	// Start and End bound the range (inclusive); End must be after Start.
	Start, End time.Time
	// Interval is the rule groups' evaluation interval, the step of every range query.
	Interval time.Duration
	// ChunkSteps bounds the steps of one range query; 0 means DefaultChunkSteps.
	ChunkSteps int
	// Recording says where recorded series come from; "" means RecordingAuto.
	Recording Recording
	// Progress, when set, is called after each range query with the alert and how many of its
	// chunks are done.
	Progress func(alert string, done, total int)
}

func (o Options) validate() error {
	switch {
	case o.Source == nil:
		return fmt.Errorf("backtest: no source")
	case o.Interval <= 0:
		return fmt.Errorf("backtest: evaluation interval %v: must be positive", o.Interval)
	case !o.End.After(o.Start):
		return fmt.Errorf("backtest: range %s to %s: the end must be after the start", o.Start.Format(time.RFC3339), o.End.Format(time.RFC3339))
	}
	switch o.Recording {
	case "", RecordingAuto, RecordingServer, RecordingInline:
		return nil
	}
	return fmt.Errorf("backtest: recording mode %q: want auto, server or inline", o.Recording)
}

// Series is the timeline of one label set of an alert.
type Series struct {
	Labels string `json:"labels"`
	// Episodes are the episodes that fired, in time order.
	Episodes []Episode `json:"episodes"`
	// PendingOnly counts the episodes that were pending and never fired.
	PendingOnly int `json:"pending_only"`
	// Pages counts the episodes that began firing inside the range.
	Pages      int           `json:"pages"`
	FiringTime time.Duration `json:"firing_ns"`
}

// AlertResult is the backtest of one alerting rule.
type AlertResult struct {
	Alert         string        `json:"alert"`
	Group         string        `json:"group"`
	Severity      string        `json:"severity,omitempty"`
	For           time.Duration `json:"for_ns"`
	KeepFiringFor time.Duration `json:"keep_firing_for_ns"`
	// Expr is the expression evaluated (after inlining recording rules).
	Expr        string        `json:"expr"`
	Series      []Series      `json:"series"`
	Pages       int           `json:"pages"`
	PagesPerDay float64       `json:"pages_per_day"`
	FiringTime  time.Duration `json:"firing_ns"`
	// Notes say how the expression was evaluated where it matters (inlined recording rules,
	// ALERTS read from the server).
	Notes []string `json:"notes,omitempty"`
}

// Report is a whole backtest.
type Report struct {
	Start    time.Time     `json:"start"`
	End      time.Time     `json:"end"`
	Interval time.Duration `json:"interval_ns"`
	Alerts   []AlertResult `json:"alerts"`
}

// Run backtests every alerting rule of groups (recording rules are read or inlined as
// opts.Recording says).
func Run(ctx context.Context, groups []rules.Group, opts Options) (*Report, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	plan, err := newPlan(ctx, groups, opts)
	if err != nil {
		return nil, err
	}
	rep := &Report{Start: opts.Start, End: opts.End, Interval: opts.Interval}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			res, err := plan.alert(ctx, g.Name, r)
			if err != nil {
				return nil, err
			}
			rep.Alerts = append(rep.Alerts, res)
		}
	}
	return rep, nil
}

// plan is a backtest with its recording rules resolved.
type plan struct {
	opts Options
	in   inliner
}

func newPlan(ctx context.Context, groups []rules.Group, opts Options) (*plan, error) {
	exprs, names := recordedNames(groups)
	p := &plan{opts: opts, in: inliner{exprs: exprs, inline: map[string]bool{}, step: opts.Interval}}
	for _, n := range names {
		switch opts.Recording {
		case RecordingServer:
			continue
		case RecordingInline:
			p.in.inline[n] = true
			continue
		}
		ok, err := opts.Source.HasSeries(ctx, n, opts.Start, opts.End)
		if err != nil {
			return nil, err
		}
		p.in.inline[n] = !ok
	}
	return p, nil
}

// expr returns the expression to evaluate for expr and notes on how.
func (p *plan) expr(expr string) (string, []string, error) {
	var notes, inlined []string
	for _, n := range references(expr, p.in.exprs) {
		if p.in.inline[n] {
			inlined = append(inlined, n)
		}
	}
	if len(inlined) > 0 {
		sort.Strings(inlined)
		notes = append(notes, "recording rules inlined (no recorded series on the server): "+strings.Join(inlined, ", "))
	}
	if len(findSelectors(expr, "ALERTS")) > 0 || len(findSelectors(expr, "ALERTS_FOR_STATE")) > 0 {
		notes = append(notes, "reads ALERTS: the server's own alert state is used, not the replay's")
	}
	out, err := p.in.rewrite(expr)
	return out, notes, err
}

// begin is where a rule's replay starts: early enough for an alert pending at Start to fire
// on time.
func (p *plan) begin(warmup time.Duration) time.Time {
	n := (warmup + p.opts.Interval - 1) / p.opts.Interval
	return p.opts.Start.Add(-n * p.opts.Interval)
}

func (p *plan) alert(ctx context.Context, group string, r rules.Rule) (AlertResult, error) {
	expr, notes, err := p.expr(r.Expr)
	if err != nil {
		return AlertResult{}, fmt.Errorf("%s: %w", r.Alert, err)
	}
	res := AlertResult{Alert: r.Alert, Group: group, Severity: r.Labels["severity"], For: r.For,
		KeepFiringFor: r.KeepFiringFor, Expr: expr, Notes: notes}
	series := map[string]*Series{}
	m := NewMachine(r.For, r.KeepFiringFor)
	done := func(key string, e Episode) { p.record(series, key, e) }
	self, err := p.readsOwnALERTS(ctx, r.Alert, expr)
	if err != nil {
		return AlertResult{}, fmt.Errorf("%s: %w", r.Alert, err)
	}
	if self {
		res.Notes = append(slices.DeleteFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "reads ALERTS") }),
			"reads its own ALERTS, which the server does not hold in the range: replayed step by step, reading the replay's own firing alerts")
		err = p.scanSelf(ctx, r, expr, p.begin(r.For+r.KeepFiringFor), m, done)
	} else {
		err = p.scan(ctx, r.Alert, expr, p.begin(r.For+r.KeepFiringFor), func(ts time.Time, present map[string]bool) {
			m.Step(ts, present, done)
		}, func(m model.Metric) string { return Key(m, r.Alert, r.Labels) })
	}
	if err != nil {
		return AlertResult{}, fmt.Errorf("%s: %w", r.Alert, err)
	}
	m.Close(done)
	res.Series = summarize(series, p.opts.End)
	for _, s := range res.Series {
		res.Pages += s.Pages
		res.FiringTime += s.FiringTime
	}
	res.PagesPerDay = float64(res.Pages) / (p.opts.End.Sub(p.opts.Start).Hours() / 24)
	return res, nil
}

// record keeps an episode that matters to the range: one that fired, or was pending, after
// Start.
func (p *plan) record(series map[string]*Series, key string, e Episode) {
	if !e.Resolved.IsZero() && !e.Resolved.After(p.opts.Start) {
		return
	}
	s := series[key]
	if s == nil {
		s = &Series{Labels: key}
		series[key] = s
	}
	if e.Fired.IsZero() {
		s.PendingOnly++
		return
	}
	s.Episodes = append(s.Episodes, e)
	if !e.Fired.Before(p.opts.Start) {
		s.Pages++
	}
	from := e.Fired
	if from.Before(p.opts.Start) {
		from = p.opts.Start
	}
	s.FiringTime += Episode{Fired: from, Resolved: e.Resolved}.FiringFor(p.opts.End)
}

func summarize(series map[string]*Series, end time.Time) []Series {
	out := make([]Series, 0, len(series))
	for _, s := range series {
		slices.SortFunc(s.Episodes, func(a, b Episode) int { return a.Pending.Compare(b.Pending) })
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out
}

// scan evaluates expr from begin to End at the interval, chunk by chunk, and calls visit at
// every step with the keys of the series present then.
func (p *plan) scan(ctx context.Context, name, expr string, begin time.Time, visit func(time.Time, map[string]bool), key func(model.Metric) string) error {
	chunk := p.opts.ChunkSteps
	if chunk <= 0 {
		chunk = DefaultChunkSteps
	}
	step := p.opts.Interval
	total := int(p.opts.End.Sub(begin)/step) + 1
	chunks := (total + chunk - 1) / chunk
	for c := 0; c < chunks; c++ {
		from := begin.Add(time.Duration(c*chunk) * step)
		n := min(chunk, total-c*chunk)
		to := from.Add(time.Duration(n-1) * step)
		m, err := p.opts.Source.QueryRange(ctx, expr, Range{Start: from, End: to, Step: step})
		if err != nil {
			return err
		}
		at := make([][]string, n)
		for _, ss := range m {
			k := key(ss.Metric)
			for _, v := range ss.Values {
				i := int((v.Timestamp.Time().Sub(from) + step/2) / step)
				if i >= 0 && i < n {
					at[i] = append(at[i], k)
				}
			}
		}
		for i := range n {
			present := make(map[string]bool, len(at[i]))
			for _, k := range at[i] {
				present[k] = true
			}
			visit(from.Add(time.Duration(i)*step), present)
		}
		if p.opts.Progress != nil {
			p.opts.Progress(name, c+1, chunks)
		}
	}
	return nil
}

// selfALERTS returns the selectors of expr that read alert's own firing ALERTS series (a
// hysteresis: the alert holds while it is firing).
func selfALERTS(expr, alert string) []selectorRef {
	var out []selectorRef
	for _, s := range findSelectors(expr, "ALERTS") {
		if s.rangeDur == "" && s.offset == "" && strings.Contains(s.matchers, `alertname="`+alert+`"`) &&
			strings.Contains(s.matchers, `alertstate="firing"`) {
			out = append(out, s)
		}
	}
	return out
}

// readsOwnALERTS says whether expr reads alert's own ALERTS series and the server holds none
// of it in the range (the rules did not run there): then the replay must provide them.
func (p *plan) readsOwnALERTS(ctx context.Context, alert, expr string) (bool, error) {
	if len(selfALERTS(expr, alert)) == 0 {
		return false, nil
	}
	has, err := p.opts.Source.HasSeries(ctx, `ALERTS{alertname="`+alert+`"}`, p.opts.Start, p.opts.End)
	return !has, err
}

// scanSelf replays an alert that reads its own firing ALERTS series one evaluation at a time:
// at each step those selectors become the label sets the replay had firing after the previous
// step, as the ALERTS series Prometheus wrote then.
func (p *plan) scanSelf(ctx context.Context, r rules.Rule, expr string, begin time.Time, m *Machine, done func(string, Episode)) error {
	step := p.opts.Interval
	total := int(p.opts.End.Sub(begin)/step) + 1
	chunk := p.opts.ChunkSteps
	if chunk <= 0 {
		chunk = DefaultChunkSteps
	}
	chunks := (total + chunk - 1) / chunk
	labelsOf := map[string]model.Metric{}
	for i := range total {
		ts := begin.Add(time.Duration(i) * step)
		var firing []string
		for k := range labelsOf {
			if m.Firing(k) {
				firing = append(firing, k)
			}
		}
		sort.Strings(firing)
		e := expr
		sels := selfALERTS(expr, r.Alert)
		for j := len(sels) - 1; j >= 0; j-- {
			e = e[:sels[j].start] + alertsVector(firing, labelsOf) + e[sels[j].end:]
		}
		res, err := p.opts.Source.QueryRange(ctx, e, Range{Start: ts, End: ts, Step: step})
		if err != nil {
			return err
		}
		present := map[string]bool{}
		for _, ss := range res {
			if len(ss.Values) == 0 {
				continue
			}
			k := Key(ss.Metric, r.Alert, r.Labels)
			present[k] = true
			if labelsOf[k] == nil {
				lm := model.Metric{}
				for n, v := range ss.Metric {
					if n != model.MetricNameLabel {
						lm[n] = v
					}
				}
				for n, v := range r.Labels {
					lm[model.LabelName(n)] = model.LabelValue(v)
				}
				lm[model.AlertNameLabel] = model.LabelValue(r.Alert)
				labelsOf[k] = lm
			}
		}
		m.Step(ts, present, done)
		if p.opts.Progress != nil && ((i+1)%chunk == 0 || i == total-1) {
			p.opts.Progress(r.Alert, (i+chunk)/chunk, chunks)
		}
	}
	return nil
}

// alertsVector is a PromQL vector of the firing ALERTS series of keys: one series per key
// with its labels and alertstate="firing", or an empty vector.
func alertsVector(keys []string, labelsOf map[string]model.Metric) string {
	if len(keys) == 0 {
		return "(vector(1) < 0)"
	}
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		ls := labelsOf[k]
		names := make([]string, 0, len(ls)+1)
		for n := range ls {
			names = append(names, string(n))
		}
		sort.Strings(names)
		v := "vector(1)"
		for _, n := range names {
			v = fmt.Sprintf("label_replace(%s, %q, %s, \"\", \"\")", v, n, strconv.Quote(string(ls[model.LabelName(n)])))
		}
		v = fmt.Sprintf("label_replace(%s, \"alertstate\", \"firing\", \"\", \"\")", v)
		parts = append(parts, v)
	}
	return "(" + strings.Join(parts, " or ") + ")"
}
