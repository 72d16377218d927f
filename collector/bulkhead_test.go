package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

var waitEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func requireLintClean(t *testing.T, c prometheus.Collector) {
	t.Helper()
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	problems, err := testutil.GatherAndLint(pr)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestBulkheadExposition(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	full, err := New(reg, WithFullDetail())
	require.NoError(t, err)
	fake := clock.NewFake(waitEpoch)

	_, err = reg.Bulkhead("inventory", bulkhead.Config{MaxConcurrent: 20})
	require.NoError(t, err)
	pay, err := reg.Bulkhead("payments", bulkhead.Config{MaxConcurrent: 1, MaxWait: 200 * time.Millisecond, Clock: fake})
	require.NoError(t, err)

	// One permitted call holds the only permit; one caller waits 200ms and is rejected; a third
	// caller is waiting during the scrape.
	release, err := pay.Acquire(context.Background())
	require.NoError(t, err)
	errc := make(chan error, 2)
	go func() { _, err := pay.Acquire(context.Background()); errc <- err }()
	require.True(t, fake.WaitForTimers(1, nil))
	fake.Advance(200 * time.Millisecond)
	require.ErrorIs(t, <-errc, bulkhead.ErrFull)
	go func() {
		release, err := pay.Acquire(context.Background())
		if err == nil {
			release.Done()
		}
		errc <- err
	}()
	require.True(t, fake.WaitForTimers(1, nil))

	// Waits observed: none for inventory; for payments 0 (the permitted call, admitted at once)
	// and 200 ms (the rejected one). The caller still waiting is not observed yet. By default the
	// histogram reads as the catalog's few default classic buckets, +Inf, sum and count, and the
	// waiting gauge is not exported.
	const common = `
# HELP resilience_bulkhead_calls_total Bulkhead admission decisions.
# TYPE resilience_bulkhead_calls_total counter
resilience_bulkhead_calls_total{kind="permitted",name="inventory"} 0
resilience_bulkhead_calls_total{kind="permitted",name="payments"} 1
resilience_bulkhead_calls_total{kind="rejected",name="inventory"} 0
resilience_bulkhead_calls_total{kind="rejected",name="payments"} 1
# HELP resilience_bulkhead_inflight_calls Bulkhead permits in use.
# TYPE resilience_bulkhead_inflight_calls gauge
resilience_bulkhead_inflight_calls{name="inventory"} 0
resilience_bulkhead_inflight_calls{name="payments"} 1
# HELP resilience_bulkhead_max_concurrent_calls Configured bulkhead permits.
# TYPE resilience_bulkhead_max_concurrent_calls gauge
resilience_bulkhead_max_concurrent_calls{name="inventory"} 20
resilience_bulkhead_max_concurrent_calls{name="payments"} 1
# HELP resilience_bulkhead_wait_duration_seconds Time waited for a bulkhead permit.
# TYPE resilience_bulkhead_wait_duration_seconds histogram
`
	var names []string
	for _, m := range catalog.ByPrimitive(catalog.Bulkhead) {
		names = append(names, m.FullName(catalog.DefaultNamespace))
	}
	const family = "resilience_bulkhead_wait_duration_seconds"
	want := common + histogramLines(family, `name="inventory"`, catalog.DefaultBuckets(catalog.BulkheadWaitDuration)) +
		histogramLines(family, `name="payments"`, catalog.DefaultBuckets(catalog.BulkheadWaitDuration), 0, 0.2)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), names...))
	requireLintClean(t, c)

	waits := histogramLines(family, `name="inventory"`, catalog.WaitBuckets) +
		histogramLines(family, `name="payments"`, catalog.WaitBuckets, 0, 0.2)
	want = strings.Replace(common, "# TYPE resilience_bulkhead_calls_total counter\n",
		"# TYPE resilience_bulkhead_calls_total counter\n"+
			`resilience_bulkhead_calls_total{kind="aborted",name="inventory"} 0`+"\n"+
			`resilience_bulkhead_calls_total{kind="aborted",name="payments"} 0`+"\n", 1) +
		waits + `# HELP resilience_bulkhead_waiting_calls Callers waiting for a bulkhead permit.
# TYPE resilience_bulkhead_waiting_calls gauge
resilience_bulkhead_waiting_calls{name="inventory"} 0
resilience_bulkhead_waiting_calls{name="payments"} 1
`
	require.NoError(t, testutil.CollectAndCompare(full, strings.NewReader(want), names...))
	requireLintClean(t, full)

	release.Done() // hands the permit to the waiter, which releases it
	require.NoError(t, <-errc)
	st := pay.Snapshot()
	assert.Equal(t, 0, st.InFlight)
	assert.Equal(t, 0, st.Waiting)
}

func TestBulkheadMetricsFollowTheNamespace(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg, WithNamespace("acme"))
	require.NoError(t, err)
	_, err = reg.Bulkhead("db", bulkhead.Config{MaxConcurrent: 5})
	require.NoError(t, err)
	want := `
# HELP acme_bulkhead_max_concurrent_calls Configured bulkhead permits.
# TYPE acme_bulkhead_max_concurrent_calls gauge
acme_bulkhead_max_concurrent_calls{name="db"} 5
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "acme_bulkhead_max_concurrent_calls"))
}
