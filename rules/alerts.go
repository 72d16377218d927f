package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
)

// Rule groups, in file order.
const (
	GroupRecording      = "stormwatch-recording"
	GroupCircuitBreaker = "stormwatch-circuitbreaker"
	GroupRetry          = "stormwatch-retry"
	GroupBulkhead       = "stormwatch-bulkhead"
	GroupFallback       = "stormwatch-fallback"
)

// GroupNames lists the rule groups in file order.
var GroupNames = []string{GroupRecording, GroupCircuitBreaker, GroupRetry, GroupBulkhead, GroupFallback}

// The default alerts.
const (
	AlertStuckOpen              = "CircuitBreakerStuckOpen"
	AlertFlapping               = "CircuitBreakerFlapping"
	AlertOpenFleetWide          = "CircuitBreakerOpenFleetWide"
	AlertRejectingCalls         = "CircuitBreakerRejectingCalls"
	AlertRetryRateHigh          = "RetryRateHigh"
	AlertRetryRateSpike         = "RetryRateSpike"
	AlertRetryBudgetExhausted   = "RetryBudgetExhausted"
	AlertRetriesNotRescuing     = "RetriesNotRescuing"
	AlertBulkheadRejectionsHigh = "BulkheadRejectionsHigh"
	AlertBulkheadSaturated      = "BulkheadSaturated"
	AlertFallbackSustained      = "FallbackSustained"
	AlertSlowCallRateHigh       = "SlowCallRateHigh"
)

// RetrySpikeFloor is the retry rate (extra attempts per call) RetryRateSpike also requires, so
// that a jump from 0.01% to 0.03% does not page.
const RetrySpikeFloor = 0.01

// stuckOpenMinWindow is the shortest window in which CircuitBreakerStuckOpen looks for
// rejections or failed probes; wide enough for several scrapes at any sane interval.
const stuckOpenMinWindow = 2 * time.Minute

// flappingWindow is the window over which CircuitBreakerFlapping counts trips.
const flappingWindow = 15 * time.Minute

// alertSpec defines one default alert.
type alertSpec struct {
	name        string
	group       string
	perInstance bool // keeps the instance label: the alert is about one process
	severity    string
	threshold   float64
	bounds      bounds
	// thresholdDoc says what the threshold measures, for docs and error messages; {window}
	// stands for the rate window (see withWindow).
	thresholdDoc string
	// thresholdUnit is "seconds" when the threshold is a number of seconds, else "".
	thresholdUnit string
	forDur, keep  time.Duration
	summary       string
	// expr builds the expression.
	expr func(r *resolved, s settings) string
	// description builds the description; ref renders a label reference ({{ $labels.x }} in
	// rules, the value itself in test expectations).
	description func(r *resolved, s settings, ref func(string) string) string
}

// specs are the default alerts in output order.
var specs = []alertSpec{
	{
		name: AlertStuckOpen, group: GroupCircuitBreaker, perInstance: true, severity: "warning",
		threshold: 120, bounds: bounds{min: 15, max: 86400, integer: true},
		thresholdDoc:  "seconds the breaker has not been closed (since the trip that began the episode)",
		thresholdUnit: "seconds",
		forDur:        time.Minute,
		summary:       "Circuit breaker is stuck open while calls keep arriving.",
		expr: func(r *resolved, s settings) string {
			gi := r.by(true)
			w := "[" + FormatDuration(stuckOpenWindow(s)) + "]"
			return fmt.Sprintf(`max by (%[1]s) (
  time() - (%[2]s > 0)
) > %[3]s
and on (%[1]s)
(
  sum by (%[1]s) (increase(%[4]s%[6]s)) > 0
  or on (%[1]s)
  sum by (%[1]s) (increase(%[5]s%[6]s)) > 0
)`, gi, r.sel(r.name(catalog.BreakerTrippedSince)), num(s.threshold),
				r.sel(r.name(catalog.BreakerNotPermitted)),
				r.sel(r.name(catalog.BreakerTransitions), eq(catalog.LabelFrom, catalog.StateHalfOpen.String()), eq(catalog.LabelTo, catalog.StateOpen.String())), w)
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Circuit breaker %s has not been closed for more than %s and rejected calls or failed its half-open probes in the last %s: the dependency is still down for this process.",
				r.subject(true, ref), FormatDuration(time.Duration(s.threshold)*time.Second), FormatDuration(stuckOpenWindow(s)))
		},
	},
	{
		name: AlertFlapping, group: GroupCircuitBreaker, perInstance: true, severity: "warning",
		threshold: 3, bounds: bounds{min: 2, max: 40, integer: true},
		thresholdDoc: "closed→open trips within 15m",
		keep:         10 * time.Minute,
		summary:      "Circuit breaker keeps tripping.",
		expr: func(r *resolved, s settings) string {
			gi := r.by(true)
			return fmt.Sprintf("sum by (%s) (\n  increase(%s[%s])\n) >= %s", gi,
				r.sel(r.name(catalog.BreakerTransitions), eq(catalog.LabelFrom, catalog.StateClosed.String()), eq(catalog.LabelTo, catalog.StateOpen.String())),
				FormatDuration(flappingWindow), num(s.threshold))
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Circuit breaker %s tripped (closed to open) at least %s times in the last %s: the dependency is unstable or the breaker's thresholds are too tight.",
				r.subject(true, ref), num(s.threshold), FormatDuration(flappingWindow))
		},
	},
	{
		name: AlertOpenFleetWide, group: GroupCircuitBreaker, severity: "critical",
		threshold: 0.5, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of a job's instances whose breaker of that name is not closed",
		forDur:       2 * time.Minute,
		summary:      "Circuit breaker is open on most instances: the dependency is down.",
		expr: func(r *resolved, s settings) string {
			g := r.by(false)
			gi := r.by(true)
			ts := r.sel(r.name(catalog.BreakerTrippedSince))
			return fmt.Sprintf(`(
  count by (%[1]s) (max by (%[2]s) (%[3]s) > 0)
/
  count by (%[1]s) (max by (%[2]s) (%[3]s))
) > %[4]s`, g, gi, ts, num(s.threshold))
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Circuit breaker %s is not closed on more than %s of the instances for %s: the dependency itself is down, not one pod.",
				r.subject(false, ref), pct(s.threshold), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertRejectingCalls, group: GroupCircuitBreaker, severity: "info",
		threshold: 0.1, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of calls rejected by the breaker: not permitted / (permitted + not permitted)",
		forDur:       5 * time.Minute,
		summary:      "Circuit breaker is rejecting a significant share of calls.",
		expr: func(r *resolved, s settings) string {
			return r.sel(r.recBreakerRejectionRatio()) + " > " + num(s.threshold)
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Circuit breaker %s rejected more than %s of calls over the last %s, for %s: callers get the fallback or an error.",
				r.subject(false, ref), pct(s.threshold), r.window(), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertRetryRateHigh, group: GroupRetry, severity: "warning",
		threshold: 0.05, bounds: bounds{min: 0, max: 10, minOpen: true},
		thresholdDoc: "retry rate: extra attempts per logical call",
		forDur:       5 * time.Minute,
		summary:      "Retry rate is high.",
		expr: func(r *resolved, s settings) string {
			return r.sel(r.recRetryRate()) + " > " + num(s.threshold)
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Retry %s made more than %s extra attempts per call over the last %s, for %s: something downstream is persistently failing.",
				r.subject(false, ref), num(s.threshold), r.window(), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertRetryRateSpike, group: GroupRetry, severity: "warning",
		threshold: 3, bounds: bounds{min: 1, max: 100, minOpen: true},
		thresholdDoc: "factor by which the {window} retry rate must exceed its value one hour earlier",
		forDur:       5 * time.Minute,
		summary:      "Retry rate jumped compared with an hour ago.",
		expr: func(r *resolved, s settings) string {
			g := r.by(false)
			return fmt.Sprintf(`%[1]s > %[2]s
and on (%[3]s)
%[1]s > %[4]s * (
  sum by (%[3]s) (rate(%[5]s offset 1h))
/
  sum by (%[3]s) (rate(%[6]s offset 1h))
)`, r.sel(r.recRetryRate()), num(RetrySpikeFloor), g, num(s.threshold),
				r.rangeOf(r.sel(r.name(catalog.RetryAttempts))), r.rangeOf(r.sel(r.name(catalog.RetryCalls))))
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Retry %s: the retry rate over the last %s is more than %s times its value an hour ago and above %s extra attempts per call — often the earliest sign of a downstream fault.",
				r.subject(false, ref), r.window(), num(s.threshold), num(RetrySpikeFloor))
		},
	},
	{
		name: AlertRetryBudgetExhausted, group: GroupRetry, severity: "warning",
		threshold: 0, bounds: bounds{min: 0, max: 1e6},
		thresholdDoc: "retries refused by the retry budget, per second (2m rate)",
		forDur:       5 * time.Minute,
		summary:      "Retry budget is exhausted.",
		expr: func(r *resolved, s settings) string {
			return fmt.Sprintf("sum by (%s) (rate(%s[2m])) > %s", r.by(false), r.sel(r.name(catalog.RetryBudgetDenied)), num(s.threshold))
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Retry %s had retries refused by its budget continuously for %s: the budget is doing its job of stopping a retry storm, and calls fail without retrying.",
				r.subject(false, ref), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertRetriesNotRescuing, group: GroupRetry, severity: "warning",
		threshold: 0.5, bounds: bounds{min: 0, max: 1, minOpen: true},
		thresholdDoc: "rescue rate (0..1): successful_with_retry / (successful_with_retry + failed_with_retry)",
		forDur:       10 * time.Minute,
		summary:      "Retries are not rescuing calls.",
		expr: func(r *resolved, s settings) string {
			return r.sel(r.recRescueRate()) + " < " + num(s.threshold)
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Retry %s rescued fewer than %s of the calls it retried, for %s: it is retrying a persistent fault and only adds load; the call needs a circuit breaker.",
				r.subject(false, ref), pct(s.threshold), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertBulkheadRejectionsHigh, group: GroupBulkhead, severity: "warning",
		threshold: 0.01, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of calls rejected by the bulkhead",
		forDur:       5 * time.Minute,
		summary:      "Bulkhead is rejecting calls.",
		expr: func(r *resolved, s settings) string {
			return r.sel(r.recBulkheadRejectionRatio()) + " > " + num(s.threshold)
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Bulkhead %s rejected more than %s of calls over the last %s, for %s: it is undersized or the dependency got slower.",
				r.subject(false, ref), pct(s.threshold), r.window(), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertBulkheadSaturated, group: GroupBulkhead, severity: "warning",
		threshold: 0.9, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of the bulkhead's permits in use, on the busiest instance",
		forDur:       10 * time.Minute,
		summary:      "Bulkhead is nearly full.",
		expr: func(r *resolved, s settings) string {
			return fmt.Sprintf("max by (%s) (\n  %s\n/\n  (%s > 0)\n) > %s", r.by(false),
				r.sel(r.name(catalog.BulkheadInflight)), r.sel(r.name(catalog.BulkheadMaxConcurrent)), num(s.threshold))
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Bulkhead %s has had more than %s of its permits in use for %s: the next burst will be rejected.",
				r.subject(false, ref), pct(s.threshold), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertFallbackSustained, group: GroupFallback, severity: "warning",
		threshold: 0, bounds: bounds{min: 0, max: 1e6},
		thresholdDoc: "fallback invocations per second ({window} rate)",
		forDur:       15 * time.Minute,
		summary:      "Service is running degraded on fallbacks.",
		expr: func(r *resolved, s settings) string {
			return fmt.Sprintf("sum by (%s) (%s) > %s", r.by(false), r.sel(r.recFallbacksByCause()), num(s.threshold))
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Fallback %s ran in every %s window for %s: users are being served the degraded answer.",
				r.subject(false, ref), r.window(), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertSlowCallRateHigh, group: GroupCircuitBreaker, perInstance: true, severity: "info",
		threshold: 0.8, bounds: bounds{min: 0, max: 1, minOpen: true},
		thresholdDoc: "share (0..1) of the breaker's own slow-call-rate threshold",
		forDur:       10 * time.Minute,
		summary:      "Circuit breaker is close to tripping on slow calls.",
		expr: func(r *resolved, s settings) string {
			gi := r.by(true)
			return fmt.Sprintf("max by (%[1]s) (%[2]s)\n> %[3]s * max by (%[1]s) (%[4]s)", gi,
				r.sel(r.name(catalog.BreakerSlowCallRate)), num(s.threshold), r.sel(r.name(catalog.BreakerSlowCallRateThreshold)))
		},
		description: func(r *resolved, s settings, ref func(string) string) string {
			return fmt.Sprintf("Circuit breaker %s has had a slow-call rate above %s of its slow-call threshold for %s: it is about to trip on latency.",
				r.subject(true, ref), pct(s.threshold), FormatDuration(s.forDur))
		},
	},
}

// withWindow replaces, in text, {window} with the rate window w in PromQL syntax (5m),
// {window words} with it as a noun (5 minutes) and {window adj} as an adjective (5-minute).
func withWindow(text string, w time.Duration) string {
	words, adj := FormatDuration(w), FormatDuration(w)
	if m := w / time.Minute; w%time.Minute == 0 {
		words, adj = strconv.Itoa(int(m))+" minutes", strconv.Itoa(int(m))+"-minute"
		if m == 1 {
			words = "minute"
		}
	}
	return strings.NewReplacer("{window}", FormatDuration(w), "{window words}", words, "{window adj}", adj).Replace(text)
}

func stuckOpenWindow(s settings) time.Duration {
	return max(time.Duration(s.threshold)*time.Second, stuckOpenMinWindow)
}

func specByName(name string) (alertSpec, bool) {
	for _, s := range specs {
		if s.name == name {
			return s, true
		}
	}
	return alertSpec{}, false
}

// AlertNames lists the default alerts in output order.
func AlertNames() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// AlertInfo describes one default alert and its defaults.
type AlertInfo struct {
	Name      string
	Group     string
	Severity  string
	Threshold float64
	// ThresholdDoc says what the threshold measures.
	ThresholdDoc string
	// ThresholdUnit is "seconds" when the threshold is a number of seconds (written 120, not
	// 2m), else "" (a ratio, a count or a factor: see ThresholdDoc).
	ThresholdUnit string
	// ThresholdMin and ThresholdMax bound the threshold; ThresholdRange says whether the ends
	// are included and whether it must be a whole number: "a number in (0, 1)".
	ThresholdMin   float64
	ThresholdMax   float64
	ThresholdRange string
	For            time.Duration
	KeepFiringFor  time.Duration
	// PerInstance alerts keep the instance label: they are about one process.
	PerInstance bool
	Summary     string
}

// Alerts describes the default alerts in output order.
func Alerts() []AlertInfo {
	out := make([]AlertInfo, len(specs))
	for i, s := range specs {
		out[i] = AlertInfo{Name: s.name, Group: s.group, Severity: s.severity, Threshold: s.threshold,
			ThresholdDoc: withWindow(s.thresholdDoc, DefaultRateWindow), ThresholdUnit: s.thresholdUnit,
			ThresholdMin: s.bounds.min, ThresholdMax: s.bounds.max, ThresholdRange: s.bounds.String(),
			For: s.forDur, KeepFiringFor: s.keep, PerInstance: s.perInstance, Summary: s.summary}
	}
	return out
}

// subject renders "<name> (job=…, instance=…)" with every output label of the alert.
func (r *resolved) subject(perInstance bool, ref func(string) string) string {
	var parts []string
	for _, l := range r.labels(perInstance) {
		if l == catalog.LabelName {
			continue
		}
		parts = append(parts, l+"="+ref(l))
	}
	s := `"` + ref(catalog.LabelName) + `"`
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// templateRef renders a label reference in an alert template.
func templateRef(label string) string { return "{{ $labels." + label + " }}" }

// num renders a threshold in PromQL.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// pct renders a ratio as a percentage.
func pct(v float64) string { return strconv.FormatFloat(v*100, 'g', 6, 64) + "%" }
