package rules

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/catalog"
)

func ptr[T any](v T) *T { return &v }

func TestDefaultAlertsMatchSpec(t *testing.T) {
	want := []string{
		"CircuitBreakerStuckOpen", "CircuitBreakerFlapping", "CircuitBreakerOpenFleetWide", "CircuitBreakerRejectingCalls",
		"RetryRateHigh", "RetryRateSpike", "RetryBudgetExhausted", "RetriesNotRescuing",
		"BulkheadRejectionsHigh", "BulkheadSaturated", "FallbackSustained", "SlowCallRateHigh",
		"LimiterPinnedAtMinimum", "LimiterSaturated", "LimiterRejectionsHigh", "LimiterBaselineDrifting", "ThrottleShedding",
		"HedgeExtraLoadHigh", "HedgesRarelyWinning", "HedgeBudgetExhausted",
		"DependencyOutage", "RetryStormContained",
	}
	assert.ElementsMatch(t, want, AlertNames())
	for _, name := range AlertNames() {
		assert.Contains(t, scenarios, name, "test scenarios")
		assert.Contains(t, runbooks, name, "runbook")
	}
	sev := map[string]string{}
	for _, a := range Alerts() {
		sev[a.Name] = a.Severity
	}
	assert.Equal(t, "critical", sev[AlertOpenFleetWide])
	assert.Equal(t, "info", sev[AlertRejectingCalls])
	assert.Equal(t, "critical", sev[AlertDependencyOutage])
	assert.Equal(t, "info", sev[AlertRetryStormContained])
}

var (
	camelCase     = regexp.MustCompile(`^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*$`)
	recordingName = regexp.MustCompile(`^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$`)
)

// TestMixtoolConventions enforces the conventions of the monitoring-mixins style guide on the
// generated rules, for the defaults and for a customised configuration.
func TestMixtoolConventions(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Namespace: "acme", Selector: `job="checkout", env=~"prod|staging"`, GroupBy: []string{"cluster", "job", "name"}, RunbookBaseURL: "https://wiki.example.com/runbooks/", GrafanaBaseURL: "https://grafana.example.com"},
		{RateWindow: 90 * time.Second},
	} {
		window := FormatDuration(cmp.Or(cfg.RateWindow, DefaultRateWindow))
		groups, err := Groups(cfg)
		require.NoError(t, err)
		r, err := cfg.resolve()
		require.NoError(t, err)
		require.Len(t, groups, len(GroupNames))
		alerts := 0
		for i, g := range groups {
			assert.Equal(t, GroupNames[i], g.Name)
			assert.LessOrEqual(t, len(g.Rules), 20, "group %s has too many rules", g.Name)
			for _, rl := range g.Rules {
				if rl.Record != "" {
					assert.Equal(t, GroupRecording, g.Name)
					assert.Regexp(t, recordingName, rl.Record, "recording rule name level:metric:operations")
					parts := strings.Split(rl.Record, ":")
					if rl.Record == r.recBreakerTrips() {
						assert.Equal(t, "increase15m", parts[2], "the flapping window is its own")
						continue
					}
					if rl.Record == r.recImpact() {
						assert.Equal(t, "increase2m", parts[2], "the impact window is its own")
						continue
					}
					assert.Regexp(t, `^(ratio_)?rate`+window+`$`, parts[2])
					continue
				}
				alerts++
				assert.NotEqual(t, GroupRecording, g.Name)
				assert.Regexp(t, camelCase, rl.Alert)
				assert.LessOrEqual(t, len(rl.Alert), 40, rl.Alert)
				assert.Contains(t, Severities, rl.Labels["severity"], rl.Alert)
				sum := rl.Annotations["summary"]
				require.NotEmpty(t, sum, rl.Alert)
				assert.True(t, unicode.IsUpper([]rune(sum)[0]), "%s: summary %q must start with a capital", rl.Alert, sum)
				assert.True(t, strings.HasSuffix(sum, "."), "%s: summary %q must end with a period", rl.Alert, sum)
				assert.Contains(t, sum, "{{ $labels.name }}", "%s: the summary names the dependency", rl.Alert)
				if slices.Contains(r.groupBy, "job") {
					assert.Contains(t, sum, "{{ $labels.job }}", "%s: the summary names the job", rl.Alert)
				}
				desc := rl.Annotations["description"]
				assert.Contains(t, desc, "{{ $labels.name }}", "%s: description must be templated", rl.Alert)
				assert.True(t, strings.HasSuffix(desc, "."), "%s: %q", rl.Alert, desc)
				assert.Contains(t, desc, "$value", "%s: the description states the measured value", rl.Alert)
				if rl.Alert == AlertFlapping {
					// Hysteresis: it holds between trips by reading its own firing state.
					assert.Contains(t, rl.Expr, `ALERTS{alertname="CircuitBreakerFlapping", alertstate="firing"}`, rl.Alert)
				} else {
					assert.True(t, rl.For > 0 || rl.KeepFiringFor > 0, "%s: needs for or keep_firing_for", rl.Alert)
				}
				if cfg.RunbookBaseURL == "" {
					// No relative links unless the user chose them.
					assert.Len(t, rl.Annotations, 2, rl.Alert)
					continue
				}
				assert.Equal(t, strings.TrimSuffix(cfg.RunbookBaseURL, "/")+"/"+rl.Alert, rl.Annotations["runbook_url"])
				assert.Len(t, rl.Annotations, 4, rl.Alert)
				assert.True(t, strings.HasPrefix(rl.Annotations["dashboard_url"], "https://grafana.example.com/d/stormwatch-dependency?"), "%s: %s", rl.Alert, rl.Annotations["dashboard_url"])
				assert.Contains(t, rl.Annotations["dashboard_url"], "var-name={{ $labels.name | urlquery }}", rl.Alert)
			}
		}
		assert.Equal(t, len(AlertNames()), alerts)
	}
}

func TestPerInstanceAlertsKeepInstance(t *testing.T) {
	groups, err := Groups(Config{})
	require.NoError(t, err)
	perInstance := map[string]bool{AlertStuckOpen: true, AlertFlapping: true, AlertSlowCallRateHigh: true,
		AlertLimiterPinnedAtMinimum: true, AlertLimiterBaselineDrift: true}
	for _, g := range groups {
		for _, rl := range g.Rules {
			if rl.Alert == "" {
				continue
			}
			if rl.Alert == AlertOpenFleetWide {
				// Counts instances per job and name.
				assert.Contains(t, rl.Expr, "count by (job, name) (max by (job, name, instance)", rl.Alert)
				continue
			}
			assert.Equal(t, perInstance[rl.Alert], strings.Contains(rl.Expr, "instance"), "%s: instance kept", rl.Alert)
			assert.True(t, strings.Contains(rl.Expr, "by (job, name") || strings.Contains(rl.Expr, "on (job, name") || strings.HasPrefix(strings.TrimLeft(rl.Expr, "("), "job_name:") || strings.HasPrefix(rl.Expr, "job_name_instance:"), "%s keeps job and name", rl.Alert)
		}
	}
}

// TestConfigKnobsChangeOutput checks that every knob visibly changes the generated rules.
func TestConfigKnobsChangeOutput(t *testing.T) {
	def, err := Generate(Config{})
	require.NoError(t, err)
	cases := []struct {
		name   string
		cfg    Config
		want   []string // substrings of the changed output
		absent []string // substrings of the default output that must be gone
	}{
		{"namespace", Config{Namespace: "acme"}, []string{"acme_circuitbreaker_tripped_since_timestamp_seconds", "job_name:acme_retry_attempts:rate5m"}, []string{"resilience_"}},
		{"no namespace", Config{Namespace: NoNamespace}, []string{"(last_over_time(circuitbreaker_tripped_since_timestamp_seconds[45s]) > 0)", "job_name:retry_attempts:rate5m"}, []string{"resilience_"}},
		{"selector", Config{Selector: `job="checkout"`}, []string{`resilience_circuitbreaker_tripped_since_timestamp_seconds{job="checkout"}`, `job_name:resilience_retry_attempts_per_call:ratio_rate5m{job="checkout"}`, `job_name:resilience_retry_attempts:rate5m{job="checkout"} offset 1h`}, nil},
		{"selector label kept", Config{Selector: `env="prod"`}, []string{"sum by (job, name, env)", "job_name_env:resilience_retry_attempts:rate5m"}, nil},
		{"group_by", Config{GroupBy: []string{"cluster", "name"}}, []string{"sum by (cluster, name)", "cluster_name:resilience_retry_attempts:rate5m", "max by (cluster, name, instance)"}, []string{"job_name:"}},
		{"runbook base", Config{RunbookBaseURL: "https://runbooks.example.com/sw"}, []string{"runbook_url: https://runbooks.example.com/sw/CircuitBreakerStuckOpen"}, nil},
		{"relative runbook base chosen", Config{RunbookBaseURL: "runbooks"}, []string{"runbook_url: runbooks/CircuitBreakerStuckOpen"}, nil},
		{"scrape interval", Config{ScrapeInterval: time.Minute}, []string{"last_over_time(resilience_circuitbreaker_tripped_since_timestamp_seconds[3m])", "last_over_time(resilience_bulkhead_max_concurrent_calls[3m])"}, []string{"[45s]"}},
		{"threshold", Config{Alerts: map[string]AlertConfig{AlertRetryRateHigh: {Threshold: ptr(0.2)}}}, []string{"attempts_per_call:ratio_rate5m > 0.2"}, []string{"attempts_per_call:ratio_rate5m > 0.05"}},
		{"stuck-open threshold", Config{Alerts: map[string]AlertConfig{AlertStuckOpen: {Threshold: ptr(300.0)}}}, []string{") > 300", "[5m])) > 0", "(threshold 5m)", "in the last 5m"}, []string{") > 120"}},
		{"for", Config{Alerts: map[string]AlertConfig{AlertStuckOpen: {For: ptr(3 * time.Minute)}}}, []string{"for: 3m"}, nil},
		{"keep_firing_for", Config{Alerts: map[string]AlertConfig{AlertStuckOpen: {KeepFiringFor: ptr(5 * time.Minute)}}}, []string{"keep_firing_for: 5m\n        labels:\n          severity: warning\n        annotations:\n          description: 'Circuit breaker"}, nil},
		{"min_instances", Config{Alerts: map[string]AlertConfig{AlertOpenFleetWide: {MinInstances: ptr(5)}}}, []string{") >= 5\n", "(at least 5 instances)"}, []string{") >= 2\n"}},
		{"grafana base URL", Config{GrafanaBaseURL: "https://grafana.example.com/g/"}, []string{"dashboard_url: https://grafana.example.com/g/d/stormwatch-dependency?var-job="}, []string{"dashboard_url: /d/"}},
		{"dashboard uid prefix", Config{DashboardUIDPrefix: "shop", GrafanaBaseURL: "/grafana"}, []string{"dashboard_url: /grafana/d/shop-dependency?var-job="}, []string{"/d/stormwatch-dependency"}},
		{"group_by reaches dashboard_url", Config{GroupBy: []string{"cluster", "job", "name"}, Selector: `env="prod"`, GrafanaBaseURL: "https://g"}, []string{"https://g/d/stormwatch-dependency?var-cluster={{ $labels.cluster | urlquery }}&var-job={{ $labels.job | urlquery }}&var-name={{ $labels.name | urlquery }}\n"}, []string{"var-env="}},
		{"severity", Config{Alerts: map[string]AlertConfig{AlertRejectingCalls: {Severity: "warning"}}}, nil, nil},
		{"enabled", Config{Alerts: map[string]AlertConfig{AlertFallbackSustained: {Enabled: ptr(false)}, AlertDependencyOutage: {Enabled: ptr(false)}}}, nil, []string{"FallbackSustained", "DependencyOutage", "stormwatch-fallback"}},
		{"rate window", Config{RateWindow: 3 * time.Minute}, []string{
			"job_name:resilience_retry_attempts_per_call:ratio_rate3m > 0.05",
			"record: job_name_cause:resilience_fallback_calls:rate3m\n        expr: sum by (job, name, cause) (rate(resilience_fallback_calls_total[3m]))",
			"job_name:resilience_retry_attempts:rate3m offset 1h",
			"over the last 3m (threshold 5%, at least 10 retries), for 5m",
			"avg_over_time(resilience_bulkhead_inflight_calls[3m])",
			// The windows with a meaning of their own stay.
			"increase(resilience_circuitbreaker_not_permitted_calls_total[2m])",
			"increase(resilience_circuitbreaker_transitions_total{from=\"closed\", to=\"open\"}[15m])",
		}, []string{"rate5m", "[5m]", "over the last 5m"}},
		{"format", Config{Format: FormatOperator}, []string{"apiVersion: monitoring.coreos.com/v1", "kind: PrometheusRule", "spec:\n  groups:"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Generate(tc.cfg)
			require.NoError(t, err)
			assert.NotEqual(t, string(def), string(out), "knob did not change the output")
			for _, w := range tc.want {
				assert.Contains(t, string(out), w)
			}
			for _, a := range tc.absent {
				assert.NotContains(t, string(out), a)
			}
		})
	}

	// Severity: the RejectingCalls rule itself carries the new severity.
	groups, err := Groups(Config{Alerts: map[string]AlertConfig{AlertRejectingCalls: {Severity: "warning"}}})
	require.NoError(t, err)
	for _, g := range groups {
		for _, rl := range g.Rules {
			if rl.Alert == AlertRejectingCalls {
				assert.Equal(t, "warning", rl.Labels["severity"])
			}
		}
	}
}

func TestOutputHasHeaderAndParsesAsYAML(t *testing.T) {
	for _, f := range []Format{FormatPrometheus, FormatOperator} {
		out, err := Generate(Config{Format: f})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(out), "# Code generated by stormwatch"), f)
		require.Regexp(t, `(?m)^# Code generated .* DO NOT EDIT\.$`, string(out))
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal(out, &doc))
		if f == FormatOperator {
			assert.Equal(t, "PrometheusRule", doc["kind"])
			assert.Contains(t, doc["spec"], "groups")
		} else {
			assert.Contains(t, doc, "groups")
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, err := Generate(Config{Selector: `a="1", b="2"`})
	require.NoError(t, err)
	for range 5 {
		b, err := Generate(Config{Selector: `a="1", b="2"`})
		require.NoError(t, err)
		require.Equal(t, string(a), string(b))
	}
	ta, err := GenerateTests(Config{}, "r.yaml")
	require.NoError(t, err)
	tb, err := GenerateTests(Config{}, "r.yaml")
	require.NoError(t, err)
	require.Equal(t, string(ta), string(tb))
}

func TestConfigErrorsNameFieldAndValue(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string
		msg   string
	}{
		{Config{Namespace: "9lives"}, "namespace", `"9lives"`},
		{Config{GroupBy: []string{}}, "group_by", "empty"},
		{Config{GroupBy: []string{"name", "datasource"}}, "group_by", `"datasource" is the dashboards' data source variable`},
		{Config{GroupBy: []string{"name", "instance"}}, "group_by", `"instance"`},
		{Config{GroupBy: []string{"name", "name"}}, "group_by", "twice"},
		{Config{GroupBy: []string{"name", "bad-label"}}, "group_by", `"bad-label"`},
		{Config{RunbookBaseURL: "https://x/{{"}, "runbook_base_url", `'{' at offset 10 is not allowed in a URL (percent-encode it as %7B`},
		{Config{RunbookBaseURL: "https://x.example/?a=b"}, "runbook_base_url", "query"},
		{Config{RunbookBaseURL: "https://x.example/rb#top"}, "runbook_base_url", "fragment"},
		{Config{RunbookBaseURL: "https://x.example/rb?"}, "runbook_base_url", "query"},
		{Config{RunbookBaseURL: "ftp://x.example/rb"}, "runbook_base_url", "want an absolute http or https URL, or a relative path"},
		{Config{RunbookBaseURL: "javascript:alert(1)"}, "runbook_base_url", "want an absolute http or https URL"},
		{Config{RunbookBaseURL: "https:///rb"}, "runbook_base_url", "no host"},
		{Config{RunbookBaseURL: "//evil.example/rb"}, "runbook_base_url", "want an absolute http or https URL"},
		{Config{RunbookBaseURL: "https://user:secret@x.example/rb"}, "runbook_base_url", "userinfo"},
		{Config{RunbookBaseURL: "https://x.example/a b"}, "runbook_base_url", `' ' at offset 19`},
		{Config{RunbookBaseURL: "https://x.example/%zz"}, "runbook_base_url", "not a URL"},
		{Config{RunbookBaseURL: "https://x.example/\xff"}, "runbook_base_url", "UTF-8"},
		{Config{RunbookBaseURL: "https://x.example/" + strings.Repeat("a", MaxURLLength)}, "runbook_base_url", "at most 2048"},
		{Config{Namespace: strings.Repeat("a", catalog.MaxNamespaceLen+1)}, "namespace", "65 bytes, at most 64"},
		{Config{GroupBy: append([]string{"name"}, labelNames(MaxGroupBy)...)}, "group_by", "17 labels, at most 16"},
		{Config{GroupBy: []string{"name", "ünicode"}}, "group_by", "not a valid label name"},
		{Config{Format: "json"}, "format", `"json"`},
		{Config{RateWindow: 20 * time.Second}, "rate_window", "20s: out of range [30s, 1h]"},
		{Config{RateWindow: 61 * time.Minute}, "rate_window", "1h1m: out of range [30s, 1h]"},
		{Config{RateWindow: -time.Minute}, "rate_window", "out of range"},
		{Config{RateWindow: 90*time.Second + time.Millisecond}, "rate_window", "1m30s1ms: not a whole number of seconds"},
		{Config{ScrapeInterval: 10 * time.Minute}, "scrape_interval", "10m: out of range [1s, 5m]"},
		{Config{ScrapeInterval: 1500 * time.Millisecond}, "scrape_interval", "1s500ms: not a whole number of seconds"},
		{Config{RateWindow: time.Minute, ScrapeInterval: 45 * time.Second}, "scrape_interval", "45s: more than a quarter of the rate window 1m"},
		{Config{RateWindow: 30 * time.Second}, "scrape_interval", "15s: more than a quarter of the rate window 30s"},
		{Config{Alerts: map[string]AlertConfig{AlertRetryBudgetExhausted: {Threshold: ptr(1.0)}}}, "alerts.RetryBudgetExhausted.threshold", "out of range [0, 1)"},
		{Config{Alerts: map[string]AlertConfig{"CircuitBreakerStuck": {}}}, "alerts.CircuitBreakerStuck", "alerts.CircuitBreakerStuck: unknown alert (known: CircuitBreakerStuckOpen, "},
		{Config{Alerts: map[string]AlertConfig{AlertRetryRateHigh: {Threshold: ptr(11.0)}}}, "alerts.RetryRateHigh.threshold", "11: out of range (0, 10]"},
		{Config{Alerts: map[string]AlertConfig{AlertRejectingCalls: {Threshold: ptr(1.0)}}}, "alerts.CircuitBreakerRejectingCalls.threshold", "1: out of range (0, 1)"},
		{Config{Alerts: map[string]AlertConfig{AlertFlapping: {Threshold: ptr(2.5)}}}, "alerts.CircuitBreakerFlapping.threshold", "whole number"},
		{Config{Alerts: map[string]AlertConfig{AlertStuckOpen: {For: ptr(-time.Second)}}}, "alerts.CircuitBreakerStuckOpen.for", "negative"},
		{Config{Alerts: map[string]AlertConfig{AlertStuckOpen: {KeepFiringFor: ptr(48 * time.Hour)}}}, "alerts.CircuitBreakerStuckOpen.keep_firing_for", "longer than 1d"},
		{Config{Alerts: map[string]AlertConfig{AlertStuckOpen: {For: ptr(1500 * time.Millisecond)}}}, "alerts.CircuitBreakerStuckOpen.for", "whole number of seconds"},
		{Config{Alerts: map[string]AlertConfig{AlertStuckOpen: {Severity: "page"}}}, "alerts.CircuitBreakerStuckOpen.severity", `severity = "page": not one of info, warning, critical`},
		{Config{Alerts: map[string]AlertConfig{AlertStuckOpen: {MinInstances: ptr(3)}}}, "alerts.CircuitBreakerStuckOpen.min_instances", "only CircuitBreakerOpenFleetWide has min_instances"},
		{Config{Alerts: map[string]AlertConfig{AlertOpenFleetWide: {MinInstances: ptr(0)}}}, "alerts.CircuitBreakerOpenFleetWide.min_instances", "0: out of range [1, 10000]"},
		{Config{Alerts: map[string]AlertConfig{AlertHedgeExtraLoadHigh: {Threshold: ptr(0.0)}}}, "alerts.HedgeExtraLoadHigh.threshold", "0: out of range (0, 10]"},
		{Config{Alerts: map[string]AlertConfig{AlertHedgesRarelyWinning: {Threshold: ptr(1.5)}}}, "alerts.HedgesRarelyWinning.threshold", "1.5: out of range (0, 1]"},
		{Config{Alerts: map[string]AlertConfig{AlertHedgeBudgetExhausted: {Threshold: ptr(1.0)}}}, "alerts.HedgeBudgetExhausted.threshold", "1: out of range [0, 1)"},
		{Config{Alerts: map[string]AlertConfig{AlertHedgeBudgetExhausted: {For: ptr(-time.Minute)}}}, "alerts.HedgeBudgetExhausted.for", "negative"},
		{Config{GrafanaBaseURL: "https://grafana.example.com/?orgId=1"}, "grafana_base_url", "query"},
		{Config{GrafanaBaseURL: "https://x/{{ .Foo }}"}, "grafana_base_url", "not allowed in a URL"},
		{Config{GrafanaBaseURL: "https://admin:pw@grafana.example.com"}, "grafana_base_url", "userinfo"},
		{Config{DashboardUIDPrefix: "a/b"}, "dashboards.uid_prefix", `'/'`},
	}
	for _, tc := range cases {
		t.Run(tc.field+"/"+tc.msg, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.Error(t, err)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "rules", ce.Primitive)
			assert.Equal(t, tc.field, ce.Field)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Contains(t, err.Error(), tc.field)
			_, gerr := Generate(tc.cfg)
			assert.Error(t, gerr)
			_, gerr = GenerateTests(tc.cfg, "r.yaml")
			assert.Error(t, gerr)
			_, gerr = GenerateRunbooks(tc.cfg)
			assert.Error(t, gerr)
		})
	}
}

// TestDurations: durations render as Prometheus (and model.ParseDuration) spell them, and read
// back to the same value.
func TestDurations(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 15 * time.Second: "15s", 90 * time.Second: "1m30s", time.Hour: "1h", 90 * time.Minute: "1h30m",
		24 * time.Hour: "1d", 25 * time.Hour: "1d1h", 7 * 24 * time.Hour: "1w", 1500 * time.Millisecond: "1s500ms", -time.Minute: "-1m",
	} {
		assert.Equal(t, want, FormatDuration(d))
		if d >= 0 {
			back, err := model.ParseDuration(want)
			require.NoError(t, err, want)
			assert.Equal(t, d, time.Duration(back), want)
		}
	}
}

func labelNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("l%d", i)
	}
	return out
}

func TestRunbooks(t *testing.T) {
	files, err := GenerateRunbooks(Config{Selector: `job="checkout"`, Alerts: map[string]AlertConfig{AlertBulkheadSaturated: {Enabled: ptr(false)}}})
	require.NoError(t, err)
	paths := map[string]string{}
	for _, f := range files {
		paths[f.Path] = string(f.Data)
	}
	require.Contains(t, paths, "runbooks/README.md")
	assert.NotContains(t, paths, "runbooks/BulkheadSaturated/README.md")
	assert.NotContains(t, paths["runbooks/README.md"], "BulkheadSaturated")
	for _, name := range AlertNames() {
		if name == AlertBulkheadSaturated {
			continue
		}
		md, ok := paths["runbooks/"+name+"/README.md"]
		require.True(t, ok, name)
		for _, section := range []string{"# " + name, "## What it means", "## Impact", "## Likely causes", "## Investigate", "## Mitigate", "```promql", "stormwatch / Overview", "## Alert definition"} {
			assert.Contains(t, md, section, name)
		}
		assert.Contains(t, md, `job="checkout"`, "%s: queries use the selector", name)
		assert.Contains(t, paths["runbooks/README.md"], "["+name+"]("+name+"/README.md)")
	}
	files, err = GenerateRunbooks(Config{DashboardTitlePrefix: "Checkout"})
	require.NoError(t, err)
	assert.Contains(t, string(files[1].Data), "opens the **Checkout / Dependency** dashboard")
	assert.Contains(t, string(files[1].Data), "in **Checkout / Overview**, whose \"who is hurting\" table")
}

func TestRunbookCausesCoverTheSeeds(t *testing.T) {
	all := ""
	for _, rb := range runbooks {
		all += strings.Join(rb.Causes, "\n") + strings.Join(rb.Mitigation, "\n")
	}
	for _, cause := range []string{"retry storm", "missing circuit breaker", "undersized bulkhead", "4xx", "Retry-After", "recovery stampede", "credential"} {
		assert.Contains(t, strings.ToLower(all), strings.ToLower(cause))
	}
}
