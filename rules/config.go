package rules

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// Defaults applied to the zero fields of a Config.
const (
	// DefaultRunbookBaseURL is where runbook_url points unless Config.RunbookBaseURL is set:
	// the runbooks generated into this repository, one directory (README.md) per alert, so
	// <base>/<AlertName> renders on GitHub.
	DefaultRunbookBaseURL = "https://github.com/stormwatch-go/stormwatch/tree/main/examples/generated/runbooks"
	// NoNamespace, as Config.Namespace, asks for metric names without a prefix
	// (circuitbreaker_state instead of resilience_circuitbreaker_state), matching a collector
	// built with collector.WithNamespace(""). An empty Config.Namespace means
	// catalog.DefaultNamespace.
	NoNamespace = "-"
	// MaxDuration bounds every configured for and keep_firing_for.
	MaxDuration = 24 * time.Hour
	// DefaultRateWindow is the rate window unless Config.RateWindow is set.
	DefaultRateWindow = 5 * time.Minute
	// MinRateWindow and MaxRateWindow bound Config.RateWindow.
	MinRateWindow = time.Minute
	MaxRateWindow = time.Hour
)

// DefaultGroupBy are the labels every aggregation keeps unless Config.GroupBy is set.
var DefaultGroupBy = []string{"job", catalog.LabelName}

// labelInstance is the target label added by Prometheus; the per-process alerts keep it.
const labelInstance = "instance"

// Format selects the shape of the generated rule file.
type Format string

// Output formats.
const (
	// FormatPrometheus is a plain Prometheus rule file (the default).
	FormatPrometheus Format = "prometheus"
	// FormatOperator is a Prometheus Operator PrometheusRule manifest.
	FormatOperator Format = "operator"
)

// Severities are the allowed values of an alert's severity label.
var Severities = []string{"info", "warning", "critical"}

// Config says how to generate the rules, tests and runbooks. The zero value generates the
// defaults.
type Config struct {
	// Namespace is the metric name prefix the collector was built with. "" means
	// catalog.DefaultNamespace ("resilience"); NoNamespace means no prefix.
	Namespace string
	// Selector holds extra PromQL label matchers injected into every vector selector of every
	// expression, e.g. `job="checkout", env!~"dev|test"`: the matchers of a PromQL vector
	// selector without the braces, parsed as PromQL parses them, the same syntax and checks as
	// the dashboards' Selector (see the README's configuration reference). Its labels are also
	// kept by every aggregation so recorded series still carry them. An invalid selector is a
	// *catalog.ConfigError with Field "selector".
	Selector string
	// GroupBy are the labels every aggregation keeps; nil means DefaultGroupBy (job, name).
	// It must contain "name" and must not contain "instance" (the per-process alerts add it).
	GroupBy []string
	// RunbookBaseURL is the base of every runbook_url annotation (<base>/<AlertName>); ""
	// means DefaultRunbookBaseURL.
	RunbookBaseURL string
	// Alerts overrides the defaults of individual alerts, keyed by alert name.
	Alerts map[string]AlertConfig
	// Format selects a plain rule file or a PrometheusRule manifest; "" means
	// FormatPrometheus.
	Format Format
	// RateWindow is the window of the rates the recording rules compute and the alerts built
	// on them use (`rate(…[5m])`); the recorded series are named after it
	// (…:rate5m, …:ratio_rate5m; …:rate1m with a 1m window), and the generated tests and
	// runbooks follow it. 0 means DefaultRateWindow (5m). It must be a whole number of seconds
	// in [MinRateWindow, MaxRateWindow] (1m to 1h), and should be at least 4× the scrape
	// interval, so that every window holds several samples of each counter. Windows with a
	// meaning of their own are not affected: CircuitBreakerStuckOpen's lookback (its threshold,
	// at least 2m), CircuitBreakerFlapping's 15m, RetryBudgetExhausted's 2m rate and
	// RetryRateSpike's one-hour offset. An alert whose for is shorter than the rate window
	// fires on blips: a short burst stays in the window for the whole window.
	RateWindow time.Duration
	// DashboardTitlePrefix is the title prefix of the generated Grafana dashboards, which the
	// runbooks point at ("<prefix> / Overview"); "" means DefaultDashboardTitlePrefix.
	DashboardTitlePrefix string
}

// DefaultDashboardTitlePrefix is the dashboards' default title prefix.
const DefaultDashboardTitlePrefix = "stormwatch"

// AlertConfig overrides the defaults of one alert. Nil pointers and empty strings keep the
// default.
type AlertConfig struct {
	// Enabled false drops the alert (and its test cases and runbook).
	Enabled *bool
	// Threshold replaces the alert's threshold; its unit and range depend on the alert (see
	// AlertInfo.ThresholdDoc).
	Threshold *float64
	// For replaces the alert's for duration (0 to 24h).
	For *time.Duration
	// KeepFiringFor replaces the alert's keep_firing_for duration (0 to 24h).
	KeepFiringFor *time.Duration
	// Severity replaces the alert's severity: info, warning or critical.
	Severity string
}

// FieldError is a configuration error. Field is the configuration path in the YAML spelling
// of the stormwatch config file (for example "alerts.RetryRateHigh.threshold"), so callers can
// point at the offending line.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("rules: %s: %s", e.Field, e.Reason)
}

func fieldErr(field string, value any, format string, args ...any) error {
	return &FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// settings are the resolved values of one alert.
type settings struct {
	enabled   bool
	threshold float64
	forDur    time.Duration
	keep      time.Duration
	severity  string
}

// resolved is a validated Config with its defaults applied.
type resolved struct {
	ns          string
	matchers    selector.Matchers
	groupBy     []string // aggregation labels: GroupBy plus the selector's labels
	runbookBase string
	format      Format
	alerts      map[string]settings
	dashboard   string        // title of the Overview dashboard
	rateWindow  time.Duration // window of the recorded rates
}

// Validate reports the first problem of cfg as a *FieldError (a *catalog.ConfigError for the
// selector), or nil.
func (cfg Config) Validate() error {
	_, err := cfg.resolve()
	return err
}

func (cfg Config) resolve() (*resolved, error) {
	r := &resolved{alerts: map[string]settings{}}
	switch cfg.Namespace {
	case "":
		r.ns = catalog.DefaultNamespace
	case NoNamespace:
		r.ns = ""
	default:
		if err := catalog.ValidateNamespace(cfg.Namespace); err != nil {
			return nil, fieldErr("namespace", cfg.Namespace, "%q is not a valid metric name prefix: %v", cfg.Namespace, err)
		}
		r.ns = cfg.Namespace
	}
	ms, err := selector.Parse("rules", cfg.Selector)
	if err != nil {
		return nil, err
	}
	r.matchers = ms

	gb := cfg.GroupBy
	if gb == nil {
		gb = DefaultGroupBy
	}
	if len(gb) == 0 {
		return nil, fieldErr("group_by", gb, "empty; it must contain at least %q", catalog.LabelName)
	}
	seen := map[string]bool{}
	for _, l := range gb {
		switch {
		case !selector.ValidLabelName(l):
			return nil, fieldErr("group_by", gb, "%q is not a valid label name", l)
		case strings.HasPrefix(l, "__"):
			return nil, fieldErr("group_by", gb, "%q is reserved (label names starting with __ are internal)", l)
		case l == labelInstance:
			return nil, fieldErr("group_by", gb, "%q must not be listed: the per-process alerts add it and CircuitBreakerOpenFleetWide counts instances", l)
		case selector.ReservedLabel(l):
			return nil, fieldErr("group_by", gb, "%q is a metric label the rules aggregate away or match on themselves", l)
		case seen[l]:
			return nil, fieldErr("group_by", gb, "%q is listed twice", l)
		}
		seen[l] = true
	}
	if !seen[catalog.LabelName] {
		return nil, fieldErr("group_by", gb, "must contain %q: every alert is about one named primitive", catalog.LabelName)
	}
	r.groupBy = slices.Clone(gb)
	for _, m := range ms {
		if !seen[m.Name] && m.Name != labelInstance {
			seen[m.Name] = true
			r.groupBy = append(r.groupBy, m.Name)
		}
	}

	r.rateWindow = cfg.RateWindow
	if r.rateWindow == 0 {
		r.rateWindow = DefaultRateWindow
	}
	switch w := r.rateWindow; {
	case w < MinRateWindow || w > MaxRateWindow:
		return nil, fieldErr("rate_window", cfg.RateWindow, "%s: out of range [%s, %s]", FormatDuration(w), FormatDuration(MinRateWindow), FormatDuration(MaxRateWindow))
	case w%time.Second != 0:
		return nil, fieldErr("rate_window", cfg.RateWindow, "%s: not a whole number of seconds", FormatDuration(w))
	}

	r.runbookBase = cfg.RunbookBaseURL
	if r.runbookBase == "" {
		r.runbookBase = DefaultRunbookBaseURL
	}
	u, err := url.Parse(r.runbookBase)
	if err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fieldErr("runbook_base_url", cfg.RunbookBaseURL, "%q is not an absolute http(s) URL", cfg.RunbookBaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fieldErr("runbook_base_url", cfg.RunbookBaseURL, "%q must not have a query or fragment (the alert name is appended as a path element)", cfg.RunbookBaseURL)
	}
	r.runbookBase = strings.TrimSuffix(r.runbookBase, "/")

	r.dashboard = cfg.DashboardTitlePrefix
	if r.dashboard == "" {
		r.dashboard = DefaultDashboardTitlePrefix
	}
	r.dashboard += " / Overview"

	switch cfg.Format {
	case "":
		r.format = FormatPrometheus
	case FormatPrometheus, FormatOperator:
		r.format = cfg.Format
	default:
		return nil, fieldErr("format", cfg.Format, "%q is not one of prometheus, operator", cfg.Format)
	}

	names := make([]string, 0, len(cfg.Alerts))
	for name := range cfg.Alerts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := specByName(name); !ok {
			return nil, fieldErr("alerts."+name, name, "unknown alert %q (known: %s)", name, strings.Join(AlertNames(), ", "))
		}
	}
	for _, sp := range specs {
		s := settings{enabled: true, threshold: sp.threshold, forDur: sp.forDur, keep: sp.keep, severity: sp.severity}
		o := cfg.Alerts[sp.name]
		path := "alerts." + sp.name + "."
		if o.Enabled != nil {
			s.enabled = *o.Enabled
		}
		if o.Threshold != nil {
			t := *o.Threshold
			if err := sp.bounds.check(t); err != nil {
				return nil, fieldErr(path+"threshold", t, "%v: %v", formatFloat(t), err)
			}
			s.threshold = t
		}
		if o.For != nil {
			if err := checkDuration(*o.For); err != nil {
				return nil, fieldErr(path+"for", *o.For, "%v: %v", *o.For, err)
			}
			s.forDur = *o.For
		}
		if o.KeepFiringFor != nil {
			if err := checkDuration(*o.KeepFiringFor); err != nil {
				return nil, fieldErr(path+"keep_firing_for", *o.KeepFiringFor, "%v: %v", *o.KeepFiringFor, err)
			}
			s.keep = *o.KeepFiringFor
		}
		if o.Severity != "" {
			if !slices.Contains(Severities, o.Severity) {
				return nil, fieldErr(path+"severity", o.Severity, "%q is not one of %s", o.Severity, strings.Join(Severities, ", "))
			}
			s.severity = o.Severity
		}
		r.alerts[sp.name] = s
	}
	return r, nil
}

func checkDuration(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("negative")
	case d > MaxDuration:
		return fmt.Errorf("longer than %s", FormatDuration(MaxDuration))
	case d%time.Second != 0:
		return fmt.Errorf("not a whole number of seconds")
	}
	return nil
}

// bounds is the allowed range of a threshold.
type bounds struct {
	min, max         float64
	minOpen, maxOpen bool // exclusive ends
	integer          bool
}

func (b bounds) check(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("must be a finite number in %s", b.rangeString())
	}
	if v < b.min || (b.minOpen && v == b.min) || v > b.max || (b.maxOpen && v == b.max) {
		return fmt.Errorf("out of range %s", b.rangeString())
	}
	if b.integer && v != math.Trunc(v) {
		return fmt.Errorf("must be a whole number in %s", b.rangeString())
	}
	return nil
}

func (b bounds) rangeString() string {
	lo, hi := "[", "]"
	if b.minOpen {
		lo = "("
	}
	if b.maxOpen {
		hi = ")"
	}
	return lo + formatFloat(b.min) + ", " + formatFloat(b.max) + hi
}

// FormatDuration renders d in Prometheus duration syntax (1h30m, 2m, 15s, 0s).
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	}
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.suffix)
			d -= n * u.unit
		}
	}
	return b.String()
}

// ParseDuration parses a Prometheus duration such as 90s, 1m30s, 2h or 1d (units ms, s, m,
// h, d, w, y; each at most once, largest first).
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if s == "0" {
		return 0, nil
	}
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"y", 365 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"ms", time.Millisecond}, {"m", time.Minute}, {"s", time.Second}}
	order := map[string]int{"y": 0, "w": 1, "d": 2, "h": 3, "m": 4, "s": 5, "ms": 6}
	var total time.Duration
	last := -1
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 12 {
			return 0, fmt.Errorf("invalid duration %q (want e.g. 30s, 5m, 1h30m)", s)
		}
		var n int64
		for _, c := range rest[:i] {
			n = n*10 + int64(c-'0')
		}
		rest = rest[i:]
		matched := false
		for _, u := range units {
			if strings.HasPrefix(rest, u.suffix) && !(u.suffix == "m" && strings.HasPrefix(rest, "ms")) {
				if order[u.suffix] <= last {
					return 0, fmt.Errorf("invalid duration %q: units must be given largest first, each once", s)
				}
				last = order[u.suffix]
				if n > int64(MaxDuration*400/u.unit) {
					return 0, fmt.Errorf("invalid duration %q: too long", s)
				}
				total += time.Duration(n) * u.unit
				rest = rest[len(u.suffix):]
				matched = true
				break
			}
		}
		if !matched {
			return 0, fmt.Errorf("invalid duration %q: unknown or missing unit (want ms, s, m, h, d, w or y)", s)
		}
	}
	return total, nil
}

func formatFloat(v float64) string {
	return fmt.Sprintf("%v", v)
}
