package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run is the length of the synthetic runs: 60 samples, 20 per third.
const (
	synthRun   = 10 * time.Minute
	synthEvery = 10 * time.Second
)

// healthy is a sample of a healthy demo in a steady outage, with the noise of a real one: RSS
// and goroutines wobble with GC cycles and calls in flight, the fds with connections.
func healthy(i int) Sample {
	wobble := []int{0, 3, -2, 5, -4, 1}[i%6]
	return Sample{
		At:         time.Duration(i+1) * synthEvery,
		RSS:        uint64(40*mib + wobble*mib/2),
		Goroutines: 180 + 4*wobble,
		FDs:        40 + wobble/2,
		Bytes:      61000 + 10*i, // counters gain digits
		Series:     520,
	}
}

// synth builds a run's samples from healthy ones, changed by leak (given the sample's index).
func synth(leak func(i int, s *Sample)) []Sample {
	var out []Sample
	for i := range int(synthRun / synthEvery) {
		s := healthy(i)
		if leak != nil {
			leak(i, &s)
		}
		out = append(out, s)
	}
	return out
}

// failed returns the names of the checks that failed.
func failed(v Verdict) []string {
	var names []string
	for _, c := range v.Checks {
		if !c.OK {
			names = append(names, c.Name)
		}
	}
	return names
}

func TestGrowthRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		leak func(i int, s *Sample)
		fail []string // the checks that must fail; none: PASS
	}{
		{"healthy", nil, nil},
		{"a warm-up that grows, then flat", func(i int, s *Sample) {
			if i < 20 {
				s.RSS /= 2
				s.Goroutines /= 3
				s.Series -= 100 // the outage's series appear as it begins
			}
		}, nil},
		{"a spike in the last third (GC, a burst of hanging calls)", func(i int, s *Sample) {
			if i == 50 {
				s.RSS *= 3
				s.Goroutines *= 4
				s.FDs *= 2
			}
		}, nil},
		{"memory leak: +1 MiB a sample", func(i int, s *Sample) { s.RSS += uint64(i) * mib }, []string{"RSS"}},
		{"goroutine leak: one per call that hangs, 2 a sample", func(i int, s *Sample) { s.Goroutines += 2 * i }, []string{"goroutines"}},
		{"connection leak: an fd a sample", func(i int, s *Sample) { s.FDs += i }, []string{"fds"}},
		{"a label value per call: series grow", func(i int, s *Sample) {
			s.Series += 5 * i
			s.Bytes += 5 * 150 * i
		}, []string{"/metrics bytes", "series"}},
		{"one new series late in the run", func(i int, s *Sample) {
			if i >= 55 {
				s.Series++
			}
		}, []string{"series"}},
		{"everything leaks", func(i int, s *Sample) {
			s.RSS += uint64(i) * mib
			s.Goroutines += 2 * i
			s.FDs += i
			s.Series += 5 * i
			s.Bytes += 5 * 150 * i
		}, []string{"RSS", "goroutines", "fds", "/metrics bytes", "series"}},
		{"a few new series: the series check catches what the size misses", func(i int, s *Sample) {
			s.Series += i
			s.Bytes += 150 * i
		}, []string{"series"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(synth(tc.leak), synthRun, Rule)
			require.Len(t, v.Checks, len(Rule))
			assert.Empty(t, v.Problems)
			assert.Equal(t, tc.fail, failed(v))
			assert.Equal(t, len(tc.fail) == 0, v.Pass())
			var b strings.Builder
			v.Print(&b)
			if len(tc.fail) == 0 {
				assert.Contains(t, b.String(), "soak: PASS")
				assert.NotContains(t, b.String(), "GROWTH")
			} else {
				assert.Contains(t, b.String(), "soak: FAIL")
				for _, name := range tc.fail {
					assert.Regexp(t, `(?m)^  `+name+` .* GROWTH$`, b.String())
				}
			}
		})
	}
}

// TestGrowthRuleTolerances: the bound is the larger of the relative and absolute allowances,
// inclusive.
func TestGrowthRuleTolerances(t *testing.T) {
	rss := Rule[0]
	require.Equal(t, "RSS", rss.Name)
	assert.InDelta(t, 120.0, rss.bound(100), 1e-9, "+20% of 100 MiB beats +4 MiB")
	assert.InDelta(t, 14.0, rss.bound(10), 1e-9, "+4 MiB beats +20% of 10 MiB")
	fds := Rule[2]
	require.Equal(t, "fds", fds.Name)
	assert.InDelta(t, 35.0, fds.bound(30), 1e-9)
	series := Rule[4]
	require.Equal(t, "series", series.Name)
	assert.InDelta(t, 520.0, series.bound(520), 1e-9, "no new series at all")

	atBound := synth(func(i int, s *Sample) {
		if window(s.At, synthRun) == Last {
			s.FDs = 40 + 5 // the middle's median is 40; +5 is the limit
		}
	})
	v := Judge(atBound, synthRun, Rule)
	assert.True(t, v.Pass(), "the limit itself passes")
	over := synth(func(i int, s *Sample) {
		if window(s.At, synthRun) == Last {
			s.FDs = 40 + 6
		}
	})
	assert.Equal(t, []string{"fds"}, failed(Judge(over, synthRun, Rule)))
}

func TestGrowthRuleProblems(t *testing.T) {
	t.Run("a failed sample", func(t *testing.T) {
		samples := synth(nil)
		samples[30] = Sample{At: samples[30].At, Err: errors.New("connection refused")}
		v := Judge(samples, synthRun, Rule)
		assert.Empty(t, failed(v), "the other samples show no growth")
		assert.False(t, v.Pass())
		assert.Equal(t, []string{"t=5m10s: connection refused"}, v.Problems)
	})
	t.Run("too few samples", func(t *testing.T) {
		v := Judge(synth(nil)[:42], synthRun, Rule) // stopped at 7m: 3 in the last third
		assert.True(t, v.Pass(), "3 samples are enough")
		v = Judge(synth(nil)[:41], synthRun, Rule)
		assert.False(t, v.Pass())
		assert.Empty(t, v.Checks)
		require.Len(t, v.Problems, 1)
		assert.Contains(t, v.Problems[0], "20 samples in the middle third and 2 in the last: need 3 each")
	})
	t.Run("no samples", func(t *testing.T) {
		v := Judge(nil, synthRun, Rule)
		assert.False(t, v.Pass())
		assert.Contains(t, v.Problems[0], "0 samples in the middle third")
	})
}

func TestWindowsAreThirds(t *testing.T) {
	for _, tc := range []struct {
		at   time.Duration
		want Window
	}{
		{0, WarmUp},
		{200*time.Second - 1, WarmUp},
		{200 * time.Second, Middle},
		{400*time.Second - 1, Middle},
		{400 * time.Second, Last},
		{synthRun, Last},
	} {
		assert.Equal(t, tc.want, window(tc.at, synthRun), tc.at)
	}
}

func TestStats(t *testing.T) {
	assert.Equal(t, 3.0, Median.of([]float64{9, 1, 3}))
	assert.Equal(t, 2.5, Median.of([]float64{4, 1, 3, 2}))
	assert.Equal(t, 9.0, Max.of([]float64{1, 9, 3}))
	v := []float64{3, 1, 2}
	Median.of(v)
	assert.Equal(t, []float64{3, 1, 2}, v, "the input is not reordered")
}

func TestRow(t *testing.T) {
	s := Sample{At: 200*time.Second + 300*time.Millisecond, RSS: 41*mib + mib/2, Goroutines: 183, FDs: 41, Bytes: 61234, Series: 520}
	assert.Equal(t, "     3m20s  middle        41.5         183    41           61234     520", Row(s, synthRun))
	assert.Len(t, Row(s, synthRun), len(Header), "aligned with the header")
	e := Sample{At: 5 * time.Second, Err: errors.New("refused")}
	assert.Equal(t, "        5s  warm-up   error: refused", Row(e, synthRun))
}
