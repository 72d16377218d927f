package rules

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/genconfig"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// Defaults applied to the zero fields of a Config.
const (
	// DefaultRunbookBaseURL is the runbook base unless Config.RunbookBaseURL is set: the
	// relative path of the generated runbooks (RunbookDir), so runbook_url is
	// runbooks/<AlertName>, which names the runbook generated next to the rule file (and
	// resolves in a repository browser showing the rule file). It is not a link an alert
	// receiver can open: set Config.RunbookBaseURL to where you publish the runbooks.
	DefaultRunbookBaseURL = RunbookDir
	// NoNamespace, as Config.Namespace, asks for metric names without a prefix
	// (circuitbreaker_state instead of resilience_circuitbreaker_state), matching a collector
	// built with collector.WithNamespace(""). An empty Config.Namespace means
	// catalog.DefaultNamespace.
	NoNamespace = genconfig.NamespaceNone
	// MaxDuration bounds every configured for and keep_firing_for.
	MaxDuration = 24 * time.Hour
	// DefaultRateWindow is the rate window unless Config.RateWindow is set.
	DefaultRateWindow = 5 * time.Minute
	// MinRateWindow and MaxRateWindow bound Config.RateWindow.
	MinRateWindow = 30 * time.Second
	MaxRateWindow = time.Hour
	// MaxGroupBy caps the number of Config.GroupBy labels: each one is part of every
	// recorded series' name and of every alert's label set.
	MaxGroupBy = genconfig.MaxGroupBy
	// MaxLabelNameLen caps every configured label name, in bytes: the GroupBy labels, the
	// Selector's and the SLO labels' (group_by labels are spelled in recorded series' names).
	MaxLabelNameLen = genconfig.MaxLabelNameLen
	// MaxDashboardTitlePrefixLen caps Config.DashboardTitlePrefix, in characters.
	MaxDashboardTitlePrefixLen = genconfig.MaxTitlePrefixLen
	// MaxURLLength caps Config.RunbookBaseURL and Config.GrafanaBaseURL, in bytes.
	MaxURLLength = 2048
)

// DefaultGroupBy are the labels every aggregation keeps unless Config.GroupBy is set (of the
// dashboards too).
var DefaultGroupBy = genconfig.DefaultGroupBy()

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
	// "name" is always kept (every alert is about one named primitive): listed or not, it is
	// there, after the labels listed without it ([cluster, job] keeps cluster, job, name). It
	// must not contain "instance" (the per-process alerts add it) nor "datasource" (the name of
	// the dashboards' data source variable, which the other labels become).
	GroupBy []string
	// RunbookBaseURL is the base of every runbook_url annotation (<base>/<AlertName>): where
	// you publish the generated runbooks (runbooks/<AlertName>/README.md), such as
	// https://github.com/acme/ops/blob/main/monitoring/runbooks. It is an absolute http or https
	// URL with a host, or a relative path such as "runbooks" (kept as written); without
	// userinfo, query or fragment (the alert name is appended as a path element), at most
	// MaxURLLength bytes, and characters a URL does not allow (spaces, quotes, braces, <>\^`|)
	// must be percent-encoded. Template syntax is never expanded: the URL lands in the
	// annotation literally. "" means DefaultRunbookBaseURL, the relative path "runbooks".
	RunbookBaseURL string
	// Alerts overrides the defaults of individual alerts, keyed by alert name.
	Alerts map[string]AlertConfig
	// Format selects a plain rule file or a PrometheusRule manifest; "" means
	// FormatPrometheus.
	Format Format
	// Target is the rule engine the rule files are written for (see Target); "" means
	// TargetPrometheus.
	Target Target
	// Kubernetes names and labels the PrometheusRule manifests and the dashboards' ConfigMaps.
	Kubernetes Kubernetes
	// RateWindow is the window of the rates the recording rules compute and the alerts built
	// on them use (`rate(…[5m])`); the recorded series are named after it
	// (…:rate5m, …:ratio_rate5m; …:rate1m with a 1m window), and the generated tests and
	// runbooks follow it. 0 means DefaultRateWindow (5m). It must be a whole number of seconds
	// in [MinRateWindow, MaxRateWindow] (30s to 1h), and should be at least 4× the scrape
	// interval, so that every window holds several samples of each counter (30s suits scrapes
	// every few seconds, such as the demo's). The gauges the alerts read (trip timestamps,
	// breaker states, slow-call rates, bulkhead permits) are read over the rate window too
	// (last_over_time, avg_over_time), so that a failed scrape does not restart a for. Windows
	// with a meaning of their own are not affected: CircuitBreakerStuckOpen's and
	// CircuitBreakerOpenFleetWide's lookback for rejections (at least 2m),
	// CircuitBreakerFlapping's 15m, RetryBudgetExhausted's minutes and RetryRateSpike's
	// one-hour offset. An alert whose for is shorter than the rate window fires on blips: a
	// short burst stays in the window for the whole window.
	RateWindow time.Duration
	// DashboardTitlePrefix is the title prefix of the generated Grafana dashboards, which the
	// runbooks point at ("<prefix> / Overview"); "" means DefaultDashboardTitlePrefix.
	DashboardTitlePrefix string
	// DashboardUIDPrefix is the uid prefix of the generated Grafana dashboards (as
	// dashboards.Config.UIDPrefix): every alert's dashboard_url opens the Dependency dashboard,
	// uid "<prefix>-dependency" (DependencyDashboardUID). "" means DefaultDashboardUIDPrefix.
	DashboardUIDPrefix string
	// GrafanaBaseURL is where Grafana serves the generated dashboards, such as
	// https://grafana.example.com: every alert's dashboard_url annotation is
	// <base>/d/<uid>?var-…=… (the Dependency dashboard on the alert's labels). The same rules
	// as RunbookBaseURL apply (an absolute http or https URL with a host, or a relative path;
	// no userinfo, query or fragment; never expanded as a template). "" means none: the
	// annotation is the path /d/<uid>?…, relative to Grafana's root.
	GrafanaBaseURL string
	// SLOs are the dependency SLOs (see SLO). Their rules are a file of their own
	// (GenerateSLORules: one group per SLO recording its SLI and error budget and alerting on
	// its burn rate), with their own tests (GenerateSLOTests); GenerateRunbooks adds their
	// runbook. Generate, Groups and GenerateTests leave them out.
	SLOs []SLO

	// ScrapeInterval is how often Prometheus scrapes the collector. The alerts on gauges
	// (trip timestamps, breaker states, slow-call rates, bulkhead permits) read each gauge's
	// latest sample within GaugeLookback(ScrapeInterval) = 3 × ScrapeInterval: two failed scrapes
	// in a row (a gap of 2× the scrape interval, as a process restart leaves) do not restart a
	// for, and a target that disappears leaves those alerts within about 2× the scrape
	// interval. 0 means DefaultScrapeInterval (15s); it must be a whole number of seconds in
	// [MinScrapeInterval, MaxScrapeInterval] and at most a quarter of the rate window (the
	// gauges are read over three scrape intervals, which the rate window must hold).
	ScrapeInterval time.Duration
}

// Bounds and default of Config.ScrapeInterval.
const (
	DefaultScrapeInterval = 15 * time.Second
	MinScrapeInterval     = time.Second
	MaxScrapeInterval     = 5 * time.Minute
)

// GaugeLookback is how far back the alerts on gauges look for a gauge's latest sample when
// Prometheus scrapes every scrapeInterval: three scrapes, so that two missed ones are
// tolerated.
func GaugeLookback(scrapeInterval time.Duration) time.Duration { return 3 * scrapeInterval }

// DefaultDashboardUIDPrefix is the dashboards' default uid prefix: their uids are
// "<prefix>-overview", "<prefix>-dependency" and "<prefix>-slos".
const DefaultDashboardUIDPrefix = genconfig.DefaultUIDPrefix

// DefaultDashboardTitlePrefix is the dashboards' default title prefix.
const DefaultDashboardTitlePrefix = genconfig.DefaultTitlePrefix

// MaxDashboardUIDPrefixLen is the longest Config.DashboardUIDPrefix (and dashboards'
// UIDPrefix) whose dashboard uids stay within Grafana's 40 characters.
const MaxDashboardUIDPrefixLen = genconfig.MaxUIDPrefixLen

// DependencyDashboardUID is the uid of the Dependency dashboard generated with uidPrefix ("":
// DefaultDashboardUIDPrefix), the dashboard every alert's dashboard_url opens.
func DependencyDashboardUID(uidPrefix string) string { return genconfig.DependencyUID(uidPrefix) }

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
	// MinInstances, for CircuitBreakerOpenFleetWide only, is how many instances of a job must
	// have the breaker open (besides more than the threshold's share of them): 1 to
	// MaxMinInstances, DefaultMinInstances when nil.
	MinInstances *int
}

// ConfigError is the configuration error of every stormwatch package (catalog.ConfigError).
// The rules report theirs with Primitive "rules" and Field the configuration path in the YAML
// spelling of the stormwatch config file (for example "alerts.RetryRateHigh.threshold"), so
// callers can point at the offending line. Inspect it with errors.As.
type ConfigError = catalog.ConfigError

// primitive is the ConfigError.Primitive of the rules' configuration errors.
const primitive = "rules"

// reason is the Reason of a *ConfigError, or the text of another error.
func reason(err error) string {
	var ce *catalog.ConfigError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return err.Error()
}

func fieldErr(field string, value any, format string, args ...any) error {
	return &catalog.ConfigError{Primitive: primitive, Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// settings are the resolved values of one alert.
type settings struct {
	enabled   bool
	threshold float64
	forDur    time.Duration
	keep      time.Duration
	severity  string
	// minInstances is CircuitBreakerOpenFleetWide's instance floor (0 for the others).
	minInstances int
}

// resolved is a validated Config with its defaults applied.
type resolved struct {
	ns          string
	matchers    selector.Matchers
	groupBy     []string // aggregation labels: GroupBy plus the selector's labels
	runbookBase string
	format      Format
	alerts      map[string]settings
	titlePrefix string        // of the dashboards' titles
	rateWindow  time.Duration // window of the recorded rates
	// grafanaBase is GrafanaBaseURL without a trailing slash ("" for none), dependencyUID the
	// uid of the Dependency dashboard, and dashVars the labels that are variables of it besides
	// instance (GroupBy as configured, without the selector's labels).
	grafanaBase   string
	dashUIDPrefix string
	dependencyUID string
	dashVars      []string
	slos          []*resolvedSLO
	target        Target   // rule engine
	kube          KubeMeta // Kubernetes objects' naming
	// scrape is the scrape interval, gaugeLookback the window of the gauges' last sample;
	// runbookSet and grafanaSet say whether the user chose the base URLs (links are left out
	// otherwise).
	scrape, gaugeLookback  time.Duration
	runbookSet, grafanaSet bool
}

// Validate reports the first problem of cfg as a *ConfigError, or nil.
func (cfg Config) Validate() error {
	_, err := cfg.resolve()
	return err
}

func (cfg Config) resolve() (*resolved, error) {
	r := &resolved{alerts: map[string]settings{}}
	if err := r.resolveShared(cfg); err != nil {
		return nil, err
	}
	if err := r.resolveOwn(cfg); err != nil {
		return nil, err
	}
	if err := r.resolveAlerts(cfg.Alerts); err != nil {
		return nil, err
	}
	var err error
	if r.slos, err = r.resolveSLOs(cfg.SLOs); err != nil {
		return nil, err
	}
	if err := r.checkSLOTestWork(); err != nil {
		return nil, err
	}
	return r, nil
}

// Bounds of the generated SLO tests' work: `promtool test rules` must pass them within a
// minute of CPU for every accepted config.
const (
	// MaxSLOTestEvaluations caps the evaluations of SLO rule groups (15 rules each) that the
	// generated SLO tests make in all, as estimated by sloTestEvaluations. promtool spends
	// about 2 ms of CPU on one (measured: 4 SLOs of 90 days at 99.999%, 12,442 estimated,
	// took 26 s on a loaded 2-core machine), so the cap keeps a test file near 50 s. Every
	// test scenario evaluates the rules of every SLO, so the work grows with the SLO count
	// times the sum of the SLOs' periods over the evaluation interval; the interval follows
	// the shortest period (1m up to 22d, 5m at 90d), so a config mixing short and long periods
	// costs most: 5 SLOs of one period fit, 4 of 6d and 90d do not.
	MaxSLOTestEvaluations = 25_000
	// sloTestSpanShare bounds the share of its period the test scenarios of one SLO span in
	// all: under 3% (2.8% at a 99.999% objective, whose blip scenario needs the longest history).
	sloTestSpanShare = 0.03
)

// sloTestEvaluations estimates the SLO rule group evaluations of the generated SLO tests.
func (r *resolved) sloTestEvaluations() int {
	every := r.sloEvalInterval()
	var evals float64
	for _, s := range r.slos {
		evals += sloTestSpanShare * float64(s.Period) / float64(every)
	}
	return int(evals * float64(len(r.slos)))
}

// checkSLOTestWork refuses SLOs whose generated tests would exceed MaxSLOTestEvaluations.
func (r *resolved) checkSLOTestWork() error {
	n := r.sloTestEvaluations()
	if n <= MaxSLOTestEvaluations {
		return nil
	}
	periods := make([]model.Duration, len(r.slos))
	for i, s := range r.slos {
		periods[i] = model.Duration(s.Period)
	}
	return fieldErr("slos", periods, "%d SLOs with these periods need about %d evaluations of SLO rules in their generated tests, at most %d (a minute of promtool): "+
		"every test evaluates every SLO's rules, every %s (what the shortest period needs); use fewer SLOs, or put SLOs of short and long periods into separate configs",
		len(r.slos), n, MaxSLOTestEvaluations, FormatDuration(r.sloEvalInterval()))
}

// resolveShared resolves the settings the dashboards share (genconfig): namespace, selector,
// group_by, the dashboards' title and uid prefixes.
func (r *resolved) resolveShared(cfg Config) error {
	var err error
	if r.ns, err = genconfig.Namespace(primitive, cfg.Namespace); err != nil {
		return err
	}
	if r.matchers, err = genconfig.Selector(primitive, cfg.Selector); err != nil {
		return err
	}
	gb, err := genconfig.GroupBy(primitive, cfg.GroupBy, selector.ReservedLabel)
	if err != nil {
		return err
	}
	r.dashVars = slices.Clone(gb)
	if r.groupBy, err = genconfig.Aggregation(primitive, gb, r.matchers, cfg.Selector); err != nil {
		return err
	}
	if r.dashUIDPrefix, err = genconfig.UIDPrefix(primitive, cfg.DashboardUIDPrefix); err != nil {
		return err
	}
	r.dependencyUID = genconfig.DependencyUID(r.dashUIDPrefix)
	if r.titlePrefix, err = genconfig.TitlePrefix(primitive, cfg.DashboardTitlePrefix); err != nil {
		return err
	}
	return nil
}

// resolveOwn resolves the rules' own settings: rate window, URLs, format.
func (r *resolved) resolveOwn(cfg Config) error {
	r.rateWindow = cfg.RateWindow
	if r.rateWindow == 0 {
		r.rateWindow = DefaultRateWindow
	}
	switch w := r.rateWindow; {
	case w < MinRateWindow || w > MaxRateWindow:
		return fieldErr("rate_window", model.Duration(cfg.RateWindow), "out of range [%s, %s]", FormatDuration(MinRateWindow), FormatDuration(MaxRateWindow))
	case w%time.Second != 0:
		return fieldErr("rate_window", model.Duration(cfg.RateWindow), "not a whole number of seconds")
	}

	r.scrape = cfg.ScrapeInterval
	if r.scrape == 0 {
		r.scrape = DefaultScrapeInterval
	}
	switch s := r.scrape; {
	case s < MinScrapeInterval || s > MaxScrapeInterval:
		return fieldErr("scrape_interval", model.Duration(cfg.ScrapeInterval), "out of range [%s, %s]", FormatDuration(MinScrapeInterval), FormatDuration(MaxScrapeInterval))
	case s%time.Second != 0:
		return fieldErr("scrape_interval", model.Duration(cfg.ScrapeInterval), "not a whole number of seconds")
	case 4*s > r.rateWindow:
		return fieldErr("scrape_interval", model.Duration(r.scrape), "more than a quarter of the rate window %s: the window must hold four scrapes (the gauges are read over three, so that two missed scrapes are tolerated)", FormatDuration(r.rateWindow))
	}
	r.gaugeLookback = GaugeLookback(r.scrape)
	r.runbookSet, r.grafanaSet = cfg.RunbookBaseURL != "", cfg.GrafanaBaseURL != ""

	r.runbookBase = cfg.RunbookBaseURL
	if r.runbookBase == "" {
		r.runbookBase = DefaultRunbookBaseURL
	}
	if err := checkBaseURL(r.runbookBase); err != nil {
		return fieldErr("runbook_base_url", cfg.RunbookBaseURL, "%v", err)
	}
	r.runbookBase = strings.TrimSuffix(r.runbookBase, "/")

	if cfg.GrafanaBaseURL != "" {
		if err := checkBaseURL(cfg.GrafanaBaseURL); err != nil {
			return fieldErr("grafana_base_url", cfg.GrafanaBaseURL, "%v", err)
		}
		r.grafanaBase = strings.TrimSuffix(cfg.GrafanaBaseURL, "/")
	}
	switch cfg.Format {
	case "":
		r.format = FormatPrometheus
	case FormatPrometheus, FormatOperator:
		r.format = cfg.Format
	default:
		return fieldErr("format", string(cfg.Format), "not one of %s, %s", FormatPrometheus, FormatOperator)
	}
	var err error
	if r.target, err = resolveTarget(cfg.Target); err != nil {
		return err
	}
	if r.kube, err = resolveKubernetes(cfg.Kubernetes, r.ns, r.matchers); err != nil {
		return err
	}
	return nil
}

// resolveAlerts applies the alerts' overrides to their defaults.
func (r *resolved) resolveAlerts(overrides map[string]AlertConfig) error {

	names := make([]string, 0, len(overrides))
	for name := range overrides {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := specByName(name); !ok {
			return fieldErr("alerts."+genconfig.Key(name), nil, "unknown alert (known: %s)", strings.Join(AlertNames(), ", "))
		}
	}
	for _, sp := range specs {
		s := settings{enabled: true, threshold: sp.threshold, forDur: sp.forDur, keep: sp.keep, severity: sp.severity}
		o := overrides[sp.name]
		path := "alerts." + sp.name + "."
		if o.Enabled != nil {
			s.enabled = *o.Enabled
		}
		if o.Threshold != nil {
			t := *o.Threshold
			if err := sp.bounds.check(t); err != nil {
				return fieldErr(path+"threshold", t, "%v", err)
			}
			s.threshold = t
		}
		if o.For != nil {
			if err := checkDuration(*o.For); err != nil {
				return fieldErr(path+"for", model.Duration(*o.For), "%v", err)
			}
			s.forDur = *o.For
		}
		if o.KeepFiringFor != nil {
			if err := checkDuration(*o.KeepFiringFor); err != nil {
				return fieldErr(path+"keep_firing_for", model.Duration(*o.KeepFiringFor), "%v", err)
			}
			s.keep = *o.KeepFiringFor
		}
		if sp.name == AlertOpenFleetWide {
			s.minInstances = DefaultMinInstances
		}
		if o.MinInstances != nil {
			n := *o.MinInstances
			switch {
			case sp.name != AlertOpenFleetWide:
				return fieldErr(path+"min_instances", n, "only %s has min_instances", AlertOpenFleetWide)
			case n < 1 || n > MaxMinInstances:
				return fieldErr(path+"min_instances", n, "out of range [1, %d]", MaxMinInstances)
			}
			s.minInstances = n
		}
		if o.Severity != "" {
			if !slices.Contains(Severities, o.Severity) {
				return fieldErr(path+"severity", o.Severity, "not one of %s", strings.Join(Severities, ", "))
			}
			s.severity = o.Severity
		}
		r.alerts[sp.name] = s
	}
	return nil
}

// checkBaseURL accepts an absolute http or https URL with a host, or a relative path, to which
// a path element is appended: no userinfo, query or fragment, and only characters a URL allows.
func checkBaseURL(s string) error {
	if len(s) > MaxURLLength {
		return fmt.Errorf("%d bytes, at most %d allowed", len(s), MaxURLLength)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	for i, c := range s {
		if unicode.IsSpace(c) || unicode.IsControl(c) || strings.ContainsRune("\"<>\\^`{|}", c) {
			return fmt.Errorf("character %q at offset %d is not allowed in a URL (percent-encode it as %s; template syntax is not expanded here)", c, i, url.PathEscape(string(c)))
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not a URL: %v", err)
	}
	switch {
	case u.Scheme == "" && u.Host == "" && !strings.HasPrefix(s, "//"):
		// A relative path such as "runbooks" or "/wiki/runbooks".
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want an absolute http or https URL, or a relative path")
	case u.Host == "":
		return fmt.Errorf("no host (want e.g. https://wiki.example.com/runbooks)")
	}
	switch {
	case u.User != nil:
		return fmt.Errorf("must not carry userinfo: it would be sent with every alert")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("must not have a query or fragment (the alert name is appended as a path element)")
	}
	return nil
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

// String describes the range: "a number in (0, 1)", "a whole number in [2, 40]".
func (b bounds) String() string {
	if b.integer {
		return "a whole number in " + b.rangeString()
	}
	return "a number in " + b.rangeString()
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

// FormatDuration renders d in Prometheus duration syntax (1h30m, 2m, 15s, 0s, 1d, 1w), as
// model.Duration does; the configuration's durations are parsed with model.ParseDuration.
func FormatDuration(d time.Duration) string {
	return model.Duration(d).String()
}

func formatFloat(v float64) string {
	return fmt.Sprintf("%v", v)
}
