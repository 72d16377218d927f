package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// TestGeneratedMetricsPage fails when docs/metrics.md differs from what catalog and
// collector.Policy produce.
func TestGeneratedMetricsPage(t *testing.T) {
	got, err := metricsPage()
	require.NoError(t, err)
	checkGenerated(t, "metrics.md", got)
}

// history is one snapshot of each primitive kind whose series depend on its counts.
type history struct {
	b  breaker.Snapshot
	r  retry.Snapshot
	bh bulkhead.Snapshot
	to timeout.Snapshot
}

// slowCall is the slow-call duration of the breaker with slow-call detection on.
const slowCall = time.Second

// histories returns the snapshots of fresh primitives (default configurations; the breaker with
// or without slow-call detection) and the same snapshots after every counter has counted.
func histories(slow bool) (fresh, every history, err error) {
	bcfg := breaker.Config{}
	if slow {
		bcfg.SlowCallDuration = slowCall
	}
	b, err := breaker.New("docs", bcfg)
	if err != nil {
		return fresh, every, err
	}
	r, err := retry.New("docs", retry.Config{})
	if err != nil {
		return fresh, every, err
	}
	bh, err := bulkhead.New("docs", bulkhead.Config{})
	if err != nil {
		return fresh, every, err
	}
	to, err := timeout.New("docs", timeout.Config{})
	if err != nil {
		return fresh, every, err
	}
	fresh = history{b: b.Snapshot(), r: r.Snapshot(), bh: bh.Snapshot(), to: to.Snapshot()}

	every = fresh
	for _, from := range catalog.States {
		for _, to := range catalog.States {
			if catalog.CanTransition(from, to) {
				every.b.Transitions[from][to] = 1
			}
		}
	}
	for i := range every.b.Calls {
		every.b.Calls[i] = 1
	}
	for i := range every.r.Calls {
		every.r.Calls[i] = 1
	}
	for _, c := range catalog.Classes {
		every.r.Errors[c] = 1
	}
	for i := range every.r.Backoff {
		every.r.Backoff[i].Count = 1
	}
	for i := range every.bh.Calls {
		every.bh.Calls[i] = 1
	}
	for i := range every.to.Calls {
		every.to.Calls[i] = 1
	}
	return fresh, every, nil
}

// seriesFunc returns the label-value keys of one metric's series that policy p exports for the
// snapshots in h: the value of the metric's one label besides name, "from→to" for transitions,
// "" for a metric without such a label.
type seriesFunc func(p collector.Policy, h *history) []string

func all[T fmt.Stringer](vs []T) seriesFunc {
	return func(collector.Policy, *history) []string { return catalog.Names(vs) }
}

func always(collector.Policy, *history) []string { return []string{""} }

func when[T fmt.Stringer](vs []T, on func(p collector.Policy, h *history, v T) bool) seriesFunc {
	return func(p collector.Policy, h *history) []string {
		var out []string
		for _, v := range vs {
			if on(p, h, v) {
				out = append(out, v.String())
			}
		}
		return out
	}
}

func flag1(on func(p collector.Policy, h *history) bool) seriesFunc {
	return func(p collector.Policy, h *history) []string {
		if on(p, h) {
			return []string{""}
		}
		return nil
	}
}

func transitionKey(from, to catalog.State) string { return from.String() + "→" + to.String() }

// metricSeries says, for every catalog metric, which of its series a policy exports.
var metricSeries = map[string]seriesFunc{
	catalog.BreakerState.FullName(""): when(catalog.States[:], func(p collector.Policy, h *history, v catalog.State) bool {
		return p.Breaker(&h.b).States[v]
	}),
	catalog.BreakerTransitions.FullName(""): func(p collector.Policy, h *history) []string {
		ser := p.Breaker(&h.b)
		var out []string
		for _, from := range catalog.States {
			for _, to := range catalog.States {
				if ser.Transitions[from][to] {
					out = append(out, transitionKey(from, to))
				}
			}
		}
		return out
	},
	// One series per breaker: without cause while closed, with the episode's cause otherwise.
	catalog.BreakerTrippedSince.FullName(""): always,
	catalog.BreakerCalls.FullName(""): when(catalog.CallKinds[:], func(p collector.Policy, h *history, v catalog.CallKind) bool {
		return p.Breaker(&h.b).Calls[v]
	}),
	catalog.BreakerNotPermitted.FullName(""): always,
	catalog.BreakerCallDuration.FullName(""): when(catalog.DurationKinds[:], func(p collector.Policy, h *history, v catalog.CallKind) bool {
		return p.Breaker(&h.b).Durations[v]
	}),
	catalog.BreakerFailureRate.FullName(""): always,
	catalog.BreakerSlowCallRate.FullName(""): flag1(func(p collector.Policy, h *history) bool {
		return p.Breaker(&h.b).SlowCallRate
	}),
	catalog.BreakerFailureRateThreshold.FullName(""): flag1(func(p collector.Policy, h *history) bool {
		return p.Breaker(&h.b).FailureRateThreshold
	}),
	catalog.BreakerSlowCallRateThreshold.FullName(""): flag1(func(p collector.Policy, h *history) bool {
		return p.Breaker(&h.b).SlowCallRateThreshold
	}),
	catalog.BreakerOpenDuration.FullName(""): flag1(func(p collector.Policy, h *history) bool {
		return p.Breaker(&h.b).OpenDuration
	}),

	catalog.RetryCalls.FullName(""): when(catalog.RetryKinds[:], func(p collector.Policy, h *history, v catalog.RetryKind) bool {
		return p.Retry(&h.r).Calls[v]
	}),
	catalog.RetryAttempts.FullName(""): always,
	catalog.RetryErrors.FullName(""): when(catalog.Classes[:], func(p collector.Policy, h *history, v catalog.Class) bool {
		return p.Retry(&h.r).Errors[v]
	}),
	catalog.RetryBackoff.FullName(""): when(catalog.DelaySources[:], func(p collector.Policy, h *history, v catalog.DelaySource) bool {
		return p.Retry(&h.r).Backoff[v]
	}),
	catalog.RetryBudgetTokens.FullName(""): always,
	catalog.RetryBudgetDenied.FullName(""): always,

	catalog.BulkheadMaxConcurrent.FullName(""): always,
	catalog.BulkheadInflight.FullName(""):      always,
	catalog.BulkheadWaiting.FullName(""): flag1(func(p collector.Policy, h *history) bool {
		return p.Bulkhead(&h.bh).Waiting
	}),
	catalog.BulkheadCalls.FullName(""): when(catalog.Admissions[:], func(p collector.Policy, h *history, v catalog.Admission) bool {
		return p.Bulkhead(&h.bh).Calls[v]
	}),
	catalog.BulkheadWaitDuration.FullName(""): always,

	catalog.TimeoutCalls.FullName(""): when(catalog.TimeoutKinds[:], func(p collector.Policy, h *history, v catalog.TimeoutKind) bool {
		return p.Timeout(&h.to).Calls[v]
	}),

	catalog.FallbackCalls.FullName(""): all(catalog.Causes[:]),

	catalog.LimiterLimit.FullName(""):           always,
	catalog.LimiterMinLimit.FullName(""):        always,
	catalog.LimiterInflight.FullName(""):        always,
	catalog.LimiterQueued.FullName(""):          always,
	catalog.LimiterBaselineLatency.FullName(""): always,
	catalog.LimiterSampleLatency.FullName(""):   always,
	catalog.LimiterCalls.FullName(""):           all(catalog.Admissions[:]),
	catalog.LimiterRejections.FullName(""):      all(catalog.LimitReasons[:]),
	catalog.LimiterSamples.FullName(""):         all(catalog.SampleKinds[:]),
	catalog.ThrottleProbability.FullName(""):    always,
	catalog.ThrottleCalls.FullName(""):          all(catalog.ThrottleKinds[:]),
	catalog.HedgeCalls.FullName(""):             always,
	catalog.HedgeAttempts.FullName(""):          all(catalog.HedgeOutcomes[:]),
	catalog.HedgeDelay.FullName(""):             always,

	catalog.RegistryOverflow.FullName(""): func(collector.Policy, *history) []string {
		out := make([]string, len(catalog.Primitives))
		for i, p := range catalog.Primitives {
			out[i] = string(p)
		}
		return out
	},
	// 0 unless the registry evicts idle primitives (instrument.WithIdleTTL).
	catalog.RegistryEvicted.FullName(""): func(collector.Policy, *history) []string {
		out := make([]string, len(catalog.Primitives))
		for i, p := range catalog.Primitives {
			out[i] = string(p)
		}
		return out
	},
}

// presence says when a series exists.
type presence int

const (
	fromStart presence = iota
	onceCounted
	fullDetailOnly
	never
)

var presenceText = map[presence]string{
	fromStart:      "from the start",
	onceCounted:    "once counted (from the first occurrence on)",
	fullDetailOnly: "only with full detail",
	never:          "never",
}

// presences returns, for each series key of the metric, when it exists.
func presences(fn seriesFunc, fresh, every *history) (keys []string, at map[string]presence) {
	def, full := collector.Policy{}, collector.Policy{FullDetail: true}
	at = map[string]presence{}
	keys = fn(full, fresh)
	for _, k := range keys {
		at[k] = never
	}
	mark := func(ks []string, p presence) {
		for _, k := range ks {
			if cur, ok := at[k]; !ok || p < cur {
				at[k] = p
			}
		}
	}
	mark(fn(full, fresh), fullDetailOnly)
	mark(fn(def, every), onceCounted)
	mark(fn(def, fresh), fromStart)
	for _, k := range append(fn(def, every), fn(def, fresh)...) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, at
}

// metricsPage renders docs/metrics.md.
func metricsPage() ([]byte, error) {
	meanings, err := labelValueMeanings("../catalog/values.go")
	if err != nil {
		return nil, err
	}
	freshSlow, everySlow, err := histories(true)
	if err != nil {
		return nil, err
	}
	freshPlain, everyPlain, err := histories(false)
	if err != nil {
		return nil, err
	}
	for _, m := range catalog.All() {
		if metricSeries[m.FullName("")] == nil {
			return nil, fmt.Errorf("docs: no series rule for %s", m.FullName(""))
		}
	}

	var p page
	p.WriteString(generatedHeader)
	p.line("# Metric catalog")
	p.line("")
	p.line("Every metric stormwatch exports, generated from `catalog` (names, types, labels, label")
	p.line("values, buckets) and `collector.Policy` (which series exist). The collector, the rules, the")
	p.line("dashboards and the OpenTelemetry bridge read the same catalog, so this page cannot drift from them:")
	p.f("a test fails when it differs from what the code produces (`%s` rewrites it).\n", regenerate)
	p.line("")
	p.f("Names are `<namespace>_<primitive>_<name>`; the namespace is `%s` by default\n", catalog.DefaultNamespace)
	p.line("(`collector.WithNamespace`; `\"\"` for none). Every series but the registry's overflow counter")
	p.f("carries the label `%s`, the primitive's name (usually the dependency); past the registry's\n", catalog.LabelName)
	p.f("cardinality guard, new names share the instance named `%s`.\n", catalog.OverflowName)
	p.line("")
	p.line("| metric | type | unit | labels | help |")
	p.line("|---|---|---|---|---|")
	for _, m := range catalog.All() {
		var ls []string
		for _, l := range m.Labels {
			ls = append(ls, l.Name)
		}
		unit := string(m.Unit)
		if unit == "" {
			unit = "—"
		}
		p.f("| [%s](#%s) | %s | %s | %s | %s |\n", code(m.FullName(catalog.DefaultNamespace)),
			anchor(m.FullName(catalog.DefaultNamespace)), m.Type, unit, codes(ls), cell(m.Help))
	}
	p.line("")

	p.line("## Which series exist")
	p.line("")
	p.line("Series are a cost paid per process. The collector's default exposition (`collector.Policy{}`)")
	p.line("holds what the generated alerts and dashboards read, and rare label values only once they")
	p.line("occur; `collector.WithFullDetail()` (`collector.Policy{FullDetail: true}`) exports every label")
	p.line("value from the start. For each metric below, every label value is one of:")
	p.line("")
	p.f("- **%s**: exported as soon as the primitive exists, at 0;\n", presenceText[fromStart])
	p.f("- **%s**: exported by default once its counter is not 0 (or, for a state, once the breaker\n", presenceText[onceCounted])
	p.line("  has been in it);")
	p.f("- **%s**: never exported by default.\n", presenceText[fullDetailOnly])
	p.line("")
	p.f("The breaker rows assume slow-call detection is on (`breaker.Config.SlowCallDuration` > 0); where\n")
	p.line("it makes a difference, the row says what changes without it. The OpenTelemetry bridge")
	p.line("(`collector/otelx`) applies the same policy.")
	p.line("")

	p.line("## Histograms")
	p.line("")
	p.f("Latency distributions are recorded once and exported as Prometheus native histograms: schema %d\n", catalog.NativeSchema)
	p.f("(each bucket's bound 2^(1/4) ≈ 1.19 times the previous one), zero bucket up to 2^%d s, highest\n", catalog.NativeMinExponent)
	p.f("bucket ending at 2^%d s. Beside the native buckets, the default exposition carries a few classic\n", catalog.NativeMaxExponent)
	p.line("`_bucket` bounds (the default bounds below, a factor 4 apart) on the call duration and the")
	p.line("bulkhead wait, so that a Prometheus without native histogram ingestion (its default until")
	p.line("Prometheus 4) and VictoriaMetrics store a distribution they can take quantiles of; retry delays")
	p.line("have none (their dashboard reads the mean delay from `_sum` and `_count`). A Prometheus with")
	p.line("`scrape_native_histograms: true` stores the native histogram only, one series. The generated")
	p.line("dashboards read whichever form the server stored. `collector.WithClassicBuckets()` (implied by")
	p.line("full detail) exports every classic bound listed below instead. All bounds are powers of two,")
	p.line("native bucket boundaries, so both views agree exactly.")
	p.line("")

	sections := []struct {
		title string
		prim  catalog.Primitive
	}{
		{"Circuit breaker", catalog.CircuitBreaker},
		{"Retry", catalog.Retry},
		{"Bulkhead", catalog.Bulkhead},
		{"Timeout", catalog.Timeout},
		{"Fallback", catalog.Fallback},
		{"Registry", catalog.Registry},
	}
	for _, s := range sections {
		p.f("## %s\n\n", s.title)
		for _, m := range catalog.ByPrimitive(s.prim) {
			name := m.FullName(catalog.DefaultNamespace)
			p.f("### %s\n\n", code(name))
			unit := ""
			if m.Unit != catalog.UnitNone {
				unit = ", unit " + string(m.Unit)
			}
			p.f("%s%s. %s\n\n", m.Type, unit, m.Help)
			for _, l := range m.Labels {
				switch {
				case l.Name == catalog.LabelName:
					p.f("- label %s: the primitive's name\n", code(l.Name))
				default:
					p.f("- label %s: %s\n", code(l.Name), codes(l.Values))
				}
			}
			if m.Type == catalog.Histogram {
				bs := make([]string, len(m.Buckets))
				for i, b := range m.Buckets {
					bs[i] = strconv.FormatFloat(b, 'g', -1, 64)
				}
				p.f("- classic bucket bounds (seconds): %s\n", strings.Join(bs, ", "))
				def := catalog.DefaultBuckets(m)
				ds := make([]string, len(def))
				for i, b := range def {
					ds[i] = strconv.FormatFloat(b, 'g', -1, 64)
				}
				if len(ds) == 0 {
					ds = []string{"none"}
				}
				p.f("- default classic bucket bounds (seconds): %s\n", strings.Join(ds, ", "))
			}
			fn := metricSeries[m.FullName("")]
			keys, at := presences(fn, &freshSlow, &everySlow)
			_, atPlain := presences(fn, &freshPlain, &everyPlain)
			writePresence(&p, m, keys, at, atPlain)
			if m.FullName("") == catalog.BreakerTrippedSince.FullName("") {
				p.line("- one series per breaker: while the breaker is closed (or disabled, or metrics-only) its value")
				p.line("  is 0 and it has no `cause`; while not closed, its value is the Unix time of the trip that")
				p.line("  began the episode and `cause` is that trip's cause")
			}
			p.line("")
		}
	}

	p.line("## Label values")
	p.line("")
	p.line("What each value of the closed label sets means (from the documentation of `catalog`).")
	p.line("")
	for _, set := range labelSets {
		p.f("### %s\n\n", set.title)
		p.f("%s, type `catalog.%s`.\n\n", set.where, set.typ)
		p.line("| value | meaning |")
		p.line("|---|---|")
		for _, v := range set.values() {
			p.f("| %s | %s |\n", code(v), cell(meanings[set.typ][v]))
		}
		p.line("")
	}
	return p.Bytes(), nil
}

// writePresence writes when each label value's series exists.
func writePresence(p *page, m catalog.Metric, keys []string, at, atPlain map[string]presence) {
	if len(keys) == 1 && keys[0] == "" {
		line := "- exported " + presenceText[at[""]]
		if atPlain[""] != at[""] {
			line += "; without slow-call detection " + presenceText[atPlain[""]]
		}
		p.line(line)
		return
	}
	for _, pr := range []presence{fromStart, onceCounted, fullDetailOnly} {
		var vs []string
		for _, k := range keys {
			if at[k] == pr {
				vs = append(vs, k)
			}
		}
		if len(vs) == 0 {
			continue
		}
		p.f("- %s: %s\n", presenceText[pr], codes(vs))
	}
	var changed []string
	var to presence
	for _, k := range keys {
		if atPlain[k] != at[k] {
			changed = append(changed, k)
			to = atPlain[k]
		}
	}
	if len(changed) > 0 {
		p.f("- without slow-call detection, %s: %s\n", codes(changed), presenceText[to])
	}
}

// anchor is the GitHub heading anchor of a heading holding only inline code s.
func anchor(s string) string { return strings.ToLower(s) }

// labelSet is a closed set of label values documented on the page.
type labelSet struct {
	title, typ, where string
	values            func() []string
}

var labelSets = []labelSet{
	{"Breaker states", "State", "`state`, `from` and `to` of the circuit breaker metrics", func() []string { return catalog.Names(catalog.States[:]) }},
	{"Breaker call kinds", "CallKind", "`kind` of `resilience_circuitbreaker_calls_total` (and, successful and failed only, of the call duration histogram)", func() []string { return catalog.Names(catalog.CallKinds[:]) }},
	{"Trip causes", "TripCause", "`cause` of `resilience_circuitbreaker_tripped_since_timestamp_seconds`", func() []string { return catalog.Names(catalog.TripCauses[:]) }},
	{"Retry call kinds", "RetryKind", "`kind` of `resilience_retry_calls_total`", func() []string { return catalog.Names(catalog.RetryKinds[:]) }},
	{"Failure classes", "Class", "`class` of `resilience_retry_errors_total` and `error_class` of the retry log (see [classification](classification.md))", func() []string { return catalog.Names(catalog.Classes[:]) }},
	{"Delay sources", "DelaySource", "`source` of `resilience_retry_backoff_seconds` and `delay_source` of the retry log", func() []string { return catalog.Names(catalog.DelaySources[:]) }},
	{"Bulkhead admissions", "Admission", "`kind` of `resilience_bulkhead_calls_total`", func() []string { return catalog.Names(catalog.Admissions[:]) }},
	{"Timeout outcomes", "TimeoutKind", "`kind` of `resilience_timeout_calls_total`", func() []string { return catalog.Names(catalog.TimeoutKinds[:]) }},
	{"Fallback causes", "Cause", "`cause` of `resilience_fallback_calls_total`", func() []string { return catalog.Names(catalog.Causes[:]) }},
	{"Retry decisions", "Outcome", "`outcome` of the retry log (not a metric label)", func() []string { return catalog.Names(catalog.Outcomes[:]) }},
}

// labelValueMeanings parses the catalog's values.go and returns, by type name and label value,
// the comment of the constant that has that value. The constants of a type are declared in
// value order from 0 (iota), so the n-th constant of type T holds T(n).
func labelValueMeanings(file string) (map[string]map[string]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	byType := map[string][]string{} // type name → label values in order
	for _, s := range labelSets {
		byType[s.typ] = nil
	}
	byType["Class"] = catalog.Names(append([]catalog.Class{catalog.ClassNone}, catalog.Classes[:]...))
	for _, s := range labelSets {
		if s.typ != "Class" {
			byType[s.typ] = s.values()
		}
	}
	out := map[string]map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		typ, n := "", 0
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok {
				typ, n = id.Name, 0
			}
			values, known := byType[typ]
			if !known || strings.HasPrefix(vs.Names[0].Name, "Num") {
				continue
			}
			if n >= len(values) {
				return nil, fmt.Errorf("docs: %s has more constants than label values", typ)
			}
			text := ""
			if vs.Comment != nil {
				text = vs.Comment.Text()
			} else if vs.Doc != nil {
				text = vs.Doc.Text()
			}
			text = strings.TrimSpace(strings.Join(strings.Fields(text), " "))
			text = strings.TrimPrefix(text, vs.Names[0].Name+": ")
			text = strings.TrimPrefix(text, vs.Names[0].Name+" ")
			if text == "" {
				return nil, fmt.Errorf("docs: %s.%s has no comment", typ, vs.Names[0].Name)
			}
			if out[typ] == nil {
				out[typ] = map[string]string{}
			}
			out[typ][values[n]] = text
			n++
		}
	}
	for _, s := range labelSets {
		for _, v := range s.values() {
			if out[s.typ][v] == "" {
				return nil, fmt.Errorf("docs: no comment for %s value %q", s.typ, v)
			}
		}
	}
	return out, nil
}

// TestMetricsPageFreshSeriesMatchTheCollector checks the page's "from the start" claims against
// a real scrape: a registry with one fresh primitive of each kind exports exactly the series
// the page lists as existing from the start, and with full detail every series it lists.
func TestMetricsPageFreshSeriesMatchTheCollector(t *testing.T) {
	fresh, every, err := histories(true)
	require.NoError(t, err)
	for _, full := range []bool{false, true} {
		reg, err := instrument.NewRegistry()
		require.NoError(t, err)
		_, err = reg.Breaker("docs", breaker.Config{SlowCallDuration: slowCall})
		require.NoError(t, err)
		_, err = reg.Retry("docs", retry.Config{})
		require.NoError(t, err)
		_, err = reg.Bulkhead("docs", bulkhead.Config{})
		require.NoError(t, err)
		_, err = reg.Timeout("docs", timeout.Config{})
		require.NoError(t, err)
		_, err = reg.Fallback("docs", fallback.Config{})
		require.NoError(t, err)
		_, err = reg.Limiter("docs", limit.Config{})
		require.NoError(t, err)
		_, err = reg.Throttle("docs", throttle.Config{})
		_, err = reg.Hedge("docs", hedge.Config{})
		require.NoError(t, err)
		var opts []collector.Option
		if full {
			opts = append(opts, collector.WithFullDetail())
		}
		c, err := collector.New(reg, opts...)
		require.NoError(t, err)
		pr := prometheus.NewPedanticRegistry()
		require.NoError(t, pr.Register(c))
		mfs, err := pr.Gather()
		require.NoError(t, err)

		scraped := map[string][]string{}
		for _, mf := range mfs {
			m, ok := catalog.Lookup(catalog.DefaultNamespace, mf.GetName())
			require.True(t, ok, mf.GetName())
			for _, s := range mf.GetMetric() {
				lv := map[string]string{}
				for _, l := range s.GetLabel() {
					lv[l.GetName()] = l.GetValue()
				}
				key := ""
				switch {
				case m.FullName("") == catalog.BreakerTransitions.FullName(""):
					key = lv[catalog.LabelFrom] + "→" + lv[catalog.LabelTo]
				case m.FullName("") == catalog.BreakerTrippedSince.FullName(""):
					key = "" // closed: no cause
				default:
					for _, l := range m.Labels {
						if l.Name != catalog.LabelName {
							key = lv[l.Name]
						}
					}
				}
				scraped[m.FullName("")] = append(scraped[m.FullName("")], key)
			}
		}
		for _, m := range catalog.All() {
			keys, at := presences(metricSeries[m.FullName("")], &fresh, &every)
			var want []string
			for _, k := range keys {
				if at[k] == fromStart || (full && at[k] != never) {
					want = append(want, k)
				}
			}
			if m.FullName("") == catalog.BreakerTrippedSince.FullName("") {
				want = []string{""}
			}
			assert.ElementsMatch(t, want, scraped[m.FullName("")], "full detail %v: %s", full, m.FullName(""))
		}
	}
}
