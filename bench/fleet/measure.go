package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/internal/promrun"
)

var client = &http.Client{Timeout: 30 * time.Second}

// result is what one run measured.
type result struct {
	n, m                  int
	headSeries            float64 // prometheus_tsdb_head_series: every series in the head
	stormwatchSeries      float64 // the exporters' series (resilience_*)
	recordedSeries        float64 // the recording rules' series
	rssBytes              float64
	cpuPerCycle           time.Duration // Prometheus's CPU time per interval while measuring
	cpuPerRound           time.Duration // its CPU time while measuring ÷ the mean evaluations per group
	evaluationsPerGroup   float64       // evaluations per group while measuring (mean)
	window                time.Duration // how long the measurement lasted
	missed                float64       // prometheus_rule_group_iterations_missed_total, summed
	groups                []timing
	ruleTimes             []timing
	samples               []ruleSamples // samples each rule reads per evaluation
	totalSamples          float64
	totalSeriesReads      float64
	ruleFile              string
	interval              time.Duration
	round                 int
	cycles                int
	exerciseTime, elapsed time.Duration
}

// timing is a group's or a rule's mean evaluation time over the measured cycles.
type timing struct {
	group, name string
	mean, max   time.Duration
	samples     int
}

func measure(ctx context.Context, o options, n int, prom, ruleFile, dir string) (*result, error) {
	began := time.Now()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var exps []*exporter
	defer func() {
		for _, e := range exps {
			e.close()
		}
	}()
	var jobs []promrun.Job
	for i := range o.exporters {
		e, err := newExporter(ctx, n)
		if err != nil {
			return nil, err
		}
		exps = append(exps, e)
		jobs = append(jobs, promrun.Job{Name: fmt.Sprintf("fleet-%d", i+1), Target: e.addr})
	}
	exercised := time.Since(began)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait
	for _, e := range exps {
		wg.Add(1)
		go e.traffic(ctx, time.Second, &wg)
	}
	srv, err := promrun.Start(promrun.Options{Bin: prom, Dir: dir, Listen: "127.0.0.1:0",
		Config: promrun.Config{RuleFiles: nonEmpty(ruleFile), Jobs: jobs, Interval: o.interval}})
	if err != nil {
		return nil, err
	}
	defer srv.Stop(30 * time.Second)
	readyCtx, readyCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer readyCancel()
	if err := srv.Ready(readyCtx, client); err != nil {
		return nil, fmt.Errorf("prometheus not ready: %w (log: %s)", err, srv.LogFile)
	}
	if err := warmUp(ctx, srv.URL, o.warmup, n); err != nil {
		return nil, err
	}
	r := &result{n: n, m: o.exporters, exerciseTime: exercised, interval: o.interval}
	before, err := selfMetrics(srv.URL)
	if err != nil {
		return nil, err
	}
	from := time.Now()
	profiled := make(chan error, 1)
	if o.cpuProfile != "" {
		go func() {
			profiled <- cpuProfile(srv.URL, fmt.Sprintf("%s-%d-%s.pprof", o.cpuProfile, n, filepath.Base(dir)))
		}()
	} else {
		profiled <- nil
	}
	if err := r.evaluations(ctx, srv.URL, o, ruleFile != ""); err != nil {
		return nil, err
	}
	after, err := selfMetrics(srv.URL)
	if err != nil {
		return nil, err
	}
	r.rssBytes, r.missed = after.rss, after.missed
	r.window = time.Since(from)
	r.cpuPerCycle = seconds((after.cpu - before.cpu) * float64(o.interval) / float64(r.window))
	if r.evaluationsPerGroup > 0 {
		r.cpuPerRound = seconds((after.cpu - before.cpu) / r.evaluationsPerGroup)
	}
	if err := <-profiled; err != nil {
		return nil, err
	}
	if err := r.series(srv.URL); err != nil {
		return nil, err
	}
	if ruleFile != "" {
		if err := r.querySamples(srv.URL); err != nil {
			return nil, err
		}
	}
	r.elapsed = time.Since(began)
	return r, nil
}

// warmUp waits d, reporting progress every 30s on stderr.
func warmUp(ctx context.Context, base string, d time.Duration, n int) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		var head string
		if v, err := tsdbHeadSeries(base); err == nil {
			head = fmt.Sprintf("%.0f head series", v)
		}
		fmt.Fprintf(os.Stderr, "fleet N=%d: warming up, %s left; %s\n", n, left.Round(time.Second), head)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, 30*time.Second)):
		}
	}
}

type rulesResponse struct {
	Data struct {
		Groups []struct {
			Name           string    `json:"name"`
			EvaluationTime float64   `json:"evaluationTime"`
			LastEvaluation time.Time `json:"lastEvaluation"`
			Rules          []struct {
				Name           string  `json:"name"`
				Health         string  `json:"health"`
				LastError      string  `json:"lastError"`
				EvaluationTime float64 `json:"evaluationTime"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"data"`
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// evaluations polls /api/v1/rules until every group has been evaluated o.cycles more times,
// recording each new evaluation's group and rule times. Without rules, it waits as long.
func (r *result) evaluations(ctx context.Context, base string, o options, haveRules bool) error {
	r.cycles = o.cycles
	if !haveRules {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(o.cycles) * o.interval):
			return nil
		}
	}
	seen := map[string]time.Time{}
	group := map[string][]time.Duration{}
	rule := map[[2]string][]time.Duration{}
	deadline := time.Now().Add(time.Duration(o.cycles+2) * o.interval * 3)
	for {
		var rr rulesResponse
		if err := getJSON(base+"/api/v1/rules", &rr); err != nil {
			return err
		}
		done := len(rr.Data.Groups) > 0
		for _, g := range rr.Data.Groups {
			if last, ok := seen[g.Name]; ok && g.LastEvaluation.After(last) {
				group[g.Name] = append(group[g.Name], seconds(g.EvaluationTime))
				for _, rl := range g.Rules {
					if rl.Health == "err" {
						return fmt.Errorf("rule %s of group %s fails: %s", rl.Name, g.Name, rl.LastError)
					}
					k := [2]string{g.Name, rl.Name}
					rule[k] = append(rule[k], seconds(rl.EvaluationTime))
				}
			}
			seen[g.Name] = g.LastEvaluation
			done = done && len(group[g.Name]) >= o.cycles
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("the rule groups were not evaluated often enough: see -cycles and -interval")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.interval / 5):
		}
	}
	r.cycles = o.cycles
	for name, ds := range group {
		r.groups = append(r.groups, summarize("", name, ds))
		r.evaluationsPerGroup += float64(len(ds)) / float64(len(group))
	}
	for k, ds := range rule {
		r.ruleTimes = append(r.ruleTimes, summarize(k[0], k[1], ds))
	}
	byMean := func(ts []timing) {
		sort.Slice(ts, func(i, j int) bool { return ts[i].mean > ts[j].mean })
	}
	byMean(r.groups)
	byMean(r.ruleTimes)
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func summarize(group, name string, ds []time.Duration) timing {
	t := timing{group: group, name: name, samples: len(ds)}
	var sum time.Duration
	for _, d := range ds {
		sum += d
		t.max = max(t.max, d)
	}
	t.mean = sum / time.Duration(len(ds))
	return t
}

// series reads the head's series count and the exporters' and recording rules' series.
func (r *result) series(base string) error {
	var err error
	if r.headSeries, err = tsdbHeadSeries(base); err != nil {
		return err
	}
	if r.stormwatchSeries, err = query(base, `count({__name__=~"resilience_.+"})`); err != nil {
		return err
	}
	r.recordedSeries, err = query(base, `count({__name__=~".+:.+"})`)
	return err
}

func tsdbHeadSeries(base string) (float64, error) {
	var st struct {
		Data struct {
			HeadStats struct {
				NumSeries float64 `json:"numSeries"`
			} `json:"headStats"`
		} `json:"data"`
	}
	err := getJSON(base+"/api/v1/status/tsdb", &st)
	return st.Data.HeadStats.NumSeries, err
}

// query returns the value of an instant query's one sample (0 when the result is empty).
func query(base, expr string) (float64, error) {
	var qr struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(base+"/api/v1/query?query="+url.QueryEscape(expr), &qr); err != nil {
		return 0, err
	}
	if len(qr.Data.Result) == 0 {
		return 0, nil
	}
	s, _ := qr.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// self is what Prometheus's own /metrics say about it.
type self struct {
	rss, cpu, missed float64
}

// selfMetrics reads Prometheus's own /metrics: its resident memory, the CPU time it used and
// the rule group iterations it missed.
func selfMetrics(base string) (self, error) {
	var s self
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), " ")
		metric, _, _ := strings.Cut(name, "{")
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		switch metric {
		case "process_resident_memory_bytes":
			s.rss = v
		case "process_cpu_seconds_total":
			s.cpu = v
		case "prometheus_rule_group_iterations_missed_total":
			s.missed += v
		}
	}
	return s, sc.Err()
}

func getJSON(u string, into any) error {
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// total is the sum of the groups' mean evaluation times: the rules' cost per cycle.
func (r *result) total() time.Duration {
	var total time.Duration
	for _, g := range r.groups {
		total += g.mean
	}
	return total
}

func (r *result) print(w io.Writer, top int) {
	depInst := float64(r.n * r.m)
	total := r.total()
	fmt.Fprintf(w, "\n## N = %d dependencies × %d exporter(s) = %.0f dependency-instances; rules %s, round %d\n\n",
		r.n, r.m, depInst, r.ruleFile, r.round)
	fmt.Fprintf(w, "(run took %s; exercising every path of every dependency %s)\n",
		r.elapsed.Round(time.Second), r.exerciseTime.Round(time.Millisecond))
	fmt.Fprintf(w, "head series %.0f (%.1f per dependency-instance): %.0f exported (%.1f per dependency-instance), %.0f recorded\n",
		r.headSeries, r.headSeries/depInst, r.stormwatchSeries, r.stormwatchSeries/depInst, r.recordedSeries)
	fmt.Fprintf(w, "rule evaluation per cycle: %s in total over %d groups (%.3f ms per dependency-instance), mean of %d cycles; iterations missed: %.0f\n",
		ms(total), len(r.groups), float64(total)/float64(time.Millisecond)/depInst, r.cycles, r.missed)
	fmt.Fprintf(w, "prometheus RSS: %.0f MB; prometheus CPU time (scraping, ingestion and rules) per %s of wall time: %s (%.0f%% of a core); per evaluation round: %s (%s of measurement, %.1f evaluations per group)\n\n",
		r.rssBytes/1e6, r.interval, ms(r.cpuPerCycle), 100*float64(r.cpuPerCycle)/float64(r.interval), ms(r.cpuPerRound), r.window.Round(time.Second), r.evaluationsPerGroup)
	fmt.Fprintf(w, "| group | mean | max |\n|---|---:|---:|\n")
	for _, g := range r.groups {
		fmt.Fprintf(w, "| %s | %s | %s |\n", g.name, ms(g.mean), ms(g.max))
	}
	fmt.Fprintf(w, "\n| rule | group | mean | max |\n|---|---|---:|---:|\n")
	for i, rl := range r.ruleTimes {
		if top > 0 && i >= top {
			break
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", rl.name, rl.group, ms(rl.mean), ms(rl.max))
	}
	if len(r.samples) > 0 {
		r.printSamples(w, top)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// summary prints one line per run: N, rules, round, evaluation time per cycle, the most
// expensive rule, head series per dependency-instance and RSS.
func summary(w io.Writer, rs []*result) {
	fmt.Fprintf(w, "\n## Summary\n\n| N × M | rules | round | evaluation per cycle | per dependency-instance | most expensive rule | Prometheus CPU per interval | CPU per evaluation round | head series per dep.-instance | RSS | samples per round | series read per round |\n|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		depInst := float64(r.n * r.m)
		top := "–"
		if len(r.ruleTimes) > 0 {
			top = fmt.Sprintf("`%s` %s", r.ruleTimes[0].name, ms(r.ruleTimes[0].mean))
		}
		fmt.Fprintf(w, "| %d × %d | %s | %d | %s | %.3f ms | %s | %s | %s | %.1f | %.0f MB | %.0f | %.0f |\n", r.n, r.m, r.ruleFile, r.round,
			ms(r.total()), float64(r.total())/float64(time.Millisecond)/depInst, top, ms(r.cpuPerCycle), ms(r.cpuPerRound), r.headSeries/depInst, r.rssBytes/1e6, r.totalSamples, r.totalSeriesReads)
	}
}

// cpuProfile saves Prometheus's CPU profile over the next 30 seconds to file.
func cpuProfile(base, file string) error {
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(base + "/debug/pprof/profile?seconds=30")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
