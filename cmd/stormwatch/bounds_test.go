package main

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/genconfig"
	"github.com/stormwatch-go/stormwatch/rules"
)

// Bounds of `generate` for any config under maxConfigSize: what it may allocate and write.
// Time is bounded through these (a generator that allocates and writes little finishes fast;
// `generate` on the largest accepted config is measured in the report, not asserted here).
const (
	maxGeneratePeak  = 256 << 20 // bytes of live heap at the peak
	maxGenerateWrite = 20 << 20  // bytes of all the files
	maxMessageLen    = 1024      // bytes of a config error's one line
)

// countingWriter counts what is written through it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// genStats measure one `generate` of every target.
type genStats struct {
	files   []outFile
	written int64  // bytes of all the files
	peak    uint64 // the largest live heap seen while generating, over the one before
}

// heapLive is the bytes of live and not yet swept heap objects (runtime/metrics: cheap, no
// stop-the-world).
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakSampler records the largest heapLive while it runs, sampling every millisecond.
func peakSampler() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if h := heapLive(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		if h := heapLive(); h > peak.Load() {
			peak.Store(h)
		}
		return peak.Load()
	}
}

// generateMeasured loads data as the config file c.yaml and generates every target as
// `generate` does, measuring the peak of the live heap over its level before (sampled; the
// garbage not yet collected counts, so it is an overestimate up to the GC's pacing) and the
// bytes written (through a counting writer). A config error is returned as `generate`
// reports it.
func generateMeasured(data []byte) (genStats, error) {
	runtime.GC()
	base := heapLive()
	stop := peakSampler()
	var st genStats
	c, err := parseConfig("c.yaml", data)
	if err == nil {
		for _, tg := range targets {
			fs, gerr := tg.gen(c)
			if gerr != nil {
				err = c.locate(gerr)
				break
			}
			st.files = append(st.files, fs...)
		}
	}
	if peak := stop(); peak > base {
		st.peak = peak - base
	}
	var w countingWriter
	for _, f := range st.files {
		_, _ = w.Write(f.Data)
	}
	st.written = w.n
	return st, err
}

// checkBounded asserts generate's contract on data: within the allocation and output bounds,
// and either a config error on one clear line (exit 2) or every file generated. It returns
// the stats and whether the config was accepted.
func checkBounded(t *testing.T, data []byte) (genStats, bool) {
	t.Helper()
	st, err := generateMeasured(data)
	if st.peak > maxGeneratePeak {
		t.Errorf("%s: generate's heap peaked at %d MB (at most %d)", clipInput(data), st.peak>>20, maxGeneratePeak>>20)
	}
	if st.written > maxGenerateWrite {
		t.Errorf("%s: generate wrote %d MB (at most %d)", clipInput(data), st.written>>20, maxGenerateWrite>>20)
	}
	if err == nil {
		return st, true
	}
	var ce *catalog.ConfigError
	if !errors.As(err, &ce) || exitCode(err) != exitUsage {
		t.Fatalf("%s: not a config error (exit %d): %v", clipInput(data), exitCode(err), err)
	}
	msg := describe(err)
	if strings.ContainsAny(msg, "\n\r") || len(msg) > maxMessageLen || ce.Reason == "" {
		t.Fatalf("%s: the error is not one clear line of at most %d bytes: %q", clipInput(data), maxMessageLen, clip(msg))
	}
	if ce.Name != "c.yaml" && !strings.HasPrefix(ce.Name, "c.yaml:") {
		t.Fatalf("%s: error without the file's position: %v", clipInput(data), err)
	}
	return st, false
}

func clipInput(data []byte) string { return fmt.Sprintf("config %q", clip(string(data))) }

// hostileConfig is one entry of the hostile table: a config and whether it must be accepted.
type hostileConfig struct {
	name   string
	data   string
	accept bool
	// inError, for a refused config, is in its message.
	inError string
}

func repeat(s string, n int) string { return strings.Repeat(s, n) }

// labelName is a valid label name of n bytes, distinct by i.
func labelName(i, n int) string {
	s := fmt.Sprintf("l%d_", i)
	return s + repeat("x", n-len(s))
}

// sloList renders n SLOs; each is the body of a flow mapping given i.
func sloList(n int, item func(i int) string) string {
	var b strings.Builder
	b.WriteString("slos:\n")
	for i := range n {
		b.WriteString("  - {" + item(i) + "}\n")
	}
	return b.String()
}

// hostileConfigs are the inputs of issue 27 and the largest of each accepted field, under
// 1 MiB each.
func hostileConfigs() []hostileConfig {
	maxLabel := rules.MaxLabelNameLen
	var gbMax, gbHuge, matchers []string
	for i := range rules.MaxGroupBy {
		gbMax = append(gbMax, labelName(i, maxLabel))
		gbHuge = append(gbHuge, labelName(i, 60_000))
	}
	for i := 0; len(matchers) < genconfig.MaxAggregationLabels-rules.MaxGroupBy-1; i++ {
		matchers = append(matchers, labelName(100+i, maxLabel)+`!="x"`)
	}
	labels := func(n, valueLen int) string {
		var ls []string
		for i := range n {
			ls = append(ls, labelName(i, maxLabel)+": "+repeat("v", valueLen))
		}
		return "{" + strings.Join(ls, ", ") + "}"
	}
	return []hostileConfig{
		{name: "group_by of 16 labels of 60 KB (issue 27: 106 s, 6.1 GB)", data: "group_by: [" + strings.Join(gbHuge, ", ") + "]\n", inError: "at most 64 allowed"},
		{name: "group_by of 16 labels of the longest name, and a selector of as many longest labels as the aggregations may keep",
			data: "group_by: [" + strings.Join(gbMax, ", ") + "]\nselector: '" + strings.Join(matchers, ",") + "'\n", accept: true},
		{name: "a selector label name of 4000 bytes", data: "selector: '" + labelName(0, 4000) + `="x"'` + "\n", inError: "at most 64 allowed"},
		{name: "SLO names of 10 KB (issue 27: 100 of them, 77 MB of output)", data: sloList(rules.MaxSLOs, func(i int) string {
			return fmt.Sprintf("name: %s, objective: 0.999", labelName(i, 10_000))
		}), inError: "at most 256 allowed"},
		{name: "an SLO name_regex of 100 KB", data: sloList(1, func(int) string { return "id: r, name_regex: '" + repeat("a|", 50_000) + "b', objective: 0.99" }), inError: "at most 1024 allowed"},
		{name: "an SLO label name of 1 KB", data: sloList(1, func(int) string { return "name: p, objective: 0.99, labels: {" + labelName(0, 1024) + ": v}" }), inError: "at most 64 allowed"},
		{name: "an unknown key of 900 KB (the YAML parser's 1024-byte limit on keys)", data: repeat("k", 900_000) + ": 1\n", inError: "YAML"},
		{name: "an unknown key of 1000 bytes", data: repeat("k", 1000) + ": 1\n", inError: "unknown key"},
		{name: "an unknown key with a newline", data: "\"a\\nb\": 1\n", inError: "unknown key"},
		{name: "an alert name of 1000 bytes", data: "alerts:\n  " + repeat("A", 1000) + ": {enabled: false}\n", inError: "unknown alert"},
		{name: "a title prefix of 900 KB", data: "dashboards: {title_prefix: " + repeat("é", 450_000) + "}\n", inError: "at most 100 allowed"},
		{name: "a uid prefix of 900 KB", data: "dashboards: {uid_prefix: " + repeat("u", 900_000) + "}\n", inError: "at most 29 allowed"},
		{name: "a runbook base URL of 900 KB", data: "runbook_base_url: https://x/" + repeat("a", 900_000) + "\n", inError: "at most 2048 allowed"},
		{name: "a namespace of 900 KB", data: "namespace: " + repeat("n", 900_000) + "\n", inError: "at most 64 allowed"},
		{name: "a severity of 900 KB", data: "alerts: {RetryRateHigh: {severity: " + repeat("s", 900_000) + "}}\n", inError: "not one of"},
		{name: "nesting 100k deep", data: "a: " + repeat("[", 100_000) + "\n", inError: ""},
		{name: "the longest of every string field", accept: true, data: "namespace: " + repeat("n", 64) + "\n" +
			"runbook_base_url: https://wiki.example.com/" + repeat("r", 2000) + "\n" +
			"grafana_base_url: https://grafana.example.com/" + repeat("g", 2000) + "\n" +
			"dashboards: {title_prefix: '" + repeat("é", 100) + "', uid_prefix: " + repeat("u", 29) + "}\n" +
			sloList(rules.MaxSLOs, func(i int) string {
				return fmt.Sprintf("id: %s, name: %s, objective: 0.999, labels: %s", labelName(i, rules.MaxSLOIDLength), labelName(i, rules.MaxSLONameLength), labels(rules.MaxSLOLabels, rules.MaxSLOLabelValueLength))
			})},
		// Periods from 6d to 30d: tested at 1m, the 6d period's interval (with 90d, the
		// tests would need more than a minute of promtool: refused below).
		{name: "the most SLOs on one dependency", accept: true, data: sloList(rules.MaxSLOs, func(i int) string {
			return fmt.Sprintf("id: s%d, name: p, objective: %v, period: %dd", i, []float64{0.999, 0.99, 0.9999, 0.95}[i%4], 6+i*24/max(1, rules.MaxSLOs-1))
		})},
		{name: "4 SLOs of 6d and 90d together (their tests at 1m would exceed a minute of promtool)", data: sloList(4, func(i int) string {
			return fmt.Sprintf("name: dep%d, objective: 0.99999, period: %s", i, []string{"6d", "90d", "90d", "90d"}[i])
		}), inError: "put SLOs of short and long periods into separate configs"},
	}
}

// TestHostileConfigsStayBounded: issue 27's inputs and the largest accepted values of every
// field either stop at a config error naming the field on one line, or generate within the
// allocation and output bounds.
func TestHostileConfigsStayBounded(t *testing.T) {
	for _, hc := range hostileConfigs() {
		t.Run(hc.name, func(t *testing.T) {
			if len(hc.data) >= maxConfigSize {
				t.Fatalf("the config is %d bytes, not under 1 MiB", len(hc.data))
			}
			st, accepted := checkBounded(t, []byte(hc.data))
			t.Logf("%d KB config: accepted %v, %d files, %d KB written, heap peak %d MB", len(hc.data)>>10, accepted, len(st.files), st.written>>10, st.peak>>20)
			if accepted != hc.accept {
				_, err := generateMeasured([]byte(hc.data))
				t.Fatalf("accepted %v, want %v (%v)", accepted, hc.accept, err)
			}
			if !accepted && hc.inError != "" {
				_, err := generateMeasured([]byte(hc.data))
				if !strings.Contains(describe(err), hc.inError) {
					t.Fatalf("error %q does not say %q", describe(err), hc.inError)
				}
			}
		})
	}
}
