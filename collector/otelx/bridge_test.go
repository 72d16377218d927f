package otelx

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// otelx is a module of its own so that stormwatch's main module never depends on
// OpenTelemetry: its build list must not hold any of it.
func TestMainModuleDoesNotDependOnOpenTelemetry(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "github.com/stormwatch-go/stormwatch\n", "ran in the main module")
	for _, line := range strings.Split(string(out), "\n") {
		mod, _, _ := strings.Cut(line, " ")
		require.False(t, strings.HasPrefix(mod, "go.opentelemetry.io/"), "the main module's build list holds %s", mod)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	reg := newRegistry(t)
	_, err := New(nil)
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Registry", ce.Field)
	_, err = New(reg, WithNamespace("bad-name"))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "namespace", ce.Field)
	_, err = New(reg, WithRetiredHold(-time.Second))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "RetiredHold", ce.Field)
	_, err = New(reg, WithClock(nil))
	require.ErrorAs(t, err, &ce)
	_, err = New(reg, nil)
	require.Error(t, err)
	b, err := New(reg)
	require.NoError(t, err)
	_, err = b.Register(nil)
	require.Error(t, err)
}

// tripped returns the tripped_since series of one collection by their labels.
func tripped(t *testing.T, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != catalog.BreakerTrippedSince.FullName(catalog.DefaultNamespace) {
				continue
			}
			for _, dp := range m.Data.(metricdata.Gauge[float64]).DataPoints {
				out[seriesKey("", attrs(dp.Attributes))] = dp.Value
			}
		}
	}
	return out
}

// A trip that ended keeps its cause series at 0 for the retired hold, then drops it: pushed
// data has no staleness marker, and the last value would otherwise still read as tripped.
func TestEndedTripIsHeldAtZero(t *testing.T) {
	for _, hold := range []time.Duration{DefaultRetiredHold, 0} {
		clk := clock.NewFake(epoch)
		reg, err := instrument.NewRegistry()
		require.NoError(t, err)
		br, err := reg.Breaker("payments", breaker.Config{Clock: clk})
		require.NoError(t, err)
		b, err := New(reg, WithClock(clk), WithRetiredHold(hold))
		require.NoError(t, err)
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		_, err = b.Register(mp)
		require.NoError(t, err)

		assert.Equal(t, map[string]float64{"{name=payments}": 0}, tripped(t, reader), "closed: no cause")
		br.ForceOpen()
		ts := float64(epoch.Unix())
		assert.Equal(t, map[string]float64{"{cause=forced,name=payments}": ts}, tripped(t, reader))
		clk.Advance(time.Minute)
		br.Reset()
		if hold == 0 {
			assert.Equal(t, map[string]float64{"{name=payments}": 0}, tripped(t, reader), "no hold")
			continue
		}
		assert.Equal(t, map[string]float64{"{name=payments}": 0, "{cause=forced,name=payments}": 0}, tripped(t, reader),
			"the ended trip's series reads 0")
		clk.Advance(hold - time.Second)
		assert.Equal(t, map[string]float64{"{name=payments}": 0, "{cause=forced,name=payments}": 0}, tripped(t, reader))
		// A new trip of the same cause takes the series back.
		br.ForceOpen()
		ts2 := float64(clk.Now().Unix())
		assert.Equal(t, map[string]float64{"{cause=forced,name=payments}": ts2}, tripped(t, reader))
		br.Reset()
		assert.Len(t, tripped(t, reader), 2, "held from the first collection that sees the trip ended")
		clk.Advance(hold)
		assert.Equal(t, map[string]float64{"{name=payments}": 0}, tripped(t, reader), "the hold is over")
		require.NoError(t, mp.Shutdown(context.Background()))
	}
}

// Unregistering the callback stops the observations; the producer keeps working on its own.
func TestUnregister(t *testing.T) {
	reg := newRegistry(t)
	_, err := reg.Breaker("payments", breaker.Config{})
	require.NoError(t, err)
	b, err := New(reg)
	require.NoError(t, err)
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(b))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	r, err := b.Register(mp)
	require.NoError(t, err)
	names := func() (out []string) {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if dataPoints(m.Data) > 0 {
					out = append(out, m.Name)
				}
			}
		}
		return out
	}
	assert.Contains(t, names(), "resilience_circuitbreaker_state")
	assert.Contains(t, names(), "resilience_circuitbreaker_call_duration_seconds")
	require.NoError(t, r.Unregister())
	assert.Equal(t, []string{"resilience_circuitbreaker_call_duration_seconds"}, names())
}

func dataPoints(d metricdata.Aggregation) int {
	switch d := d.(type) {
	case metricdata.Sum[int64]:
		return len(d.DataPoints)
	case metricdata.Gauge[float64]:
		return len(d.DataPoints)
	case metricdata.ExponentialHistogram[float64]:
		return len(d.DataPoints)
	case metricdata.Histogram[float64]:
		return len(d.DataPoints)
	}
	panic(errors.New("unexpected aggregation"))
}

// The SDK caps every instrument at 2,000 attribute sets per collection by default; the state
// gauge has three per breaker, so 700 breakers overflow it (the SDK folds the excess into one
// otel.metric.overflow series) unless the provider lifts the limit, as the package
// documentation says.
func TestCardinalityLimitOfTheSDK(t *testing.T) {
	reg := newRegistry(t)
	for i := range 700 {
		_, err := reg.Breaker(fmt.Sprintf("dependency-%03d", i), breaker.Config{})
		require.NoError(t, err)
	}
	states := func(opts ...sdkmetric.Option) (n int, overflow bool) {
		b, err := New(reg)
		require.NoError(t, err)
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(append(opts, sdkmetric.WithReader(reader))...)
		defer func() { _ = mp.Shutdown(context.Background()) }()
		_, err = b.Register(mp)
		require.NoError(t, err)
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name == "resilience_circuitbreaker_state" {
					for _, dp := range m.Data.(metricdata.Gauge[float64]).DataPoints {
						n++
						if v, ok := dp.Attributes.Value("otel.metric.overflow"); ok && v.AsBool() {
							overflow = true
						}
					}
				}
			}
		}
		return n, overflow
	}
	n, overflow := states()
	assert.True(t, overflow, "the default limit folds states into an overflow series")
	assert.Equal(t, 2000, n)
	n, overflow = states(sdkmetric.WithCardinalityLimit(0))
	assert.False(t, overflow)
	assert.Equal(t, 2100, n)
}
