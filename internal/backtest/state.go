package backtest

import (
	"sort"
	"time"

	"github.com/prometheus/common/model"
)

// Episode is one stretch during which an alert of one label set was active (pending, then
// perhaps firing), as Prometheus's rule manager would have reported it.
type Episode struct {
	// Pending is when the expression first returned the label set (the alert's activeAt).
	Pending time.Time `json:"pending"`
	// Fired is when the alert went from pending to firing; zero when it never fired.
	Fired time.Time `json:"fired,omitzero"`
	// Resolved is the first evaluation at which the alert was no longer active (after any
	// keep_firing_for); zero when it was still active at the end of the range.
	Resolved time.Time `json:"resolved,omitzero"`
}

// FiringFor is how long the episode was firing, counting up to end when it is still open.
func (e Episode) FiringFor(end time.Time) time.Duration {
	if e.Fired.IsZero() {
		return 0
	}
	to := e.Resolved
	if to.IsZero() {
		to = end
	}
	return to.Sub(e.Fired)
}

type alertState int

const (
	statePending alertState = iota + 1
	stateFiring
)

// tracked is one active alert of the machine.
type tracked struct {
	state     alertState
	activeAt  time.Time
	firedAt   time.Time
	keepSince time.Time
}

// Machine replays Prometheus's alerting-rule state machine (rules.AlertingRule.Eval) for one
// alerting rule: fed the label sets its expression returns at each evaluation, in time order,
// it reports every episode when it ends. A label set the expression returns becomes pending
// at that evaluation (activeAt); it fires at the first evaluation at which ts − activeAt ≥
// for; when the expression stops returning it, a firing alert keeps firing while
// ts − (first evaluation without it) < keep_firing_for and resolves otherwise, and a pending
// one is dropped. A label set that comes back after resolving starts a new episode.
type Machine struct {
	For, KeepFiringFor time.Duration
	active             map[string]*tracked
}

// NewMachine returns a machine for a rule with the given for and keep_firing_for.
func NewMachine(forDur, keepFiringFor time.Duration) *Machine {
	return &Machine{For: forDur, KeepFiringFor: keepFiringFor, active: map[string]*tracked{}}
}

// Step evaluates the rule at ts, when its expression returned the label sets in present (keys
// as Key renders them), and calls done for each episode that ended at ts.
func (m *Machine) Step(ts time.Time, present map[string]bool, done func(key string, e Episode)) {
	for k := range present {
		if _, ok := m.active[k]; !ok {
			m.active[k] = &tracked{state: statePending, activeAt: ts}
		}
	}
	for k, a := range m.active {
		if !present[k] {
			keep := false
			if a.state == stateFiring && m.KeepFiringFor > 0 {
				if a.keepSince.IsZero() {
					a.keepSince = ts
				}
				keep = ts.Sub(a.keepSince) < m.KeepFiringFor
			}
			if !keep {
				done(k, Episode{Pending: a.activeAt, Fired: a.firedAt, Resolved: ts})
				delete(m.active, k)
				continue
			}
		} else {
			a.keepSince = time.Time{}
		}
		if a.state == statePending && ts.Sub(a.activeAt) >= m.For {
			a.state, a.firedAt = stateFiring, ts
		}
	}
}

// Close ends the replay: every alert still active is reported with a zero Resolved, in key
// order.
func (m *Machine) Close(done func(key string, e Episode)) {
	keys := make([]string, 0, len(m.active))
	for k := range m.active {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := m.active[k]
		done(k, Episode{Pending: a.activeAt, Fired: a.firedAt})
	}
	m.active = map[string]*tracked{}
}

// Firing reports whether the alert of key is firing after the last Step.
func (m *Machine) Firing(key string) bool {
	a, ok := m.active[key]
	return ok && a.state == stateFiring
}

// Key renders the label set of an alert as Prometheus identifies it: the expression's result
// labels without the metric name, the rule's labels on top, and alertname.
func Key(metric model.Metric, alert string, ruleLabels map[string]string) string {
	ls := make(model.LabelSet, len(metric)+len(ruleLabels)+1)
	for n, v := range metric {
		if n != model.MetricNameLabel {
			ls[n] = v
		}
	}
	for n, v := range ruleLabels {
		ls[model.LabelName(n)] = model.LabelValue(v)
	}
	ls[model.AlertNameLabel] = model.LabelValue(alert)
	return ls.String()
}
