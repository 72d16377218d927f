package rules

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// sparseTests is a promtool test file over the default rules: a retry around a breaker, every
// series as the exporter's default policy writes it, under steady traffic (one call a second).
//
//   - healthy: successes only. The rules record 6 series for the dependency (the breaker's and
//     the retry's calls, one by-kind rate of each, the retry's attempts and the callers' calls);
//     none of the rare events' rates, the ratios or the callers' failures, and no alert is
//     pending.
//   - not rescuing: retries that never rescue a call. The rescue ratio is recorded at 0 (not
//     left out), the retry ratio and the failures are recorded, and RetriesNotRescuing is
//     pending.
//   - a storm that fallbacks contain, without a budget refusal: the unrescued ratio is recorded
//     at 0, the refusals not at all, and RetryStormContained fires.
const sparseTests = `rule_files: [rules.yaml]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="successful_without_retry"}', values: '0+15x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="successful_with_retry"}', values: '0x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="failed_without_retry"}', values: '0x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="failed_with_retry"}', values: '0x60'}
      - {series: 'resilience_retry_attempts_total{job="j", name="d", instance="i"}', values: '0x60'}
      - {series: 'resilience_retry_budget_denied_total{job="j", name="d", instance="i"}', values: '0x60'}
      - {series: 'resilience_circuitbreaker_calls_total{job="j", name="d", instance="i", kind="successful"}', values: '0+15x60'}
      - {series: 'resilience_circuitbreaker_calls_total{job="j", name="d", instance="i", kind="failed"}', values: '0x60'}
      - {series: 'resilience_circuitbreaker_not_permitted_calls_total{job="j", name="d", instance="i"}', values: '0x60'}
      - {series: 'resilience_circuitbreaker_transitions_total{job="j", name="d", instance="i", from="closed", to="open"}', values: '0x60'}
      - {series: 'resilience_circuitbreaker_state{job="j", name="d", instance="i", state="closed"}', values: '1x60'}
      - {series: 'resilience_circuitbreaker_state{job="j", name="d", instance="i", state="open"}', values: '0x60'}
      - {series: 'resilience_circuitbreaker_state{job="j", name="d", instance="i", state="half_open"}', values: '0x60'}
      - {series: 'resilience_circuitbreaker_tripped_since_timestamp_seconds{job="j", name="d", instance="i"}', values: '0x60'}
    promql_expr_test:
      - expr: count by (job, name) ({__name__=~"job_name[a-z_]*:resilience_.+"})
        eval_time: 10m
        exp_samples: [{labels: '{job="j", name="d"}', value: 6}]
      - expr: count by (__name__) ({__name__=~"job_name[a-z_]*:resilience_.+", kind!=""})
        eval_time: 10m
        exp_samples:
          - {labels: '{__name__="job_name_kind:resilience_circuitbreaker_calls:rate5m"}', value: 1}
          - {labels: '{__name__="job_name_kind:resilience_retry_calls:rate5m"}', value: 1}
      - expr: round(1000 * job_name:resilience_dependency_calls:rate5m)
        eval_time: 10m
        exp_samples: [{labels: '{job="j", name="d"}', value: 1000}]
      - expr: round(1000 * job_name:resilience_retry_calls:rate5m)
        eval_time: 10m
        exp_samples: [{labels: '{job="j", name="d"}', value: 1000}]
      - expr: job_name:resilience_retry_attempts:rate5m
        eval_time: 10m
        exp_samples: [{labels: 'job_name:resilience_retry_attempts:rate5m{job="j", name="d"}', value: 0}]
      - expr: ALERTS
        eval_time: 10m
        exp_samples: []
  - interval: 15s
    input_series:
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="successful_without_retry"}', values: '0+15x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="successful_with_retry"}', values: '0x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="failed_without_retry"}', values: '0x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="failed_with_retry"}', values: '0+3x60'}
      - {series: 'resilience_retry_attempts_total{job="j", name="d", instance="i"}', values: '0+6x60'}
      - {series: 'resilience_retry_budget_denied_total{job="j", name="d", instance="i"}', values: '0x60'}
    promql_expr_test:
      - expr: job_name:resilience_retry_rescued_per_retried_call:ratio_rate5m
        eval_time: 10m
        exp_samples: [{labels: 'job_name:resilience_retry_rescued_per_retried_call:ratio_rate5m{job="j", name="d"}', value: 0}]
      - expr: round(1000 * job_name:resilience_retry_attempts_per_call:ratio_rate5m)
        eval_time: 10m
        exp_samples: [{labels: '{job="j", name="d"}', value: 333}]
      - expr: round(1000 * job_name:resilience_dependency_failed_calls:rate5m)
        eval_time: 10m
        exp_samples: [{labels: '{job="j", name="d"}', value: 200}]
      - expr: round(1000 * job_name:resilience_dependency_unrescued_failed_per_call:ratio_rate5m)
        eval_time: 10m
        exp_samples: [{labels: '{job="j", name="d"}', value: 167}]
      - expr: job_name:resilience_retry_budget_denied:rate5m
        eval_time: 10m
        exp_samples: []
      - expr: ALERTS{alertname="RetriesNotRescuing"}
        eval_time: 10m
        exp_samples: [{labels: 'ALERTS{alertname="RetriesNotRescuing", alertstate="pending", job="j", name="d", severity="warning"}', value: 1}]
  - interval: 15s
    input_series:
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="successful_without_retry"}', values: '0+15x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="successful_with_retry"}', values: '0x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="failed_without_retry"}', values: '0x60'}
      - {series: 'resilience_retry_calls_total{job="j", name="d", instance="i", kind="failed_with_retry"}', values: '0+3x60'}
      - {series: 'resilience_retry_attempts_total{job="j", name="d", instance="i"}', values: '0+6x60'}
      - {series: 'resilience_retry_budget_denied_total{job="j", name="d", instance="i"}', values: '0x60'}
      - {series: 'resilience_fallback_calls_total{job="j", name="d", instance="i", cause="error"}', values: '0+3x60'}
    promql_expr_test:
      - expr: job_name:resilience_dependency_unrescued_failed_per_call:ratio_rate5m
        eval_time: 10m
        exp_samples: [{labels: 'job_name:resilience_dependency_unrescued_failed_per_call:ratio_rate5m{job="j", name="d"}', value: 0}]
      - expr: job_name:resilience_retry_budget_denied:rate5m
        eval_time: 10m
        exp_samples: []
      - expr: ALERTS{alertname="RetryStormContained"}
        eval_time: 10m
        exp_samples: [{labels: 'ALERTS{alertname="RetryStormContained", alertstate="firing", job="j", name="d", severity="info"}', value: 1}]
`

// TestHealthyDependencyRecordsFewSeries shows what the recording rules cost a healthy
// dependency — the rates of rare events, the by-kind rates and the ratios are recorded only
// where they are not zero — and that a zero that matters (no retried call rescued, no call
// left unrescued) is still recorded, and an alert on a sum with a rare event (retries wanted:
// made and refused) still fires without it.
func TestHealthyDependencyRecordsFewSeries(t *testing.T) {
	promtool(t)
	rulesYAML, err := GeneratePrometheus(Config{})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesYAML, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sparse.test.yaml"), []byte(sparseTests), 0o644))
	out, ok := runPromtool(t, dir, "test", "rules", "sparse.test.yaml")
	require.True(t, ok, "promtool test rules:\n%s", out)
}
