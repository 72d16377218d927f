package rules

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
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
	AlertDependencyOutage       = "DependencyOutage"
	AlertRetryStormContained    = "RetryStormContained"
)

// RetrySpikeFloor is the retry rate (extra attempts per call) RetryRateSpike also requires, so
// that a jump from 0.01% to 0.03% does not page.
const RetrySpikeFloor = 0.01

// stuckOpenMinWindow is the shortest window in which CircuitBreakerStuckOpen looks for
// rejections or failed probes; wide enough for several scrapes at any sane interval.
const stuckOpenMinWindow = 2 * time.Minute

// impactWindow is the window in which CircuitBreakerOpenFleetWide looks for rejections or
// failed probes on each instance: an open breaker nobody calls is not an outage.
const impactWindow = 2 * time.Minute

// flappingWindow is the window over which CircuitBreakerFlapping counts trips; the alert
// resolves at the latest one such window after the last trip.
const flappingWindow = 15 * time.Minute

// budgetWindow is the window of RetryBudgetExhausted's denial count: the alert needs denials
// in every such window for its for duration, and resolves about one window after the last.
// It holds at least two samples at any scrape interval up to 30s.
const budgetWindow = time.Minute

// DefaultMinInstances is how many instances of a job must have a breaker open before
// CircuitBreakerOpenFleetWide fires, unless AlertConfig.MinInstances says otherwise: one
// instance of one is not a fleet.
const DefaultMinInstances = 2

// MaxMinInstances bounds AlertConfig.MinInstances.
const MaxMinInstances = 10000

// valueFormat says how a description renders the alert's measured value ($value).
type valueFormat int

const (
	valuePercent  valueFormat = iota // humanizePercentage: 0.234 → 23.4%
	valueDuration                    // humanizeDuration: 135 → 2m 15s
	valueNumber                      // four significant digits: 0.2 → 0.2, 1252.5 → 1252
	valueCount                       // rounded: 3.05 → 3
)

// template is the alert template text printing $value.
func (f valueFormat) template() string {
	switch f {
	case valuePercent:
		return "{{ $value | humanizePercentage }}"
	case valueDuration:
		return "{{ $value | humanizeDuration }}"
	case valueCount:
		return `{{ printf "%.0f" $value }}`
	}
	return `{{ printf "%.4g" $value }}`
}

// text is what template expands to for v, as Prometheus's template functions print it (the
// generated tests expect it).
func (f valueFormat) text(v float64) string {
	switch f {
	case valuePercent:
		return fmt.Sprintf("%.4g%%", v*100)
	case valueDuration:
		return humanizeDuration(v)
	case valueCount:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// humanizeDuration is Prometheus's humanizeDuration template function for the values the
// alerts produce (seconds, at least 1).
func humanizeDuration(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 1 {
		return fmt.Sprintf("%.4gs", v)
	}
	d := int64(v)
	sec, mins, hours, days := d%60, (d/60)%60, (d/3600)%24, d/86400
	switch {
	case days != 0:
		return fmt.Sprintf("%dd %dh %dm %ds", days, hours, mins, sec)
	case hours != 0:
		return fmt.Sprintf("%dh %dm %ds", hours, mins, sec)
	case mins != 0:
		return fmt.Sprintf("%dm %ds", mins, sec)
	}
	return fmt.Sprintf("%.4gs", v)
}

// descArgs are what a description refers to: labels, the measured value and, for breakers,
// the trip cause — as alert template text in the rules, as the expanded text in the tests'
// expectations and as placeholders in the runbooks.
type descArgs struct {
	ref    func(label string) string
	value  string
	causes string
}

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
	// value is how the description prints the alert's value.
	value valueFormat
	// expr builds the expression.
	expr func(r *resolved, s settings) string
	// causes, for breaker alerts, builds the alert template text naming the trip cause(s).
	causes func(r *resolved, s settings) string
	// causesElse is what causes expands to when its query finds nothing (the tests expect it).
	causesElse string
	// description builds the description.
	description func(r *resolved, s settings, a descArgs) string
}

// specs are the default alerts in output order.
var specs = []alertSpec{
	{
		name: AlertStuckOpen, group: GroupCircuitBreaker, perInstance: true, severity: "warning",
		threshold: 120, bounds: bounds{min: 15, max: 86400, integer: true},
		thresholdDoc:  "seconds the breaker has not been closed (since the trip that began the episode)",
		thresholdUnit: "seconds",
		forDur:        time.Minute,
		summary:       "Circuit breaker %s is stuck open while calls keep arriving.",
		value:         valueDuration,
		expr: func(r *resolved, s settings) string {
			gi := r.by(true)
			ts := r.sel(r.name(catalog.BreakerTrippedSince))
			// The newest episode's series only: a closed breaker's previous episode, of another
			// cause, is still within the lookback when it trips again. The series whose trip
			// time is the breaker's latest (argmax by ==, not topk, which may pick another
			// series on each evaluation); two causes never share a trip time.
			return fmt.Sprintf(`(
  time()
  -
  (
    max by (%[1]s, %[2]s) (%[3]s > 0)
    == on (%[1]s) group_left ()
    max by (%[1]s) (%[3]s > 0)
  )
  unless on (%[1]s)
  %[4]s == 0
) > %[5]s
and on (%[1]s)
%[6]s`, gi, catalog.LabelCause, r.last(ts), ts, num(s.threshold), r.impact(stuckOpenWindow(s)))
		},
		causes: func(*resolved, settings) string {
			return "{{ with $labels." + catalog.LabelCause + " }}{{ . }}{{ else }}an unknown cause{{ end }}"
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Circuit breaker %s tripped on %s and has not been closed for %s (threshold %s); it rejected calls or failed its half-open probes in the last %s: the dependency is still down for this process.",
				r.subject(true, a.ref), a.causes, a.value, FormatDuration(time.Duration(s.threshold)*time.Second), FormatDuration(stuckOpenWindow(s)))
		},
	},
	{
		name: AlertFlapping, group: GroupCircuitBreaker, perInstance: true, severity: "warning",
		threshold: 3, bounds: bounds{min: 2, max: 40, integer: true},
		thresholdDoc: "closed→open trips within 15m (to fire; once firing, it holds while any trip is within 15m)",
		summary:      "Circuit breaker %s keeps tripping.",
		value:        valueCount,
		expr: func(r *resolved, s settings) string {
			gi := r.by(true)
			rec := r.sel(r.recBreakerTrips())
			return fmt.Sprintf("%[2]s >= %[3]s\nor on (%[1]s)\n(\n  %[2]s > 0\n  and on (%[1]s)\n  ALERTS{alertname=%[4]q, alertstate=\"firing\"}\n)",
				gi, rec, num(s.threshold), AlertFlapping)
		},
		causes: func(r *resolved, s settings) string {
			// The cause of the newest episode seen in the window: the trip cause of the last trip.
			q := "topk(1, max by (" + catalog.LabelCause + ") (last_over_time(" + r.labelSel(true, r.name(catalog.BreakerTrippedSince)) + "[" + FormatDuration(flappingWindow) + "]) > 0))"
			return r.queryTemplate(q, true, `{{ with . | first | label "`+catalog.LabelCause+`" }}{{ . }}{{ else }}unknown{{ end }}`, "unknown")
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Circuit breaker %s tripped (closed to open) %s times in the last %s (it fires at %s trips within %s and holds while the breaker keeps tripping; last trip caused by %s): the dependency is unstable or the breaker's thresholds are too tight. It resolves %s after the last trip, and a single later trip does not bring it back.",
				r.subject(true, a.ref), a.value, FormatDuration(flappingWindow), num(s.threshold), FormatDuration(flappingWindow), a.causes, FormatDuration(flappingWindow))
		},
	},
	{
		name: AlertOpenFleetWide, group: GroupCircuitBreaker, severity: "critical",
		threshold: 0.5, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of a job's instances whose breaker of that name is open or half-open and rejecting calls or failing probes",
		forDur:       2 * time.Minute,
		summary:      "Circuit breaker %s is open on most instances: the dependency is down.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			g, gi := r.by(false), r.by(true)
			state := r.name(catalog.BreakerState)
			impaired := fmt.Sprintf("max by (%[1]s) (%[2]s) > 0\n      and on (%[1]s)\n      %[3]s", gi,
				r.last(r.sel(state, re(catalog.LabelState, catalog.StateOpen.String(), catalog.StateHalfOpen.String()))), r.sel(r.recImpact()))
			// The impaired instances are counted once: the count, kept where it reaches the
			// minimum, is divided by the instances (a comparison without bool keeps the value).
			return fmt.Sprintf(`(
  (
    count by (%[1]s) (
      %[3]s
    ) >= %[6]d
  )
/
  count by (%[1]s) (max by (%[2]s) (%[4]s))
) > %[5]s`, g, gi, impaired, r.last(r.sel(state, eq(catalog.LabelState, catalog.StateClosed.String()))), num(s.threshold), s.minInstances)
		},
		causes: func(r *resolved, s settings) string {
			q := "count by (" + catalog.LabelCause + ") (max by (" + labelInstance + ", " + catalog.LabelCause + ") (" + r.labelSel(false, r.name(catalog.BreakerTrippedSince)) + " > 0))"
			return r.queryTemplate(q, false,
				`{{ range $i, $s := . | sortByLabel "`+catalog.LabelCause+`" }}{{ if $i }}, {{ end }}{{ with $s.Labels.`+catalog.LabelCause+` }}{{ . }}{{ else }}unknown{{ end }} on {{ $s.Value }}{{ end }}`, "unknown")
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Circuit breaker %s is open or half-open, and rejecting calls or failing its probes, on %s of the instances (at least %d instances) for %s; trip causes: %s. The dependency itself is down, not one pod.",
				r.subject(false, a.ref), a.value, s.minInstances, FormatDuration(s.forDur), a.causes)
		},
	},
	{
		name: AlertRejectingCalls, group: GroupCircuitBreaker, severity: "info",
		threshold: 0.1, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of calls rejected by the breaker: not permitted / (permitted + not permitted)",
		forDur:       5 * time.Minute,
		summary:      "Circuit breaker %s is rejecting a significant share of calls.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			return r.sel(r.recBreakerRejectionRatio()) + " > " + num(s.threshold) + r.floor(r.sel(r.recBreakerNotPermitted()))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Circuit breaker %s rejected %s of calls over the last %s (threshold %s, at least %d rejections), for %s: callers get the fallback or an error.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur))
		},
	},
	{
		name: AlertRetryRateHigh, group: GroupRetry, severity: "warning",
		threshold: 0.05, bounds: bounds{min: 0, max: 10, minOpen: true},
		thresholdDoc: "retry rate: extra attempts per logical call",
		forDur:       5 * time.Minute,
		summary:      "Retry rate of %s is high.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			return r.sel(r.recRetryRate()) + " > " + num(s.threshold) + r.floor(r.sel(r.recRetryAttempts()))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Retry %s made %s extra attempts per call over the last %s (threshold %s, at least %d retries), for %s: something downstream is persistently failing.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur))
		},
	},
	{
		name: AlertRetryRateSpike, group: GroupRetry, severity: "warning",
		threshold: 3, bounds: bounds{min: 1, max: 100, minOpen: true},
		thresholdDoc: "factor by which the {window} retry rate must exceed its value one hour earlier (during the first hour of data: its average over the data before the last {window} and the alert's for)",
		forDur:       5 * time.Minute,
		summary:      "Retry rate of %s jumped compared with an hour ago.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			g := r.by(false)
			attempts, calls := r.sel(r.recRetryAttempts()), r.sel(r.recRetryCalls())
			early := FormatDuration(spikeEarlyOffset(r, s))
			// The retry rate is read once: above the floor, then above the baseline.
			return fmt.Sprintf(`%[1]s > %[2]s > %[4]s * (
    %[5]s offset 1h
  /
    (%[6]s offset 1h > 0)
  or on (%[3]s)
    avg_over_time(%[5]s[1h] offset %[7]s)
  /
    (avg_over_time(%[6]s[1h] offset %[7]s) > 0)
)%[8]s`, r.sel(r.recRetryRate()), num(RetrySpikeFloor), g, num(s.threshold), attempts, calls, early, r.floor(attempts))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Retry %s made %s extra attempts per call over the last %s, more than %s times as many as an hour earlier and above %s — often the earliest sign of a downstream fault. In the first hour of data, before there is a value an hour earlier, the comparison is with the average over the data before the last %s.",
				r.subject(false, a.ref), a.value, r.window(), num(s.threshold), pct(RetrySpikeFloor), FormatDuration(spikeEarlyOffset(r, s)))
		},
	},
	{
		name: AlertRetryBudgetExhausted, group: GroupRetry, severity: "warning",
		threshold: 0.1, bounds: bounds{min: 0, max: 1, maxOpen: true},
		thresholdDoc: "share (0..1) of the retries wanted that the retry budget refused over the {window} window: refused / (refused + made)",
		forDur:       5 * time.Minute, keep: 2 * time.Minute,
		summary: "Retry budget of %s is exhausted.",
		value:   valuePercent,
		expr: func(r *resolved, s settings) string {
			denied := r.sel(r.recBudgetDenied())
			return fmt.Sprintf("%[1]s\n/\n(%[2]s + %[3]s)\n> %[4]s", r.floored(denied), denied, r.sel(r.recRetryAttempts()), num(s.threshold))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Retry %s had %s of the retries it wanted to make refused by its budget over the last %s (threshold %s, at least %d refusals), for %s: the budget is stopping a retry storm, and calls fail without retrying.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur))
		},
	},
	{
		name: AlertRetriesNotRescuing, group: GroupRetry, severity: "warning",
		threshold: 0.5, bounds: bounds{min: 0, max: 1, minOpen: true},
		thresholdDoc: "rescue rate (0..1): successful_with_retry / (successful_with_retry + failed_with_retry)",
		forDur:       10 * time.Minute,
		summary:      "Retries of %s are not rescuing calls.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			retried := "sum by (" + r.by(false) + ") (" + r.sel(r.recRetryCallsByKind(), re(catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String(), catalog.RetryFailedWithRetry.String())) + ")"
			return r.sel(r.recRescueRate()) + " < " + num(s.threshold) + r.floor(retried)
		},
		causes: func(r *resolved, s settings) string {
			q := "max(" + r.last(withMatcher(r.labelSel(false, r.name(catalog.BreakerState)), re(catalog.LabelState, catalog.StateOpen.String(), catalog.StateHalfOpen.String()))) + ") > 0"
			return r.queryTemplate(q, false, breakerOpenAdvice, noBreakerAdvice)
		},
		causesElse: noBreakerAdvice,
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Retry %s rescued only %s of the calls it retried over the last %s (threshold %s, at least %d retried calls), for %s: %s.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur), a.causes)
		},
	},
	{
		name: AlertBulkheadRejectionsHigh, group: GroupBulkhead, severity: "warning",
		threshold: 0.01, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of calls rejected by the bulkhead",
		forDur:       5 * time.Minute,
		summary:      "Bulkhead %s is rejecting calls.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			rejected := "sum by (" + r.by(false) + ") (" + r.sel(r.recBulkheadCallsByKind(), eq(catalog.LabelKind, catalog.AdmissionRejected.String())) + ")"
			return r.sel(r.recBulkheadRejectionRatio()) + " > " + num(s.threshold) + r.floor(rejected)
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Bulkhead %s rejected %s of calls over the last %s (threshold %s, at least %d rejections), for %s: it is undersized or the dependency got slower.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur))
		},
	},
	{
		name: AlertBulkheadSaturated, group: GroupBulkhead, severity: "warning",
		threshold: 0.9, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of the bulkhead's permits in use on average over the {window} window, on the busiest instance",
		forDur:       10 * time.Minute,
		summary:      "Bulkhead %s is nearly full.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			return fmt.Sprintf("max by (%s) (\n  avg_over_time(%s)\n/\n  (%s > 0)\n) > %s", r.by(false),
				r.rangeOf(r.sel(r.name(catalog.BulkheadInflight))), r.last(r.sel(r.name(catalog.BulkheadMaxConcurrent))), num(s.threshold))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Bulkhead %s had %s of its permits in use on average over the last %s on its busiest instance (threshold %s), for %s: the next burst will be rejected.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertFallbackSustained, group: GroupFallback, severity: "warning",
		threshold: 0, bounds: bounds{min: 0, max: 1e6},
		thresholdDoc: "fallback invocations per second ({window} rate)",
		forDur:       15 * time.Minute,
		summary:      "Calls to %s are running degraded on fallbacks.",
		value:        valueNumber,
		expr: func(r *resolved, s settings) string {
			return r.sel(r.recFallbacks()) + " > " + num(s.threshold)
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Fallback %s ran in every %s window for %s, %s times per second over the last %s: users are being served the degraded answer.",
				r.subject(false, a.ref), r.window(), FormatDuration(s.forDur), a.value, r.window())
		},
	},
	{
		name: AlertSlowCallRateHigh, group: GroupCircuitBreaker, perInstance: true, severity: "info",
		threshold: 0.8, bounds: bounds{min: 0, max: 1, minOpen: true},
		thresholdDoc: "share (0..1) of the breaker's own slow-call-rate threshold",
		forDur:       10 * time.Minute,
		summary:      "Circuit breaker %s is close to tripping on slow calls.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			gi := r.by(true)
			return fmt.Sprintf("max by (%[1]s) (%[2]s)\n> %[3]s * max by (%[1]s) (%[4]s)", gi,
				r.last(r.sel(r.name(catalog.BreakerSlowCallRate))), num(s.threshold), r.last(r.sel(r.name(catalog.BreakerSlowCallRateThreshold))))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Circuit breaker %s has a slow-call rate of %s, above %s of its slow-call threshold, for %s: it is about to trip on latency. Once it trips, the slow-call rate starts afresh and CircuitBreakerStuckOpen reports the episode with cause %s.",
				r.subject(true, a.ref), a.value, pct(s.threshold), FormatDuration(s.forDur), catalog.TripSlowCallRate)
		},
	},
	{
		name: AlertDependencyOutage, group: GroupFallback, severity: "critical",
		threshold: 0.25, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of calls that failed and were not answered by a fallback over the {window} window (the retry's final outcomes, or the breaker's failed and rejected calls where there is no retry)",
		forDur:       5 * time.Minute,
		summary:      "Dependency %s is failing its callers.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			return r.sel(r.recUnrescuedRatio()) + " > " + num(s.threshold) + r.floor(r.sel(r.recUnrescued()))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Calls to %s failed without a fallback answering them: %s of calls over the last %s (threshold %s, at least %d such failures), for %s. Users get errors, whatever the number of instances; breakers, retries and fallbacks are not containing this outage.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur))
		},
	},
	{
		name: AlertRetryStormContained, group: GroupRetry, severity: "info",
		threshold: 0.2, bounds: bounds{min: 0, max: 10, minOpen: true},
		thresholdDoc: "retries wanted (made + refused by the budget) per call over the {window} window; fewer than 5% of calls may fail unrescued",
		forDur:       time.Minute, keep: time.Hour,
		summary: "A retry storm towards %s was contained.",
		value:   valuePercent,
		expr: func(r *resolved, s settings) string {
			// The budget's refusals are recorded only where there are some.
			attempts := r.sel(r.recRetryAttempts())
			wanted := "(" + attempts + " + (" + r.sel(r.recBudgetDenied()) + " or on (" + r.by(false) + ") " + attempts + " * 0))"
			return fmt.Sprintf("%[1]s\n/\n(%[2]s > 0)\n> %[3]s\nunless on (%[4]s)\n%[5]s > %[6]s",
				r.floored(wanted), r.sel(r.recRetryCalls()), num(s.threshold), r.by(false), r.sel(r.recUnrescuedRatio()), num(containedMaxUnrescued))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Callers of %s wanted %s extra attempts per call over the last %s (threshold %s), yet fewer than %s of calls failed unrescued: retries, the retry budget and fallbacks contained a retry storm. This record stays for %s after the storm; look at what failed while users did not notice.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), pct(containedMaxUnrescued), FormatDuration(s.keep))
		},
	},
}

// MinEvents is the minimum-volume floor of every alert on a ratio: the events the ratio's
// numerator counts (rejections, retries, refusals, failures) within the rate window. A ratio
// over a trickle of traffic does not page.
const MinEvents = 10

// containedMaxUnrescued is the share of calls failing unrescued below which a retry storm
// counts as contained.
const containedMaxUnrescued = 0.05

// RetriesNotRescuing's advice, by whether the breaker on the same name is open.
const (
	breakerOpenAdvice = "the circuit breaker is already open or half-open, so the retries are spent on probes and rejections; work the dependency's outage (see CircuitBreakerStuckOpen)"
	noBreakerAdvice   = "it is retrying a persistent fault and only adds load; the call needs a circuit breaker (or one with tighter settings)"
)

// floor renders the minimum-volume clause of a ratio alert: at least MinEvents events (rate
// times the window) in the rate window.
func (r *resolved) floor(rate string) string {
	return fmt.Sprintf("\nand on (%s)\n%s * %s >= %d", r.by(false), rate, num(r.rateWindow.Seconds()), MinEvents)
}

// floored renders a rate kept only where it meets the minimum-volume floor, for the numerator
// of a ratio: the same condition as floor, without reading the rate a second time (a
// comparison without bool keeps the left side's value, here the events in the window, which
// the division by the window turns back into the rate).
func (r *resolved) floored(rate string) string {
	w := num(r.rateWindow.Seconds())
	return fmt.Sprintf("(%s * %s >= %d) / %s", rate, w, MinEvents, w)
}

// withMatcher adds a matcher to a selector rendered by labelSel.
func withMatcher(sel string, m selector.Matcher) string {
	return strings.TrimSuffix(sel, "}") + ", " + m.String() + "}"
}

// impactExpr renders the evidence that a not-closed breaker hurts callers, per process: calls
// it rejected, or half-open probes that failed, within window.
func (r *resolved) impactExpr(window time.Duration) string {
	by := r.by(true)
	w := "[" + FormatDuration(window) + "]"
	return fmt.Sprintf(`sum by (%[1]s) (increase(%[2]s%[4]s)) > 0
or on (%[1]s)
sum by (%[1]s) (increase(%[3]s%[4]s)) > 0`, by,
		r.sel(r.name(catalog.BreakerNotPermitted)),
		r.sel(r.name(catalog.BreakerTransitions), eq(catalog.LabelFrom, catalog.StateHalfOpen.String()), eq(catalog.LabelTo, catalog.StateOpen.String())), w)
}

// impact is the impact evidence within window: the recorded series for impactWindow, the
// expression itself for another window.
func (r *resolved) impact(window time.Duration) string {
	if window == impactWindow {
		return r.sel(r.recImpact())
	}
	return "(\n" + indent(r.impactExpr(window), "  ") + "\n)"
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
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

// spikeEarlyOffset is how far back RetryRateSpike's first-hour baseline ends: two rate windows
// and the for duration, so that the spike itself is not part of the baseline while the rate
// window fills with it, while the alert is pending, and for one more rate window once it fires.
func spikeEarlyOffset(r *resolved, s settings) time.Duration { return 2*r.rateWindow + s.forDur }

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

// summaryText is the summary naming the alert's subject (ref renders a label's value).
func (sp alertSpec) summaryText(r *resolved, ref func(string) string) string {
	return fmt.Sprintf(sp.summary, r.subject(sp.perInstance, ref))
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
			For: s.forDur, KeepFiringFor: s.keep, PerInstance: s.perInstance, Summary: fmt.Sprintf(s.summary, `"<name>"`)}
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
