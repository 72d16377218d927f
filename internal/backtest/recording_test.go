package backtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInlineRewrite(t *testing.T) {
	in := inliner{
		exprs: map[string]string{
			"a:calls:rate5m":  `sum by (job, name, kind) (rate(calls_total{job="x"}[5m]))`,
			"a:ratio:rate5m":  `sum by (job, name) (a:calls:rate5m{kind="failed", job="x"}) / sum by (job, name) (a:calls:rate5m{job="x"})`,
			"a:trips:inc15m":  `sum by (job) (increase(trips_total[15m]))`,
			"a:unused:rate5m": `1`,
		},
		inline: map[string]bool{"a:calls:rate5m": true, "a:ratio:rate5m": true, "a:trips:inc15m": true, "a:unused:rate5m": false},
		step:   30 * time.Second,
	}
	got, err := in.rewrite(`a:ratio:rate5m{job="x"} > 0.1`)
	require.NoError(t, err)
	assert.Equal(t, `((sum by (job, name) (((sum by (job, name, kind) (rate(calls_total{job="x"}[5m]))) and on (kind) (label_replace(vector(1), "kind", "failed", "", "")))) / sum by (job, name) (((sum by (job, name, kind) (rate(calls_total{job="x"}[5m]))))))) > 0.1`, got,
		"the configured selector's matcher is dropped (the recording expression has it), kind=failed becomes a filter, nested rules are inlined")

	got, err = in.rewrite(`max_over_time(a:trips:inc15m[15m]) >= 3 and a:unused:rate5m`)
	require.NoError(t, err)
	assert.Equal(t, `max_over_time(((sum by (job) (increase(trips_total[15m]))))[15m:30s]) >= 3 and a:unused:rate5m`, got)

	got, err = in.rewrite(`a:trips:inc15m offset 1h / avg_over_time(a:trips:inc15m[1h] offset 15m)`)
	require.NoError(t, err)
	assert.Equal(t, `last_over_time(((sum by (job) (increase(trips_total[15m]))))[30s:30s] offset 1h) / avg_over_time(((sum by (job) (increase(trips_total[15m]))))[1h:30s] offset 15m)`, got,
		"an offset needs a selector or a subquery: an instant selector's becomes a one-step subquery's, a range selector's stays after its subquery")

	got, err = in.rewrite(`a:calls:rate5m{kind=~"a|b", name!="z", job!~"p|q"}`)
	require.NoError(t, err)
	assert.Equal(t, `((sum by (job, name, kind) (rate(calls_total{job="x"}[5m]))) and on (kind) (label_replace(vector(1), "kind", "a", "", "") or label_replace(vector(1), "kind", "b", "", "")) unless on (name) (label_replace(vector(1), "name", "z", "", "")) unless on (job) (label_replace(vector(1), "job", "p", "", "") or label_replace(vector(1), "job", "q", "", "")))`, got)

	_, err = in.rewrite(`a:calls:rate5m{kind=~"fail.*"}`)
	require.ErrorContains(t, err, "only alternations of plain values")

	got, err = in.rewrite(`label_replace(x, "dst", "a:calls:rate5m", "", "")`)
	require.NoError(t, err)
	assert.Equal(t, `label_replace(x, "dst", "a:calls:rate5m", "", "")`, got, "names inside strings are not selectors")
}

func TestReferences(t *testing.T) {
	exprs := map[string]string{"r:a": "sum(x)", "r:b": "r:a / 2", "r:c": "y"}
	got := references("r:b > 1", exprs)
	assert.ElementsMatch(t, []string{"r:a", "r:b"}, got)
}
