package collector

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// One name that is not a valid label value used to break the whole exposition: Gather failed
// for every metric, and promhttp answered 500 — Go runtime metrics included. The registry now
// refuses such names from the direct API, and names taken from traffic go through
// instrument.SanitizeName, so /metrics always answers.
func TestHostileNamesNeverBreakTheExposition(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	require.NoError(t, pr.Register(collectors.NewGoCollector()))

	full := instrument.PipelineConfig{Retry: &retry.Config{}, Breaker: &breaker.Config{},
		Bulkhead: &bulkhead.Config{}, Timeout: &timeout.Config{}, Fallback: &fallback.Config{}}
	_, err = reg.Pipeline("payments", full)
	require.NoError(t, err)

	hostile := []string{"bad\xffname", "b\xffd:443", "evil\nname", "nul\x00", strings.Repeat("h", 5000)}
	for _, name := range hostile {
		// The direct API refuses every kind with a ConfigError naming the value…
		_, err := reg.Breaker(name, breaker.Config{})
		var ce *catalog.ConfigError
		require.ErrorAs(t, err, &ce, "%q", name)
		assert.Equal(t, "name", ce.Field)
		_, err = reg.Retry(name, retry.Config{})
		require.ErrorAs(t, err, &ce)
		_, err = reg.Bulkhead(name, bulkhead.Config{})
		require.ErrorAs(t, err, &ce)
		_, err = reg.Timeout(name, timeout.Config{})
		require.ErrorAs(t, err, &ce)
		_, err = reg.Fallback(name, fallback.Config{})
		require.ErrorAs(t, err, &ce)
		_, err = reg.Pipeline(name, full)
		require.ErrorAs(t, err, &ce)

		// …and a key taken from traffic becomes a name the exposition can carry.
		p, err := reg.Pipeline(instrument.SanitizeName(name), full)
		require.NoError(t, err, "%q", name)
		require.Error(t, p.Do(context.Background(), func(context.Context) error { return errors.New("down") }))
	}

	mfs, err := pr.Gather()
	require.NoError(t, err, "every metric gathers")
	names := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					names[l.GetValue()] = true
				}
			}
		}
	}
	assert.True(t, names["payments"])
	assert.True(t, names["bad\uFFFDname"], "the sanitised key is exported")
	assert.True(t, names["evil\uFFFDname"])
	assert.True(t, names[strings.Repeat("h", instrument.MaxNameLen)], "cut to MaxNameLen bytes")
	assert.Len(t, names, 1+len(hostile))

	rec := httptest.NewRecorder()
	promhttp.HandlerFor(pr, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, "/metrics answers")
	body := rec.Body.String()
	assert.True(t, strings.Contains(body, "\ngo_goroutines "), "the runtime metrics are there")
	assert.True(t, strings.Contains(body, "name=\"bad\uFFFDname\""), "and the sanitised name")
}
