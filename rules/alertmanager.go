package rules

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The Alertmanager fragment's receivers: placeholders without integrations (a receiver without
// any sends nothing) that the user maps to their own (PagerDuty, Slack, e-mail…) or renames.
const (
	// ReceiverPage receives the alerts whose severity is critical.
	ReceiverPage = "stormwatch-page"
	// ReceiverTicket receives stormwatch's other alerts (warning and info).
	ReceiverTicket = "stormwatch-ticket"
	// ReceiverDefault is the fragment's root receiver, which only alerts that are not
	// stormwatch's reach: in a configuration of your own, your root route takes its place.
	ReceiverDefault = "default"
)

// alertOutage is the critical alert a sustained dependency outage with user impact raises.
const alertOutage = AlertDependencyOutage

// symptoms are the alerts that a dependency which is down raises besides the alerts that say
// so: the breaker rejecting, retries failing or exhausting their budget, fallbacks answering,
// the bulkhead filling up with hung calls, slow calls.
var symptoms = []string{
	AlertRejectingCalls, AlertFlapping, AlertRetryRateHigh, AlertRetryRateSpike,
	AlertRetriesNotRescuing, AlertRetryBudgetExhausted, AlertFallbackSustained,
	AlertBulkheadRejectionsHigh, AlertBulkheadSaturated, AlertSlowCallRateHigh,
	AlertRetryStormContained, AlertLimiterSaturated, AlertLimiterRejectionsHigh,
	AlertLimiterPinnedAtMinimum, AlertThrottleShedding,
	AlertHedgeExtraLoadHigh, AlertHedgesRarelyWinning, AlertHedgeBudgetExhausted,
}

// inhibition is one inhibit rule: while source fires for a dependency (the same group_by
// labels, job and name by default), Alertmanager sends no notification for targets about it.
type inhibition struct {
	source  string
	targets []string
}

// inhibitions is the fragment's inhibition table: the alerts that say a dependency is down
// (the outage page, the breaker open fleet-wide, the breaker stuck open) suppress the
// symptoms, and the two critical ones also the warning that the breaker is stuck open; an
// exhausted retry budget, the hedges' refusals of the budget they share.
var inhibitions = []inhibition{
	{alertOutage, append([]string{AlertStuckOpen}, symptoms...)},
	{AlertOpenFleetWide, append([]string{AlertStuckOpen}, symptoms...)},
	{AlertStuckOpen, symptoms},
	// Retries and hedges of a dependency spend one budget: hedges refused while retries
	// exhaust it are the retry storm's doing, which RetryBudgetExhausted reports.
	{AlertRetryBudgetExhausted, []string{AlertHedgeBudgetExhausted}},
}

// routeTiming is a route's group_wait, group_interval and repeat_interval.
type routeTiming struct{ wait, interval, repeat time.Duration }

// Pages are sent soon and updated every 5 minutes; tickets wait a minute for the alerts that
// fire together and are updated at most every 10 minutes, so that an incident's symptoms,
// which fire over several minutes, arrive in one or two notifications.
var (
	pageTiming   = routeTiming{30 * time.Second, 5 * time.Minute, 4 * time.Hour}
	ticketTiming = routeTiming{time.Minute, 10 * time.Minute, 12 * time.Hour}
)

type amRoute struct {
	Receiver       string     `yaml:"receiver"`
	Matchers       []string   `yaml:"matchers,omitempty"`
	GroupBy        []string   `yaml:"group_by,omitempty"`
	GroupWait      string     `yaml:"group_wait,omitempty"`
	GroupInterval  string     `yaml:"group_interval,omitempty"`
	RepeatInterval string     `yaml:"repeat_interval,omitempty"`
	Routes         []*amRoute `yaml:"routes,omitempty"`
}

type amReceiver struct {
	Name string `yaml:"name"`
}

type amInhibitRule struct {
	SourceMatchers []string `yaml:"source_matchers"`
	TargetMatchers []string `yaml:"target_matchers"`
	Equal          []string `yaml:"equal"`
}

type amConfig struct {
	Route        *amRoute        `yaml:"route"`
	Receivers    []amReceiver    `yaml:"receivers"`
	InhibitRules []amInhibitRule `yaml:"inhibit_rules"`
}

// alertmanagerHeader explains how to use the fragment.
const alertmanagerHeader = `#
# Alertmanager configuration for stormwatch's alerts. It is a complete configuration (check it
# with amtool check-config), meant to be merged into yours:
#   - route.routes[0] goes under your root route's routes, before any route that would catch
#     stormwatch's alerts (it matches them by alertname and does not continue);
#   - inhibit_rules go into yours;
#   - the receivers stormwatch-page (critical alerts) and stormwatch-ticket (the others) are
#     placeholders: give them your integrations, or rename them to receivers you have.
# Alerts are grouped per dependency; the inhibit rules keep the symptoms of a dependency that is
# down (retries, fallbacks, rejections) quiet while the alert saying so fires for it.
`

// GenerateAlertmanager renders the Alertmanager configuration fragment of cfg: a route subtree
// matching the enabled alerts, grouped by the configured group_by labels (job and name by
// default), with the critical ones on ReceiverPage and the others on ReceiverTicket, and the
// inhibit rules of the inhibition table among the enabled alerts, equal on the group_by labels.
// Invalid configurations yield a *ConfigError.
func GenerateAlertmanager(cfg Config) ([]byte, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(Header + alertmanagerHeader)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(r.alertmanagerConfig()); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (r *resolved) alertmanagerConfig() amConfig {
	c := amConfig{
		Route:     &amRoute{Receiver: ReceiverDefault},
		Receivers: []amReceiver{{ReceiverDefault}, {ReceiverPage}, {ReceiverTicket}},
	}
	routed := r.amAlerts(r.amAlertNames())
	if len(routed) == 0 { // every alert disabled
		return c
	}
	ours := &amRoute{
		Receiver: ReceiverTicket,
		Matchers: []string{alertnameMatcher(routed)},
		GroupBy:  slices.Clone(r.groupBy),
		Routes: []*amRoute{timed(&amRoute{
			Receiver: ReceiverPage,
			Matchers: []string{labelSeverity + `="critical"`},
		}, pageTiming)},
	}
	c.Route.Routes = []*amRoute{timed(ours, ticketTiming)}
	for _, in := range inhibitions {
		targets := r.amAlerts(in.targets)
		if !r.amEnabled(in.source) || len(targets) == 0 {
			continue
		}
		c.InhibitRules = append(c.InhibitRules, amInhibitRule{
			SourceMatchers: []string{alertnameMatcher([]string{in.source})},
			TargetMatchers: []string{alertnameMatcher(targets)},
			Equal:          slices.Clone(r.groupBy),
		})
	}
	return c
}

// amAlertNames are the alerts the fragment routes: the default alerts and, when the config has
// SLOs, their burn-rate alerts.
func (r *resolved) amAlertNames() []string {
	var names []string
	for _, sp := range specs {
		names = append(names, sp.name)
	}
	if len(r.slos) > 0 {
		names = append(names, AlertErrorBudgetBurn)
	}
	return names
}

// amEnabled says whether alert is generated: an enabled default alert, or the SLO alert.
func (r *resolved) amEnabled(alert string) bool {
	if s, ok := r.alerts[alert]; ok {
		return s.enabled
	}
	return alert == AlertErrorBudgetBurn
}

// amAlerts keeps the names of enabled alerts, in order.
func (r *resolved) amAlerts(names []string) []string {
	var out []string
	for _, n := range names {
		if r.amEnabled(n) {
			out = append(out, n)
		}
	}
	return out
}

// alertnameMatcher matches the alerts called one of names (alert names are label values
// without quotes or regexp metacharacters: [a-zA-Z_][a-zA-Z0-9_]*).
func alertnameMatcher(names []string) string {
	if len(names) == 1 {
		return fmt.Sprintf("alertname=%q", names[0])
	}
	return fmt.Sprintf("alertname=~%q", strings.Join(names, "|"))
}

func timed(rt *amRoute, t routeTiming) *amRoute {
	rt.GroupWait, rt.GroupInterval, rt.RepeatInterval = FormatDuration(t.wait), FormatDuration(t.interval), FormatDuration(t.repeat)
	return rt
}
