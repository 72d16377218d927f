package rules

import (
	"fmt"
	"math"
	"math/big"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/escape"
	"github.com/stormwatch-go/stormwatch/internal/genconfig"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// This file generates the dependency SLOs: for each configured SLO, the caller-side
// availability SLI of a dependency (recorded from the counters stormwatch exports), its error
// ratio over the windows of the multi-window, multi-burn-rate alerts, the error budget left
// over the SLO period and the four burn-rate alerts of the Google SRE workbook.

// SLOSource says which counters measure an SLO's logical calls.
type SLOSource string

// SLO sources.
const (
	// SLOSourceRetry (the default) counts the logical calls of the retry layer:
	// resilience_retry_calls_total by kind. Use it when the dependency is called through a
	// retry and its circuit breaker, if any, sits inside the retry (the pipeline's default
	// order, BreakerPerAttempt): the breaker's and the bulkhead's rejections then reach the
	// retry and end the logical call as failed.
	SLOSourceRetry SLOSource = "retry"
	// SLOSourceBreaker counts the calls the circuit breaker saw
	// (resilience_circuitbreaker_calls_total by kind) plus the calls it rejected
	// (resilience_circuitbreaker_not_permitted_calls_total) and the bulkhead's rejections
	// (resilience_bulkhead_calls_total{kind="rejected"}), which the breaker counts as ignored.
	// Use it when the dependency has no retry, or when the breaker sits outside the retry
	// (BreakerPerCall): then the breaker sees every logical call once and the retry never sees
	// the breaker's rejections.
	SLOSourceBreaker SLOSource = "breaker"
)

// SLO configures one dependency SLO: the share of logical calls to a dependency that must
// succeed over a rolling period. The generator records the SLI from stormwatch's own counters,
// so no query has to be written. See the README's "Dependency SLOs".
type SLO struct {
	// ID names the SLO: the value of the `slo` label of its recorded series and alerts, and
	// part of its alerts' rule group's name (stormwatch-slo-<ID>). "" means Name; it is required with
	// NameRegex. Printable UTF-8, at most MaxSLOIDLength bytes, unique among the SLOs.
	ID string
	// Name is the dependency: the value of the `name` label of its primitives. Exactly one of
	// Name and NameRegex is set.
	Name string
	// NameRegex selects several dependencies by name, a regular expression (RE2, anchored as
	// PromQL anchors it). Every selected dependency (every job and name) gets its own SLI and
	// alerts under the same objective.
	NameRegex string
	// Objective is the share of calls that must be good, such as 0.999 for 99.9%. It must be
	// in (MinSLOObjective, MaxSLOObjective]: at MinSLOObjective the fastest burn rate the
	// workbook pages on, 14.4 times the error budget, is 99% of calls (at 1 − 1/14.4 it would
	// be all of them); above MaxSLOObjective (99.999%) the error budget is under 26 seconds of
	// a 30-day period and the minimum-traffic guards need more calls than the generated tests
	// can replay exactly.
	Objective float64
	// Period is the rolling SLO period (the error budget's window); 0 means DefaultSLOPeriod
	// (30d). The windows of the burn-rate alerts scale with it: at 30d they are the workbook's
	// 5m, 30m, 1h, 2h, 6h, 1d and 3d; at 7d they are 70s, 7m, 14m, 28m, 1h24m, 5h36m and
	// 16h48m. It must be a whole number of seconds in [MinSLOPeriod, MaxSLOPeriod], so that the
	// shortest window is at least a minute (four 15s scrapes).
	Period time.Duration
	// Source says which counters measure the calls; "" means SLOSourceRetry.
	Source SLOSource
	// FallbacksGood counts the calls a fallback answered as good: the caller got a (degraded)
	// answer. By default they are bad: the dependency failed them.
	FallbacksGood bool
	// MinCalls is the minimum-traffic guard: a burn-rate alert fires only when its long window
	// holds at least MinCalls calls, so that a dependency with little traffic does not page on a
	// single failure. 0 means, for each alert, the smallest number of calls at which one failed
	// call alone stays below that alert's threshold (70 calls in the 1h window for the 14.4×
	// page at 99.9%; 1000 in the 3d window for the 1× ticket). 1 disables the guard.
	MinCalls int
	// PageSeverity and TicketSeverity are the severity labels of the fast-burn (page) and
	// slow-burn (ticket) alerts: info, warning or critical. "" means critical and warning.
	PageSeverity   string
	TicketSeverity string
	// Labels are added to the SLO's alerts (for routing: team, service, …). Label names are
	// classic Prometheus names and must not be one the alerts set themselves.
	Labels map[string]string
}

// Limits and defaults of an SLO.
const (
	// DefaultSLOPeriod is the period of an SLO whose Period is 0: the workbook's 30 days.
	DefaultSLOPeriod = 30 * 24 * time.Hour
	// MinSLOPeriod and MaxSLOPeriod bound SLO.Period: at 6d the shortest window is 1m.
	MinSLOPeriod = 6 * 24 * time.Hour
	MaxSLOPeriod = 90 * 24 * time.Hour
	// MinSLOObjective bounds SLO.Objective from below (exclusive): 1 − 0.99/14.4, where the
	// 14.4× page needs 99% of calls to fail.
	MinSLOObjective = 1 - 0.99/14.4
	// MaxSLOObjective bounds SLO.Objective from above (inclusive): 99.999%.
	MaxSLOObjective = 0.99999
	// MaxSLOs caps the number of SLOs of one config. Each is a rule group of 15 rules, and
	// its generated promtool tests evaluate every SLO's rules: their run time grows with the
	// square of the SLO count, and 5 SLOs of any one period keep `promtool test rules` within
	// a minute (MaxSLOTestEvaluations bounds mixed periods). Generate larger sets from several
	// configs (distinct ids) into separate directories.
	MaxSLOs = 5
	// MaxSLOIDLength caps SLO.ID, in bytes.
	MaxSLOIDLength = 128
	// MaxSLONameLength caps SLO.Name, in bytes: the longest name a primitive can have
	// (instrument.MaxNameLen).
	MaxSLONameLength = 256
	// MaxSLONameRegexLength caps SLO.NameRegex, in bytes.
	MaxSLONameRegexLength = 1024
	// MaxSLOLabelValueLength caps the values of SLO.Labels, in bytes.
	MaxSLOLabelValueLength = 1024
	// MaxSLOMinCalls caps SLO.MinCalls.
	MaxSLOMinCalls = 1_000_000_000
	// MaxSLOLabels caps the number of SLO.Labels.
	MaxSLOLabels = 16
)

// AlertErrorBudgetBurn is the alert of every SLO's four burn-rate rules; its labels say which
// SLO (slo) and which rule (long_window, short_window, severity).
const AlertErrorBudgetBurn = "DependencyErrorBudgetBurn"

// Labels of the SLO series and alerts.
const (
	// LabelSLO carries SLO.ID on every recorded series and alert of the SLO.
	LabelSLO = "slo"
	// LabelLongWindow and LabelShortWindow name the windows of a burn-rate alert ("1h", "5m").
	LabelLongWindow  = "long_window"
	LabelShortWindow = "short_window"
	labelSeverity    = "severity"
)

// GroupSLOPrefix starts the name of every SLO's alert group: stormwatch-slo-<ID>.
const GroupSLOPrefix = "stormwatch-slo-"

// GroupSLORecording is the group of every SLO's recording rules, before the alert groups. The
// SLOs record the same names (told apart by their slo label), and a recording rule must read
// series recorded in its own group: a group reading another's is evaluated independently of
// it and reads the previous evaluation's values (pint's rule/dependency, which matches by
// name). No SLO's alert group can be called so (it lacks GroupSLOPrefix).
const GroupSLORecording = "stormwatch-slos-recording"

// sloSubsystem is the middle part of the recorded SLO series' names
// (resilience_slo_calls, …): they describe dependencies, not one primitive.
const sloSubsystem catalog.Primitive = "slo"

// SLOReferencePeriod is the period the workbook's windows are given for: every SLO's windows
// are these scaled by Period / SLOReferencePeriod.
const SLOReferencePeriod = 30 * 24 * time.Hour

// BurnRateRule is one row of the workbook's multi-window, multi-burn-rate table, at the
// reference period of 30 days.
type BurnRateRule struct {
	// Page is true for the rules that page, false for the ones that open a ticket.
	Page bool
	// Factor is the burn rate: how many times faster than the objective allows the error
	// budget is being spent. The alert fires when the error ratio exceeds Factor × (1 −
	// objective) over both windows.
	Factor float64
	// Long and Short are the windows at the reference period.
	Long, Short time.Duration
}

// BudgetSpent is the share of the period's error budget a burn at Factor spends over the long
// window: 2% for the 14.4× page, 5%, 10% and 10%.
func (b BurnRateRule) BudgetSpent() float64 {
	return b.Factor * b.Long.Hours() / SLOReferencePeriod.Hours()
}

// BurnRateRules is the workbook's table (The Site Reliability Workbook, "Alerting on SLOs",
// multiwindow, multi-burn-rate alerts): page at 14.4× over 1h and 5m, and at 6× over 6h and
// 30m; ticket at 3× over 1d and 2h, and at 1× over 3d and 6h.
var BurnRateRules = []BurnRateRule{
	{Page: true, Factor: 14.4, Long: time.Hour, Short: 5 * time.Minute},
	{Page: true, Factor: 6, Long: 6 * time.Hour, Short: 30 * time.Minute},
	{Page: false, Factor: 3, Long: 24 * time.Hour, Short: 2 * time.Hour},
	{Page: false, Factor: 1, Long: 72 * time.Hour, Short: 6 * time.Hour},
}

// sloReferenceWindows are the windows of BurnRateRules, shortest first, without duplicates:
// 5m, 30m, 1h, 2h, 6h, 1d, 3d. The shortest is also the window of the base rates.
var sloReferenceWindows = func() []time.Duration {
	var ws []time.Duration
	for _, b := range BurnRateRules {
		ws = append(ws, b.Long, b.Short)
	}
	slices.Sort(ws)
	return slices.Compact(ws)
}()

// resolvedSLO is a validated SLO with its defaults applied.
type resolvedSLO struct {
	SLO
	index    int
	name     selector.Matcher // the SLO's own matcher on the name label
	budget   *big.Rat         // 1 - objective, exactly as written
	windows  []time.Duration  // sloReferenceWindows scaled to the period, shortest first
	burns    []resolvedBurn
	severity map[bool]string // by Page
}

// resolvedBurn is one burn-rate rule of one SLO.
type resolvedBurn struct {
	BurnRateRule
	long, short time.Duration // scaled
	threshold   string        // Factor × (1 − objective), a PromQL number literal
	minCalls    int           // 0: no guard
	severity    string
}

func (s *resolvedSLO) base() time.Duration { return s.windows[0] }

// scaleWindow scales a reference window to the SLO's period, to the second.
func scaleWindow(w, period time.Duration) time.Duration {
	ws, ps, rs := int64(w/time.Second), int64(period/time.Second), int64(SLOReferencePeriod/time.Second)
	return time.Duration((ws*ps+rs/2)/rs) * time.Second
}

// sloPath is the config path of an SLO's field: slos[2].objective.
func sloPath(i int, field string) string {
	p := fmt.Sprintf("slos[%d]", i)
	if field != "" {
		p += "." + field
	}
	return p
}

// resolveSLOs validates the SLOs; r's selector and aggregation labels are already resolved.
func (r *resolved) resolveSLOs(slos []SLO) ([]*resolvedSLO, error) {
	if len(slos) == 0 {
		return nil, nil
	}
	if len(slos) > MaxSLOs {
		return nil, fieldErr("slos", nil, "%d SLOs, at most %d allowed", len(slos), MaxSLOs)
	}
	for _, l := range r.groupBy {
		if l == LabelSLO || l == LabelLongWindow || l == LabelShortWindow || l == labelSeverity {
			return nil, fieldErr("group_by", r.groupBy, "%q is a label the SLO rules set themselves (aggregation labels include the selector's)", l)
		}
	}
	out := make([]*resolvedSLO, len(slos))
	ids := map[string]int{}
	for i, s := range slos {
		rs, err := r.resolveSLO(i, s)
		if err != nil {
			return nil, err
		}
		if j, dup := ids[rs.ID]; dup {
			field := "id"
			if slos[i].ID == "" {
				field = "name"
			}
			return nil, fieldErr(sloPath(i, field), rs.ID, "SLO id used twice (also slos[%d]); give one of them another id", j)
		}
		ids[rs.ID] = i
		out[i] = rs
	}
	return out, nil
}

func (r *resolved) resolveSLO(i int, s SLO) (*resolvedSLO, error) {
	rs := &resolvedSLO{SLO: s, index: i}
	for _, step := range []func(int, *resolvedSLO) error{resolveSLOName, resolveSLOTargets, r.resolveSLOLabels} {
		if err := step(i, rs); err != nil {
			return nil, err
		}
	}
	rs.resolveBurns()
	return rs, nil
}

// resolveSLOName checks the SLO's dependency (name or name_regex) and its id.
func resolveSLOName(i int, rs *resolvedSLO) error {
	s := rs.SLO
	switch {
	case s.Name != "" && s.NameRegex != "":
		return fieldErr(sloPath(i, "name_regex"), s.NameRegex, "set name or name_regex, not both")
	case s.Name == "" && s.NameRegex == "":
		return fieldErr(sloPath(i, "name"), nil, "missing: set name (one dependency) or name_regex (several)")
	case s.Name != "":
		if !utf8.ValidString(s.Name) {
			return fieldErr(sloPath(i, "name"), s.Name, "not valid UTF-8")
		}
		if len(s.Name) > MaxSLONameLength {
			return fieldErr(sloPath(i, "name"), s.Name, "%d bytes, at most %d allowed (the longest name a primitive can have)", len(s.Name), MaxSLONameLength)
		}
		rs.name = eq(catalog.LabelName, s.Name)
	default:
		if !utf8.ValidString(s.NameRegex) {
			return fieldErr(sloPath(i, "name_regex"), s.NameRegex, "not valid UTF-8")
		}
		if len(s.NameRegex) > MaxSLONameRegexLength {
			return fieldErr(sloPath(i, "name_regex"), s.NameRegex, "%d bytes, at most %d allowed", len(s.NameRegex), MaxSLONameRegexLength)
		}
		if _, err := syntax.Parse(s.NameRegex, syntax.Perl); err != nil {
			return fieldErr(sloPath(i, "name_regex"), s.NameRegex, "not a regular expression: %v", err)
		}
		m, err := selector.NewMatcher(selector.MatchRegexp, catalog.LabelName, s.NameRegex)
		if err != nil {
			return fieldErr(sloPath(i, "name_regex"), s.NameRegex, "%s", reason(err))
		}
		if m.Matches("") {
			return fieldErr(sloPath(i, "name_regex"), s.NameRegex, "matches the empty name: every series has a name")
		}
		rs.name = m
		if s.ID == "" {
			return fieldErr(sloPath(i, "id"), nil, "missing: an SLO with name_regex needs an id")
		}
	}
	if rs.ID == "" {
		rs.ID = s.Name
	}
	if err := grafanaSafe(i, s); err != nil {
		return err
	}
	if err := checkSLOText(rs.ID, MaxSLOIDLength); err != nil {
		field := "id"
		if s.ID == "" {
			field = "name"
		}
		return fieldErr(sloPath(i, field), rs.ID, "not usable as an SLO id: %v", err)
	}

	return nil
}

// resolveSLOTargets checks the objective, the period (and scales the windows), the source
// and the minimum-traffic guard.
func resolveSLOTargets(i int, rs *resolvedSLO) error {
	s := rs.SLO
	o := s.Objective
	switch {
	case math.IsNaN(o) || o <= 0 || o >= 1:
		return fieldErr(sloPath(i, "objective"), o, "want a share of good calls in (0, 1), such as 0.999 for 99.9%%")
	case o <= MinSLOObjective:
		return fieldErr(sloPath(i, "objective"), o,
			"too low for burn-rate alerting: the 14.4× page would need %s of calls to fail; objectives must be above %s",
			pct(14.4*(1-o)), pct(MinSLOObjective))
	case o > MaxSLOObjective:
		return fieldErr(sloPath(i, "objective"), o,
			"too high: at most %s (an error budget under 26 seconds a month is not a dependency SLO burn-rate alerts can watch)", pct(MaxSLOObjective))
	}
	obj, ok := new(big.Rat).SetString(strconv.FormatFloat(o, 'g', -1, 64))
	if !ok { // not reached: a finite float's shortest form always parses
		return fieldErr(sloPath(i, "objective"), o, "not a decimal number")
	}
	rs.budget = new(big.Rat).Sub(big.NewRat(1, 1), obj)

	if rs.Period == 0 {
		rs.Period = DefaultSLOPeriod
	}
	switch p := rs.Period; {
	case p < MinSLOPeriod || p > MaxSLOPeriod:
		return fieldErr(sloPath(i, "period"), model.Duration(s.Period), "out of range [%s, %s] (the shortest alert window is the period / 8640: at least 1m)",
			FormatDuration(MinSLOPeriod), FormatDuration(MaxSLOPeriod))
	case p%time.Second != 0:
		return fieldErr(sloPath(i, "period"), model.Duration(s.Period), "not a whole number of seconds")
	}
	for _, w := range sloReferenceWindows {
		rs.windows = append(rs.windows, scaleWindow(w, rs.Period))
	}

	switch rs.Source {
	case "":
		rs.Source = SLOSourceRetry
	case SLOSourceRetry, SLOSourceBreaker:
	default:
		return fieldErr(sloPath(i, "source"), string(s.Source), "not one of %s, %s", SLOSourceRetry, SLOSourceBreaker)
	}
	if s.MinCalls < 0 || s.MinCalls > MaxSLOMinCalls {
		return fieldErr(sloPath(i, "min_calls"), s.MinCalls, "out of range [0, %d] (0: the default of each alert, 1: no guard)", MaxSLOMinCalls)
	}

	return nil
}

// resolveSLOLabels checks the severities and the routing labels.
func (r *resolved) resolveSLOLabels(i int, rs *resolvedSLO) error {
	s := rs.SLO
	rs.severity = map[bool]string{true: "critical", false: "warning"}
	for _, sev := range []struct {
		page  bool
		field string
		v     string
	}{{true, "page_severity", s.PageSeverity}, {false, "ticket_severity", s.TicketSeverity}} {
		if sev.v == "" {
			continue
		}
		if !slices.Contains(Severities, sev.v) {
			return fieldErr(sloPath(i, sev.field), sev.v, "not one of %s", strings.Join(Severities, ", "))
		}
		rs.severity[sev.page] = sev.v
	}

	if len(s.Labels) > MaxSLOLabels {
		return fieldErr(sloPath(i, "labels"), nil, "%d labels, at most %d allowed", len(s.Labels), MaxSLOLabels)
	}
	for _, k := range sortedKeys(s.Labels) {
		p := sloPath(i, "labels."+genconfig.Key(k))
		if why := genconfig.CheckLabelName(k); why != "" {
			return fieldErr(p, nil, "%s", why)
		}
		switch {
		case k == LabelSLO || k == LabelLongWindow || k == LabelShortWindow || k == labelSeverity || k == model.AlertNameLabel ||
			k == labelInstance || slices.Contains(r.groupBy, k) || selector.ReservedLabel(k):
			return fieldErr(p, nil, "%q is a label the alerts already carry (set page_severity or ticket_severity for the severity)", k)
		}
		if err := checkSLOText(s.Labels[k], MaxSLOLabelValueLength); err != nil && s.Labels[k] != "" {
			return fieldErr(p, s.Labels[k], "%v", err)
		}
	}

	return nil
}

// resolveBurns derives the four burn-rate rules: windows, thresholds, guards, severities.
func (rs *resolvedSLO) resolveBurns() {
	s := rs.SLO
	for _, b := range BurnRateRules {
		rb := resolvedBurn{
			BurnRateRule: b,
			long:         scaleWindow(b.Long, rs.Period),
			short:        scaleWindow(b.Short, rs.Period),
			severity:     rs.severity[b.Page],
		}
		factor, _ := new(big.Rat).SetString(strconv.FormatFloat(b.Factor, 'g', -1, 64))
		thr := new(big.Rat).Mul(factor, rs.budget)
		rb.threshold = decimal(thr)
		switch {
		case s.MinCalls > 0:
			rb.minCalls = s.MinCalls
		default:
			// The smallest n with 1/n <= threshold: one failed call among n stays at or below
			// the threshold, and the alert needs the ratio above it.
			inv := new(big.Rat).Inv(thr)
			n := new(big.Int).Quo(inv.Num(), inv.Denom())
			if new(big.Rat).SetInt(n).Cmp(inv) < 0 {
				n.Add(n, big.NewInt(1))
			}
			rb.minCalls = int(n.Int64())
		}
		if rb.minCalls <= 1 {
			rb.minCalls = 0 // one call always suffices: no guard
		}
		rs.burns = append(rs.burns, rb)
	}
}

// grafanaSafe refuses Grafana variable syntax in the SLO's id, name and name_regex, which the
// SLOs dashboard puts in its queries and titles: Grafana would substitute it.
func grafanaSafe(i int, s SLO) error {
	for _, f := range []struct{ field, v string }{{"id", s.ID}, {"name", s.Name}, {"name_regex", s.NameRegex}} {
		if v := escape.GrafanaVariable(f.v); v != "" {
			return fieldErr(sloPath(i, f.field), f.v, "holds %s, %s", genconfig.Quote(v), genconfig.NoGrafanaVariables)
		}
	}
	return nil
}

// checkSLOText accepts printable UTF-8 of at most max bytes, without surrounding white space.
func checkSLOText(s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("empty")
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8")
	case len(s) > max:
		return fmt.Errorf("%d bytes, at most %d allowed", len(s), max)
	case strings.TrimSpace(s) != s:
		return fmt.Errorf("leading or trailing white space")
	}
	for _, c := range s {
		if !catalog.NameRune(c) { // the character policy of every name and id
			return fmt.Errorf("character %q is not printable", c)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// decimal renders an exact rational with a finite decimal expansion as a PromQL number
// literal without exponent: 0.0144, 6, 0.000125.
func decimal(x *big.Rat) string {
	for prec := 0; prec <= 40; prec++ {
		s := x.FloatString(prec)
		if back, ok := new(big.Rat).SetString(s); ok && back.Cmp(x) == 0 {
			return s
		}
	}
	f, _ := x.Float64() // not reached for products of two finite decimals
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// decimalFloat is the float64 PromQL reads a literal as.
func decimalFloat(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// --- recorded series ---

// sloRecorded names a recorded SLO series: <group_by>_slo:<namespace>_slo_<metric>:<ops>.
func (r *resolved) sloRecorded(metric, ops string) string {
	level := strings.Join(r.labels(false, LabelSLO), "_")
	return level + ":" + catalog.Metric{Primitive: sloSubsystem, Name: metric}.FullName(r.ns) + ":" + ops
}

func (r *resolved) recSLOCalls(s *resolvedSLO) string {
	return r.sloRecorded("calls", "rate"+FormatDuration(s.base()))
}

func (r *resolved) recSLOBadCalls(s *resolvedSLO) string {
	return r.sloRecorded("bad_calls", "rate"+FormatDuration(s.base()))
}

func (r *resolved) recSLOErrorRatio(w time.Duration) string {
	return r.sloRecorded("bad_per_call", "ratio_rate"+FormatDuration(w))
}

func (r *resolved) recSLOBudgetRemaining(s *resolvedSLO) string {
	return r.sloRecorded("error_budget_remaining", "ratio"+FormatDuration(s.Period))
}

// sloSel selects one SLO's recorded series.
func (r *resolved) sloSel(s *resolvedSLO, series string) string {
	return r.sel(series, eq(LabelSLO, s.ID))
}

// --- SLI expressions ---

// sliTerm is one counter of an SLI: a metric, its own matchers, and whether it may be absent
// (its series appear only once something happened), in which case it is or-ed with zero.
type sliTerm struct {
	m   catalog.Metric
	own []selector.Matcher
}

// sli lists the counters of an SLO's calls (total) and of its bad calls; bad terms with minus
// are subtracted (calls that failed but count as good).
type sli struct {
	primary     catalog.Metric // the counter every call of the source is counted in
	total       []sliTerm      // summed: every call that counts (good or bad)
	bad         []sliTerm      // summed: the bad calls among them
	badMinus    []sliTerm      // subtracted from bad: failed calls that count as good
	description string
}

// failedKinds are the retry's logical-call kinds that failed.
var retryFailedKinds = []string{catalog.RetryFailedWithoutRetry.String(), catalog.RetryFailedWithRetry.String()}

// breakerFailedKinds are the breaker's call kinds that failed.
var breakerFailedKinds = []string{catalog.CallFailed.String(), catalog.CallSlowFailed.String()}

// clientErrorClass is the failure class of answers the dependency gave with a 4xx status other
// than 401/403 (auth), 408 and 429: the dependency answered; the call asked for something
// that is not there. The breaker counts them as successful; the retry as failed, so the retry
// SLI moves them back to the good calls.
var clientErrorClass = catalog.ClassHTTP4xx.String()

func (s *resolvedSLO) sli() sli {
	var out sli
	switch s.Source {
	case SLOSourceBreaker:
		out.primary = catalog.BreakerCalls
		out.total = []sliTerm{
			{m: catalog.BreakerCalls, own: []selector.Matcher{{Name: catalog.LabelKind, Type: selector.MatchNotEqual, Value: catalog.CallIgnored.String()}}},
			{m: catalog.BreakerNotPermitted},
			{m: catalog.BulkheadCalls, own: []selector.Matcher{eq(catalog.LabelKind, catalog.AdmissionRejected.String())}},
		}
		out.bad = []sliTerm{
			{m: catalog.BreakerCalls, own: []selector.Matcher{re(catalog.LabelKind, breakerFailedKinds...)}},
			{m: catalog.BreakerNotPermitted},
			{m: catalog.BulkheadCalls, own: []selector.Matcher{eq(catalog.LabelKind, catalog.AdmissionRejected.String())}},
		}
	default:
		out.primary = catalog.RetryCalls
		out.total = []sliTerm{
			{m: catalog.RetryCalls, own: []selector.Matcher{{Name: catalog.LabelKind, Type: selector.MatchNotEqual, Value: catalog.RetryAborted.String()}}},
		}
		out.bad = []sliTerm{
			{m: catalog.RetryCalls, own: []selector.Matcher{re(catalog.LabelKind, retryFailedKinds...)}},
		}
		out.badMinus = []sliTerm{
			{m: catalog.RetryErrors, own: []selector.Matcher{eq(catalog.LabelClass, clientErrorClass)}},
		}
	}
	if s.FallbacksGood {
		out.badMinus = append(out.badMinus, sliTerm{m: catalog.FallbackCalls})
	}
	return out
}

// sliExprs renders the base rates of an SLO: its calls and its bad calls per second over the
// base window. Every term may be absent while its series have not appeared yet (a failure
// kind, a class, the bulkhead's rejections, the fallback), so each is or-ed with a zero vector
// carrying the aggregation labels of the dependencies the source counts.
func (r *resolved) sliExprs(s *resolvedSLO) (total, bad string) {
	by := r.by(false)
	w := "[" + FormatDuration(s.base()) + "]"
	def := s.sli()
	zero := "0 * group by (" + by + ") (" + r.sel(r.name(def.primary), s.name) + ")"
	rate := func(t sliTerm) string {
		own := append([]selector.Matcher{s.name}, t.own...)
		return "sum by (" + by + ") (rate(" + r.sel(r.name(t.m), own...) + w + "))"
	}
	// orZero renders (term or zero) with its lines indented by in.
	orZero := func(t sliTerm, in string) string {
		return "(\n" + in + "  " + rate(t) + "\n" + in + "or\n" + in + "  " + zero + "\n" + in + ")"
	}
	total = rate(def.total[0]) // the primary counter: present whenever the SLI is
	for _, t := range def.total[1:] {
		total += "\n+\n" + orZero(t, "")
	}
	var bp []string
	for _, t := range def.bad {
		bp = append(bp, orZero(t, "  "))
	}
	bad = strings.Join(bp, "\n  +\n  ")
	for _, t := range def.badMinus {
		bad += "\n  -\n  " + orZero(t, "  ")
	}
	bad = "clamp_min(\n  " + bad + ",\n  0\n)"
	return total, bad
}

// --- rules ---

// SLOManifestName is the metadata.name of the PrometheusRule manifest of the SLO rules unless
// the config sets or derives another (Kubernetes.Name + "-slos").
const SLOManifestName = DefaultManifestName + sloManifestSuffix

// SLOGroups builds the rule groups of cfg's SLOs: GroupSLORecording with every SLO's recording
// rules, then one group of alerts per SLO (stormwatch-slo-<ID>), in configuration order; none
// without SLOs.
func SLOGroups(cfg Config) ([]Group, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return r.sloGroups(), nil
}

// GenerateSLORules renders the rules of cfg's SLOs as a Prometheus rule file, or as a
// Prometheus Operator PrometheusRule manifest (SLOManifestName) when cfg.Format is
// FormatOperator. They are a file of their own, apart from Generate's: their error budget
// sums the recorded base rates over the whole SLO period, so they belong on a Prometheus (or a
// Thanos or Mimir ruler) that keeps at least a period of data, and their tests replay hours of
// traffic. Without SLOs it returns a *ConfigError naming "slos".
func GenerateSLORules(cfg Config) ([]byte, error) {
	r, err := cfg.resolveWithSLOs()
	if err != nil {
		return nil, err
	}
	return r.renderSLOs(r.format, r.target)
}

// GenerateSLORulesPrometheus renders the rules of cfg's SLOs as a plain Prometheus rule file
// whatever cfg.Format says (the promtool tests need one).
func GenerateSLORulesPrometheus(cfg Config) ([]byte, error) {
	r, err := cfg.resolveWithSLOs()
	if err != nil {
		return nil, err
	}
	return r.renderSLOs(FormatPrometheus, TargetPrometheus)
}

// GenerateSLOTests renders promtool unit tests for the rules of cfg's SLOs. ruleFile is the
// SLO rule file's path relative to the test file; it must be a plain Prometheus rule file
// (GenerateSLORulesPrometheus). The tests evaluate the rules every minute, Prometheus'
// default evaluation interval. For every SLO: a fast burn pages within the time its long
// window needs, a slow burn opens the tickets and never pages, a 15s blip and idle traffic
// stay silent, one failed call under the minimum-traffic guard stays silent, the error budget
// arithmetic is right, and the SLI counts exactly the calls its definition says.
func GenerateSLOTests(cfg Config, ruleFile string) ([]byte, error) {
	r, err := cfg.resolveWithSLOs()
	if err != nil {
		return nil, err
	}
	if ruleFile == "" {
		return nil, fieldErr("rule_file", ruleFile, "empty")
	}
	lv, err := r.testLabels()
	if err != nil {
		return nil, err
	}
	tests, err := r.sloTests(lv)
	if err != nil {
		return nil, err
	}
	file := yamlTestFile{RuleFiles: []string{ruleFile}, EvaluationInterval: FormatDuration(r.sloEvalInterval()), Tests: tests}
	for _, g := range r.sloGroups() {
		file.GroupEvalOrder = append(file.GroupEvalOrder, g.Name)
	}
	return marshal(file)
}

// resolveWithSLOs resolves cfg and requires SLOs.
func (cfg Config) resolveWithSLOs() (*resolved, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if len(r.slos) == 0 {
		return nil, fieldErr("slos", nil, "no SLOs configured")
	}
	return r, nil
}

func (r *resolved) renderSLOs(f Format, t Target) ([]byte, error) {
	return r.renderGroups(f, t, r.sloGroups(), r.kube.SLOName)
}

// sloGroups are the rule groups of the SLOs (see SLOGroups). The alerts read the recorded
// series of another group, as the default alerts do: at most one evaluation interval old.
func (r *resolved) sloGroups() []Group {
	if len(r.slos) == 0 {
		return nil
	}
	rec := Group{Name: GroupSLORecording}
	alerts := make([]Group, 0, len(r.slos))
	for _, s := range r.slos {
		rec.Rules = append(rec.Rules, r.sloRecords(s)...)
		g := Group{Name: GroupSLOPrefix + s.ID}
		for _, b := range s.burns {
			g.Rules = append(g.Rules, r.burnRule(s, b))
		}
		alerts = append(alerts, g)
	}
	return append([]Group{rec}, alerts...)
}

// sloRecords are the recording rules of one SLO: two base rates, the error ratio over every
// window and over the period, and the budget left. A group evaluates its rules in order, so
// every rule reads the ones before it as of the same evaluation.
func (r *resolved) sloRecords(s *resolvedSLO) []Rule {
	total, bad := r.sliExprs(s)
	sloLabel := map[string]string{LabelSLO: s.ID}
	calls, badCalls := r.sloSel(s, r.recSLOCalls(s)), r.sloSel(s, r.recSLOBadCalls(s))
	// Every rule sets slo itself, although the derived ones inherit it from their input: rules
	// of different SLOs then never look alike (promtool's lint reports rules with the same name
	// and labels as duplicates).
	rules := []Rule{
		{Record: r.recSLOCalls(s), Expr: total, Labels: sloLabel},
		{Record: r.recSLOBadCalls(s), Expr: bad, Labels: sloLabel},
		{Record: r.recSLOErrorRatio(s.base()), Expr: badCalls + "\n/\n(" + calls + " > 0)", Labels: sloLabel},
	}
	ratioOver := func(w time.Duration) string {
		d := "[" + FormatDuration(w) + "]"
		return "sum_over_time(" + badCalls + d + ")\n/\n(sum_over_time(" + calls + d + ") > 0)"
	}
	for _, w := range s.windows[1:] {
		rules = append(rules, Rule{Record: r.recSLOErrorRatio(w), Expr: ratioOver(w), Labels: sloLabel})
	}
	rules = append(rules,
		Rule{Record: r.recSLOErrorRatio(s.Period), Expr: ratioOver(s.Period), Labels: sloLabel},
		Rule{Record: r.recSLOBudgetRemaining(s), Expr: "1 - " + r.sloSel(s, r.recSLOErrorRatio(s.Period)) + " / " + decimal(s.budget), Labels: sloLabel},
	)
	return rules
}

func (r *resolved) burnExpr(s *resolvedSLO, b resolvedBurn) string {
	e := r.sloSel(s, r.recSLOErrorRatio(b.short)) + " > " + b.threshold + "\nand\n" +
		r.sloSel(s, r.recSLOErrorRatio(b.long)) + " > " + b.threshold
	if b.minCalls > 0 {
		e += fmt.Sprintf("\nand\navg_over_time(%s[%s]) * %d >= %d",
			r.sloSel(s, r.recSLOCalls(s)), FormatDuration(b.long), int64(b.long/time.Second), b.minCalls)
	}
	return e
}

func (r *resolved) burnRule(s *resolvedSLO, b resolvedBurn) Rule {
	labels := map[string]string{
		labelSeverity:    b.severity,
		LabelSLO:         templateLiteral(s.ID),
		LabelLongWindow:  FormatDuration(b.long),
		LabelShortWindow: FormatDuration(b.short),
	}
	for k, v := range s.Labels {
		labels[k] = templateLiteral(v)
	}
	return Rule{
		Alert:  AlertErrorBudgetBurn,
		Expr:   r.burnExpr(s, b),
		Labels: labels,
		Annotations: map[string]string{
			"summary":     burnSummary(b),
			"description": r.burnDescription(s, b, templateRef, templateLiteral, "{{ $value | humanizePercentage }}"),
			"runbook_url": templateLiteral(r.runbookURL(AlertErrorBudgetBurn)),
			"dashboard_url": r.sloDashboardURL(templateLiteral(r.grafanaBase), func(l string) string {
				return "{{ $labels." + l + " | urlquery }}"
			}),
		},
	}
}

// SLODashboardUID is the uid of the SLOs dashboard under the default uid prefix.
const SLODashboardUID = DefaultDashboardUIDPrefix + sloDashboardSuffix

// sloDashboardSuffix ends the SLOs dashboard's uid.
const sloDashboardSuffix = genconfig.SLOsSuffix

// sloDashboardURL is the dashboard_url annotation of the burn-rate alerts: the SLOs dashboard
// under base (the Grafana base URL, as template text or expanded; "" for Grafana's root) with
// its job and name variables set to the alert's labels. value renders a label's value, already
// escaped for a URL query.
func (r *resolved) sloDashboardURL(base string, value func(label string) string) string {
	var vars []string
	if slices.Contains(r.groupBy, "job") {
		vars = append(vars, "job")
	}
	vars = append(vars, catalog.LabelName)
	return dashboardLink(base, r.dashUIDPrefix+sloDashboardSuffix, vars, value)
}

// burnSummary is the static summary of a burn-rate rule.
func burnSummary(b resolvedBurn) string {
	if b.Page {
		return fmt.Sprintf("A dependency SLO is burning its error budget %s× too fast: %s of it in %s.",
			num(b.Factor), pct(b.BudgetSpent()), FormatDuration(b.long))
	}
	return fmt.Sprintf("A dependency SLO is burning its error budget %s× too fast over days.", num(b.Factor))
}

// burnDescription renders the description; ref renders a label reference, lit a configured
// string (templateLiteral in rules, the string itself in test expectations) and value the short
// window's error ratio.
func (r *resolved) burnDescription(s *resolvedSLO, b resolvedBurn, ref, lit func(string) string, value string) string {
	return fmt.Sprintf("SLO %s of dependency %s: %s of calls failed over the last %s and more than %s over the last %s, "+
		"%s× the %s the %s objective allows over %s. At this rate the whole error budget is gone in %s; the last %s alone spent %s of it.",
		lit(strconv.Quote(s.ID)), r.subject(false, ref), value, FormatDuration(b.short),
		pct(decimalFloat(b.threshold)), FormatDuration(b.long),
		num(b.Factor), pct(decimalFloat(decimal(s.budget))), pct(s.Objective), FormatDuration(s.Period),
		FormatDuration(time.Duration(float64(s.Period)/b.Factor).Round(time.Minute)), FormatDuration(b.long), pct(b.BudgetSpent()))
}

// --- public description of the generated SLO series ---

// SLOInfo describes the generated series and alerts of one configured SLO, for dashboards and
// hand-written queries. Every recorded series carries the aggregation labels (group_by, by
// default job and name) and `slo` = ID; select one SLO's series with {slo="<ID>"}.
type SLOInfo struct {
	// ID, Name, NameRegex, Objective, Source and FallbacksGood are the SLO's configuration;
	// Period is resolved (30d when unset).
	ID, Name, NameRegex string
	Objective           float64
	Period              time.Duration
	Source              SLOSource
	FallbacksGood       bool
	// ErrorBudget is 1 − Objective, the share of calls that may fail (0.001 for 99.9%).
	ErrorBudget float64
	// GroupBy are the aggregation labels every recorded series keeps, besides slo.
	GroupBy []string
	// Selector holds the configured extra matchers, as the rules render them (may be empty).
	Selector string
	// Calls and BadCalls are the recorded base rates: calls (good and bad) and bad calls per
	// second over Windows[0].
	Calls, BadCalls string
	// Windows are the SLO's windows, shortest first (5m … 3d at 30d); ErrorRatio[i] is the
	// recorded error ratio (bad / all calls, 0..1) over Windows[i].
	Windows    []time.Duration
	ErrorRatio []string
	// PeriodErrorRatio is the error ratio over the whole period; BudgetRemaining is the share
	// of the period's error budget left: 1 − PeriodErrorRatio / (1 − Objective), negative once
	// overspent.
	PeriodErrorRatio string
	BudgetRemaining  string
	// Burns are the burn-rate alerts.
	Burns []SLOBurn
}

// SLOBurn describes one burn-rate alert of an SLO.
type SLOBurn struct {
	// Page is true for the fast-burn rules (page), false for the slow-burn ones (ticket).
	Page bool
	// Severity is the alert's severity label.
	Severity string
	// Factor is the burn rate the alert fires above.
	Factor float64
	// Long and Short are the alert's windows, scaled to the SLO's period.
	Long, Short time.Duration
	// Threshold is the error ratio both windows must exceed: Factor × (1 − Objective).
	Threshold float64
	// MinCalls is the minimum-traffic guard (calls in the long window); 0 means none.
	MinCalls int
}

// SLOs validates cfg and describes the series and alerts of its SLOs, in configuration order.
func SLOs(cfg Config) ([]SLOInfo, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	out := make([]SLOInfo, 0, len(r.slos))
	for _, s := range r.slos {
		info := SLOInfo{
			ID: s.ID, Name: s.Name, NameRegex: s.NameRegex, Objective: s.Objective, Period: s.Period,
			Source: s.Source, FallbacksGood: s.FallbacksGood, ErrorBudget: s.budgetShare(),
			GroupBy: slices.Clone(r.groupBy), Selector: r.matchers.String(),
			Calls: r.recSLOCalls(s), BadCalls: r.recSLOBadCalls(s),
			Windows:          slices.Clone(s.windows),
			PeriodErrorRatio: r.recSLOErrorRatio(s.Period), BudgetRemaining: r.recSLOBudgetRemaining(s),
		}
		for _, w := range s.windows {
			info.ErrorRatio = append(info.ErrorRatio, r.recSLOErrorRatio(w))
		}
		for _, b := range s.burns {
			info.Burns = append(info.Burns, SLOBurn{Page: b.Page, Severity: b.severity, Factor: b.Factor,
				Long: b.long, Short: b.short, Threshold: decimalFloat(b.threshold), MinCalls: b.minCalls})
		}
		out = append(out, info)
	}
	return out, nil
}
