package collector

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// findBreaker returns the breaker called name in the registry's list without looking it up
// (a lookup counts as use and would keep it from eviction).
func findBreaker(list []instrument.Named[*breaker.Breaker], name string) *breaker.Breaker {
	i := sort.Search(len(list), func(i int) bool { return list[i].Name >= name })
	if i < len(list) && list[i].Name == name {
		return list[i].Value
	}
	return nil
}

// gatherBreakers scrapes reg through a pedantic registry (which fails on duplicate series) and
// returns the number of breaker series and the breaker names they carry.
func gatherBreakers(t *testing.T, pr *prometheus.Registry) (series int, names map[string]bool) {
	t.Helper()
	mfs, err := pr.Gather()
	require.NoError(t, err)
	names = map[string]bool{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), catalog.DefaultNamespace+"_"+string(catalog.CircuitBreaker)+"_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			series++
			for _, lp := range m.GetLabel() {
				if lp.GetName() == catalog.LabelName {
					names[lp.GetValue()] = true
				}
			}
		}
	}
	return series, names
}

// TestIdleEvictionMillionKeys drives 1,000,000 distinct keys through keyed breakers over a
// simulated day (fake clock; with the race detector, 100,000 keys over 2.4 h: the same rate) with an idle TTL of 10 minutes: about 694 new keys a minute, each
// called once when it appears, a rolling sample called again minutes later, one in 10,000
// tripped open (and closed by a probe half an hour later), one in 10,000 left holding a
// failure. Every 5 simulated minutes it checks the bound:
//
//	keys active within the last TTL
//	  ⊆ live breakers ⊆
//	keys active within the last TTL + 2·TTL/SweepDivisor, plus the breakers not closed or
//	holding a failure
//
// and that no such breaker was ever evicted. A few full scrapes through a pedantic registry
// check that the exposed breakers are exactly the live ones, and re-created keys start closed
// with fresh counters.
func TestIdleEvictionMillionKeys(t *testing.T) {
	const (
		ttl   = 10 * time.Minute
		step  = 6 * time.Second
		slack = 2 * ttl / instrument.SweepDivisor
	)
	keys, day := 1_000_000, 24*time.Hour
	if raceEnabled { // the same key rate (and so the same bound) over a tenth of the day
		keys, day = keys/10, day/10
	}
	steps := int(day / step)
	if testing.Short() {
		t.Skip("a simulated day")
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg, err := instrument.NewRegistry(instrument.WithIdleTTL(ttl, clk), instrument.WithMaxNames(keys))
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	cfg := breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 3, HalfOpenCalls: 1,
		DisableJitter: true, Clock: clk}

	call := func(name string, err error) *breaker.Breaker {
		b, gerr := reg.Breaker(name, cfg)
		require.NoError(t, gerr)
		if p, aerr := b.Acquire(); aerr == nil {
			p.Done(err)
		}
		return b
	}
	keyName := func(i int) string { return fmt.Sprintf("host-%07d.example:443", i) }

	last := map[string]time.Time{}          // keys possibly live → their last call
	tripped := map[string]time.Time{}       // open or half-open breakers → when tripped
	holding := map[string]bool{}            // closed breakers whose window holds a failure
	pinned := map[string]*breaker.Breaker{} // the protected breakers, to check identity
	var maxLive, maxBound, recreations int

	next := 0
	for s := 1; s <= steps; s++ {
		clk.Advance(step)
		now := clk.Now()
		for ; next < keys && next < s*keys/steps; next++ {
			name := keyName(next)
			b := call(name, nil)
			last[name] = now
			switch next % 10_000 {
			case 0: // trip it: 3 consecutive failures
				call(name, errDown)
				call(name, errDown)
				call(name, errDown)
				require.Equal(t, catalog.StateOpen, b.State())
				tripped[name], pinned[name] = now, b
			case 5_000: // leave a failure in its window
				call(name, errDown)
				holding[name], pinned[name] = true, b
			}
		}
		// A rolling sample of keys 1–8 minutes old is used again.
		if next > 8*694 {
			i := next - 694 - (s*7919)%(7*694)
			name := keyName(i)
			if _, ok := last[name]; ok && !holding[name] && tripped[name].IsZero() {
				call(name, nil)
				last[name] = now
			}
		}
		// Tripped breakers half an hour old get a successful probe, which closes them.
		for name, at := range tripped {
			if now.Sub(at) >= 30*time.Minute {
				b := call(name, nil)
				require.Same(t, pinned[name], b, "%s: an open breaker was evicted", name)
				require.Equal(t, catalog.StateClosed, b.State())
				delete(tripped, name)
				delete(pinned, name)
				last[name] = now
			}
		}
		// Every hour a key created 24 minutes ago (its last use at most 16 minutes ago, more
		// than TTL + slack) comes back: its breaker was evicted; the new one is closed and counts from 0.
		if name := keyName(next - 17000); s%600 == 0 && next > 17000 && pinned[name] == nil && !holding[name] {
			require.Greater(t, now.Sub(last[name]), ttl+slack)
			require.Nil(t, findBreaker(reg.Breakers(), name), "%s idle for %s is still live", name, now.Sub(last[name]))
			b := call(name, errDown) // a failure on a fresh breaker does not trip it
			sn := b.Snapshot()
			assert.Equal(t, catalog.StateClosed, sn.State)
			assert.Equal(t, uint64(1), sn.Calls[catalog.CallFailed]+sn.Calls[catalog.CallSuccessful], "fresh counters")
			call(name, nil)
			last[name] = now
			recreations++
		}
		if s%50 != 0 { // the checks, every 5 simulated minutes
			continue
		}
		list := reg.Breakers()
		live := map[string]bool{}
		protected := 0
		for _, nb := range list {
			live[nb.Name] = true
			at, ok := last[nb.Name]
			if !ok {
				t.Fatalf("%s is live but was never used", nb.Name)
			}
			if holding[nb.Name] || nb.Value.State() != catalog.StateClosed {
				protected++
				continue
			}
			if now.Sub(at) > ttl+slack {
				t.Fatalf("%s idle for %s is still live", nb.Name, now.Sub(at))
			}
		}
		for name, b := range pinned {
			require.Same(t, b, findBreaker(list, name), "%s: a breaker not closed or holding a failure was evicted", name)
		}
		bound := protected
		for name, at := range last {
			idle := now.Sub(at)
			if idle <= ttl && !live[name] {
				t.Fatalf("%s evicted after %s idle, before the TTL", name, idle)
			}
			if idle <= ttl+slack {
				bound++
			} else if !live[name] {
				delete(last, name)
			}
		}
		require.LessOrEqual(t, len(list), bound)
		maxLive, maxBound = max(maxLive, len(list)), max(maxBound, bound)
		if s%(steps/4) == 0 { // four full pedantic scrapes
			series, names := gatherBreakers(t, pr)
			assert.Equal(t, len(list), len(names), "exposed breakers")
			for n := range names {
				assert.True(t, live[n], "%s exposed but not live", n)
			}
			assert.LessOrEqual(t, series, 30*len(list))
		}
	}
	require.Equal(t, keys, next)
	assert.Positive(t, recreations)
	evicted := reg.Evicted(catalog.CircuitBreaker)
	assert.Equal(t, uint64(keys+recreations-len(reg.Breakers())), evicted)
	t.Logf("%d keys over %s, TTL %s: at most %d live breakers (bound %d: keys active in the last TTL + %s, plus the protected ones); %d evicted",
		keys, day, ttl, maxLive, maxBound, slack, evicted)
}
