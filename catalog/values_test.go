package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closedSets lists every closed set with its size constant and label values, so that a value
// added to a set without a name (or the reverse) fails here.
func closedSets() map[string]struct {
	num    int
	values []string
} {
	type set = struct {
		num    int
		values []string
	}
	return map[string]set{
		"State":       {NumStates, Names(States[:])},
		"CallKind":    {NumCallKinds, Names(CallKinds[:])},
		"TripCause":   {NumTripCauses, Names(TripCauses[:])},
		"RetryKind":   {NumRetryKinds, Names(RetryKinds[:])},
		"Outcome":     {NumOutcomes, Names(Outcomes[:])},
		"Class":       {NumClasses - 1, Names(Classes[:])}, // ClassNone is not a label value
		"DelaySource": {NumDelaySources, Names(DelaySources[:])},
		"Admission":   {NumAdmissions, Names(Admissions[:])},
		"TimeoutKind": {NumTimeoutKinds, Names(TimeoutKinds[:])},
		"Cause":       {NumCauses, Names(Causes[:])},
	}
}

func TestClosedSetsAreNamedAndDistinct(t *testing.T) {
	for typ, set := range closedSets() {
		t.Run(typ, func(t *testing.T) {
			require.Len(t, set.values, set.num)
			seen := map[string]bool{}
			for _, v := range set.values {
				assert.Regexp(t, labelValueRE, v)
				assert.False(t, seen[v], "duplicate %q", v)
				seen[v] = true
			}
		})
	}
}

func TestValuesAreTheirOwnIndex(t *testing.T) {
	// Primitives index arrays by these values: the listing order must be the numeric order.
	for i, s := range States {
		assert.Equal(t, State(i), s)
	}
	for i, k := range CallKinds {
		assert.Equal(t, CallKind(i), k)
	}
	for i, c := range TripCauses {
		assert.Equal(t, TripCause(i), c)
	}
	for i, k := range RetryKinds {
		assert.Equal(t, RetryKind(i), k)
	}
	for i, o := range Outcomes {
		assert.Equal(t, Outcome(i), o)
	}
	for i, c := range Classes {
		assert.Equal(t, Class(i+1), c)
		assert.True(t, c.Valid())
	}
	assert.False(t, ClassNone.Valid())
	assert.False(t, Class(NumClasses).Valid())
	assert.Equal(t, "", ClassNone.String())
	for i, s := range DelaySources {
		assert.Equal(t, DelaySource(i), s)
	}
	for i, a := range Admissions {
		assert.Equal(t, Admission(i), a)
	}
	for i, k := range TimeoutKinds {
		assert.Equal(t, TimeoutKind(i), k)
	}
	for i, c := range Causes {
		assert.Equal(t, Cause(i), c)
	}
}

func TestOutOfRangeValuesSayWhatTheyAre(t *testing.T) {
	assert.Equal(t, "State(9)", State(9).String())
	assert.Equal(t, "Class(200)", Class(200).String())
	assert.Equal(t, "Cause(5)", Cause(NumCauses).String())
}

func TestMetricLabelsUseTheClosedSets(t *testing.T) {
	l, _ := RetryErrors.Label(LabelClass)
	assert.Equal(t, Names(Classes[:]), l.Values)
	l, _ = FallbackCalls.Label(LabelCause)
	assert.Equal(t, []string{"circuit_open", "bulkhead_full", "timeout", "retries_exhausted", "error"}, l.Values)
	l, _ = BreakerCallDuration.Label(LabelKind)
	assert.Equal(t, []string{"successful", "failed"}, l.Values)
}

func TestClassicBucketsArePowersOfTwoInsideTheNativeRange(t *testing.T) {
	lo, hi := math.Ldexp(1, NativeMinExponent), math.Ldexp(1, NativeMaxExponent)
	assert.Equal(t, lo, NativeZeroThreshold)
	for _, m := range All() {
		if m.Type != Histogram {
			continue
		}
		for _, b := range m.Buckets {
			frac, _ := math.Frexp(b)
			assert.Equal(t, 0.5, frac, "%s bucket %v is a power of two", m.Name, b)
			assert.Greater(t, b, lo, m.Name)
			assert.LessOrEqual(t, b, hi, m.Name)
		}
	}
	assert.Equal(t, []float64{0.0078125, 0.015625, 0.03125, 0.0625, 0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64}, BackoffBuckets)
}

func TestDefaultClassicBucketsAreAFewOfTheFullLayout(t *testing.T) {
	def := DurationDefaultBuckets
	assert.Equal(t, []float64{1.0 / 256, 1.0 / 32, 0.25, 2, 16}, def)
	for i, b := range def {
		assert.Contains(t, BreakerCallDuration.Buckets, b, "bound %v is a bound of the full layout", b)
		if i > 0 {
			assert.Equal(t, 8.0, b/def[i-1], "bounds a factor 8 apart")
		}
	}
	// Only call durations carry default classic bounds; every histogram has a full layout.
	for _, m := range All() {
		if m.Type != Histogram {
			assert.Nil(t, DefaultBuckets(m), m.Name)
			continue
		}
		require.NotEmpty(t, m.Buckets, m.Name)
		if m.Name == BreakerCallDuration.Name && m.Primitive == BreakerCallDuration.Primitive {
			assert.Equal(t, def, DefaultBuckets(m))
		} else {
			assert.Nil(t, DefaultBuckets(m), m.Name)
		}
	}
	// A bulkhead's calls_total is not the breaker's call duration: the name alone does not match.
	assert.Nil(t, DefaultBuckets(Metric{Primitive: Bulkhead, Name: BreakerCallDuration.Name}))
}

func TestConfigErrorNamesPrimitiveFieldAndValue(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &ConfigError{Primitive: "retry", Name: "payments", Field: "Backoff.Multiplier", Value: 0.5, Reason: "must be at least 1"})
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "Backoff.Multiplier", ce.Field)
	assert.Equal(t, `wrapped: retry "payments": Backoff.Multiplier = 0.5: must be at least 1`, err.Error())
	assert.Equal(t, `rules: selector = "a)": invalid regex`,
		(&ConfigError{Primitive: "rules", Field: "selector", Value: "a)", Reason: "invalid regex"}).Error())
	assert.Equal(t, `breaker "x": Window = State(9): unknown`,
		(&ConfigError{Primitive: "breaker", Name: "x", Field: "Window", Value: State(9), Reason: "unknown"}).Error())
	long := strings.Repeat("é", 100) // 200 bytes
	msg := (&ConfigError{Primitive: "rules", Field: "selector", Value: long, Reason: "too long"}).Error()
	assert.Equal(t, `rules: selector = "`+strings.Repeat("é", 60)+`"… (200 bytes): too long`, msg)
	assert.Equal(t, `registry: name: must not be empty`,
		(&ConfigError{Primitive: "registry", Field: "name", Reason: "must not be empty"}).Error())
}

func TestValuesEncodeAsTheirLabelValue(t *testing.T) {
	b, err := json.Marshal(map[string]any{"state": StateHalfOpen, "class": ClassTimeout, "cause": TripSlowCallRate, "outcome": OutcomeGaveUp})
	require.NoError(t, err)
	assert.JSONEq(t, `{"state":"half_open","class":"timeout","cause":"slow_call_rate","outcome":"gave_up"}`, string(b))
	b, err = json.Marshal(ClassNone)
	require.NoError(t, err)
	assert.Equal(t, `""`, string(b))
}
