package backtest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormwatch-go/stormwatch/rules"
)

// Incident is a marked stretch of time the alerts should have paged for.
type Incident struct {
	Name       string
	Start, End time.Time
}

// Setting is a threshold and a for of one alert.
type Setting struct {
	Threshold float64       `json:"threshold"`
	For       time.Duration `json:"for_ns"`
}

// Score is how a setting did over the range.
type Score struct {
	// Caught counts the incidents inside which the alert began firing.
	Caught int `json:"caught"`
	// FalsePages counts the times it began firing outside every incident.
	FalsePages int `json:"false_pages"`
	// Delay is the mean time from an incident's start to the alert's first firing in it.
	Delay time.Duration `json:"delay_ns"`
}

// compare orders scores: more incidents caught first, then fewer false pages; 0 when they
// are as good.
func (a Score) compare(b Score) int {
	if a.Caught != b.Caught {
		return b.Caught - a.Caught
	}
	return a.FalsePages - b.FalsePages
}

// Suggestion is the tuning proposed for one alert.
type Suggestion struct {
	Alert        string  `json:"alert"`
	Current      Setting `json:"current"`
	CurrentScore Score   `json:"current_score"`
	Best         Setting `json:"best"`
	BestScore    Score   `json:"best_score"`
	Incidents    int     `json:"incidents"`
	// Changed is whether Best differs from Current.
	Changed bool `json:"changed"`
}

// Suggest searches, for every enabled default alert of cfg, a grid of thresholds around its
// current one and of fors, replays each over opts' range and picks the setting that fires
// inside the most incidents, then pages least outside them; among equals, the one nearest to
// the current setting (in grid steps), then the one that fires earliest. Each threshold costs one range query per chunk; the
// fors are replayed from its answer.
func Suggest(ctx context.Context, cfg rules.Config, opts Options, incidents []Incident) ([]Suggestion, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	groups, err := rules.Groups(cfg)
	if err != nil {
		return nil, err
	}
	p, err := newPlan(ctx, groups, opts)
	if err != nil {
		return nil, err
	}
	var out []Suggestion
	for _, info := range rules.Alerts() {
		r, ok := findAlert(groups, info.Name)
		if !ok {
			continue // disabled
		}
		s, err := p.suggest(ctx, cfg, info, r, incidents)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", info.Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func findAlert(groups []rules.Group, name string) (rules.Rule, bool) {
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return r, true
			}
		}
	}
	return rules.Rule{}, false
}

// ThresholdGrid returns the thresholds tried for an alert whose threshold is cur: multiples of
// cur (small values when cur is 0), those the configuration accepts for it.
func ThresholdGrid(cfg rules.Config, alert string, cur float64) []float64 {
	factors := []float64{0.25, 0.5, 0.75, 1, 1.5, 2, 4}
	var cands []float64
	if cur == 0 {
		cands = []float64{0, 0.01, 0.1, 0.5, 1, 5}
	} else {
		for _, f := range factors {
			cands = append(cands, cur*f)
		}
	}
	var out []float64
	for _, v := range cands {
		v = roundThreshold(v)
		if slices.Contains(out, v) {
			continue
		}
		if _, err := withSetting(cfg, alert, Setting{Threshold: v, For: -1}); err == nil {
			out = append(out, v)
		} else if w := math.Round(v); w != v {
			if _, err := withSetting(cfg, alert, Setting{Threshold: w, For: -1}); err == nil && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	if !slices.Contains(out, cur) {
		out = append(out, cur)
	}
	slices.Sort(out)
	return out
}

func roundThreshold(v float64) float64 {
	if v == 0 {
		return 0
	}
	mag := math.Pow(10, math.Floor(math.Log10(math.Abs(v)))-2)
	return math.Round(v/mag) * mag
}

// minFor is the shortest for proposed for an alert, where a shorter one changes its meaning:
// RetryBudgetExhausted asks for denials in every minute of its for, so a for under a minute
// would page on one minute's denials (and its generated restart tests assume at least that).
var minFor = map[string]time.Duration{rules.AlertRetryBudgetExhausted: time.Minute}

// forGrid is ForGrid without the fors under the alert's minFor (but for its current one).
func forGrid(alert string, cur, interval time.Duration) []time.Duration {
	return slices.DeleteFunc(ForGrid(cur, interval), func(d time.Duration) bool { return d < minFor[alert] && d != cur })
}

// ForGrid returns the fors tried: a fixed ladder from 0 to 30m plus the current one, at least
// one evaluation interval apart.
func ForGrid(cur, interval time.Duration) []time.Duration {
	ladder := []time.Duration{0, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
		5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, cur / 2, cur, cur * 2}
	var out []time.Duration
	for _, d := range ladder {
		d = d.Truncate(interval)
		if d >= 0 && d <= 24*time.Hour && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// withSetting returns cfg with the alert's threshold and, unless s.For is negative, its for
// set, validated.
func withSetting(cfg rules.Config, alert string, s Setting) (rules.Config, error) {
	alerts := make(map[string]rules.AlertConfig, len(cfg.Alerts)+1)
	for k, v := range cfg.Alerts {
		alerts[k] = v
	}
	ac := alerts[alert]
	th := s.Threshold
	ac.Threshold = &th
	if s.For >= 0 {
		f := s.For
		ac.For = &f
	}
	alerts[alert] = ac
	cfg.Alerts = alerts
	return cfg, cfg.Validate()
}

// Apply returns cfg with the changed suggestions' settings.
func Apply(cfg rules.Config, sugg []Suggestion) (rules.Config, error) {
	var err error
	for _, s := range sugg {
		if s.Changed {
			if cfg, err = withSetting(cfg, s.Alert, s.Best); err != nil {
				return cfg, err
			}
		}
	}
	return cfg, nil
}

// activity is when an expression returned each label set: runs of step indexes [from, to).
type activity map[string][][2]int

func (p *plan) suggest(ctx context.Context, cfg rules.Config, info rules.AlertInfo, r rules.Rule, incidents []Incident) (Suggestion, error) {
	cur := Setting{Threshold: info.Threshold, For: r.For}
	if ac, ok := cfg.Alerts[info.Name]; ok && ac.Threshold != nil {
		cur.Threshold = *ac.Threshold
	}
	ths := ThresholdGrid(cfg, info.Name, cur.Threshold)
	fors := forGrid(info.Name, r.For, p.opts.Interval)
	begin := p.begin(fors[len(fors)-1] + r.KeepFiringFor)
	n := int(p.opts.End.Sub(begin)/p.opts.Interval) + 1
	s := Suggestion{Alert: info.Name, Current: cur, Best: cur, Incidents: len(incidents)}
	bestDist := math.MaxInt
	first := true
	for ti, th := range ths {
		c, err := withSetting(cfg, info.Name, Setting{Threshold: th, For: -1})
		if err != nil {
			return s, err
		}
		act, err := p.activity(ctx, c, info.Name, begin)
		if err != nil {
			return s, err
		}
		for fi, f := range fors {
			eps := replay(act, n, begin, p.opts.Interval, f, r.KeepFiringFor)
			sc := scoreEpisodes(eps, incidents, p.opts.Start, p.opts.End)
			set := Setting{Threshold: th, For: f}
			if set == cur {
				s.CurrentScore = sc
			}
			dist := abs(ti-slices.Index(ths, cur.Threshold)) + abs(fi-slices.Index(fors, cur.For))
			c := sc.compare(s.BestScore)
			if first || c < 0 || (c == 0 && (dist < bestDist || (dist == bestDist && sc.Delay < s.BestScore.Delay))) {
				s.Best, s.BestScore, bestDist, first = set, sc, dist, false
			}
		}
	}
	s.Changed = s.Best != s.Current
	return s, nil
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// activity evaluates the alert's expression under cfg from begin and returns when each label
// set was returned.
func (p *plan) activity(ctx context.Context, cfg rules.Config, alert string, begin time.Time) (activity, error) {
	groups, err := rules.Groups(cfg)
	if err != nil {
		return nil, err
	}
	r, _ := findAlert(groups, alert)
	expr, _, err := p.expr(r.Expr)
	if err != nil {
		return nil, err
	}
	act := activity{}
	i := 0
	err = p.scan(ctx, alert, expr, begin, func(_ time.Time, present map[string]bool) {
		for k := range present {
			rs := act[k]
			if n := len(rs); n > 0 && rs[n-1][1] == i {
				rs[n-1][1]++
			} else {
				act[k] = append(rs, [2]int{i, i + 1})
			}
		}
		i++
	}, func(m model.Metric) string { return Key(m, alert, nil) })
	return act, err
}

// replay runs the state machine over n steps of act and returns the episodes that fired.
func replay(act activity, n int, begin time.Time, step, forDur, keep time.Duration) []Episode {
	m := NewMachine(forDur, keep)
	var out []Episode
	done := func(_ string, e Episode) {
		if !e.Fired.IsZero() {
			out = append(out, e)
		}
	}
	cursor := make(map[string]int, len(act))
	for i := range n {
		present := map[string]bool{}
		for k, rs := range act {
			c := cursor[k]
			for c < len(rs) && rs[c][1] <= i {
				c++
			}
			cursor[k] = c
			if c < len(rs) && rs[c][0] <= i {
				present[k] = true
			}
		}
		m.Step(begin.Add(time.Duration(i)*step), present, done)
	}
	m.Close(done)
	return out
}

// scoreEpisodes scores the fired episodes against the incidents: an episode that began firing
// inside an incident catches it, one that began firing in [start, end] outside every incident
// is a false page.
func scoreEpisodes(eps []Episode, incidents []Incident, start, end time.Time) Score {
	var sc Score
	firstFire := make([]time.Time, len(incidents))
	for _, e := range eps {
		if e.Fired.Before(start) || e.Fired.After(end) {
			continue
		}
		inside := false
		for i, in := range incidents {
			if !e.Fired.Before(in.Start) && !e.Fired.After(in.End) {
				inside = true
				if firstFire[i].IsZero() || e.Fired.Before(firstFire[i]) {
					firstFire[i] = e.Fired
				}
			}
		}
		if !inside {
			sc.FalsePages++
		}
	}
	var total time.Duration
	for i, f := range firstFire {
		if !f.IsZero() {
			sc.Caught++
			total += f.Sub(incidents[i].Start)
		}
	}
	if sc.Caught > 0 {
		sc.Delay = total / time.Duration(sc.Caught)
	}
	return sc
}
