package backtest

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/rules"
)

// CheckData returns an error wrapping ErrNoData when the source holds no series of the
// stormwatch metrics cfg's rules read (its namespace and selector) between start and end.
func CheckData(ctx context.Context, src Source, cfg rules.Config, start, end time.Time) error {
	ns := cfg.Namespace
	switch ns {
	case "":
		ns = catalog.DefaultNamespace
	case rules.NoNamespace:
		ns = ""
	}
	var names []string
	for _, m := range catalog.All() {
		for _, n := range m.SeriesNames(ns) {
			names = append(names, regexp.QuoteMeta(n))
		}
	}
	match := `{__name__=~"` + strings.Join(names, "|") + `"`
	if cfg.Selector != "" {
		match += ", " + cfg.Selector
	}
	match += "}"
	ok, err := src.HasSeries(ctx, match, start, end)
	if err != nil {
		return err
	}
	if !ok {
		sel := ""
		if cfg.Selector != "" {
			sel = " matching {" + cfg.Selector + "}"
		}
		return fmt.Errorf("%w: no %s_* series%s between %s and %s (wrong namespace, selector or range, or the server keeps less history)",
			ErrNoData, ns, sel, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	}
	return nil
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func dur(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return rules.FormatDuration(d.Round(time.Second))
}

// WriteText renders rep (and the agreements, if any) for a terminal.
func WriteText(w io.Writer, rep *Report, agreements []Agreement) {
	days := rep.End.Sub(rep.Start).Hours() / 24
	fmt.Fprintf(w, "backtest %s to %s (%.2f days), evaluation interval %s\n\n", ts(rep.Start), ts(rep.End), days, dur(rep.Interval))
	fmt.Fprintf(w, "%-32s %-9s %6s %9s %10s\n", "ALERT", "SEVERITY", "PAGES", "PAGES/DAY", "FIRING")
	for _, a := range rep.Alerts {
		fmt.Fprintf(w, "%-32s %-9s %6d %9.2f %10s\n", a.Alert, a.Severity, a.Pages, a.PagesPerDay, dur(a.FiringTime))
	}
	for _, a := range rep.Alerts {
		if len(a.Series) == 0 && len(a.Notes) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (for %s, keep_firing_for %s)\n", a.Alert, dur(a.For), dur(a.KeepFiringFor))
		for _, n := range a.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for _, s := range a.Series {
			fmt.Fprintf(w, "  %s: %d pages, firing %s", s.Labels, s.Pages, dur(s.FiringTime))
			if s.PendingOnly > 0 {
				fmt.Fprintf(w, ", %d times pending without firing", s.PendingOnly)
			}
			fmt.Fprintln(w)
			for _, e := range s.Episodes {
				fmt.Fprintf(w, "    pending %s  firing %s  resolved %s  (%s)\n", ts(e.Pending), ts(e.Fired), ts(e.Resolved), dur(e.FiringFor(rep.End)))
			}
		}
	}
	if agreements != nil {
		writeAgreements(w, agreements)
	}
}

func writeAgreements(w io.Writer, ags []Agreement) {
	fmt.Fprintf(w, "\nagreement with the server's ALERTS (within one evaluation interval)\n")
	fmt.Fprintf(w, "%-32s %9s %9s %9s %13s %13s\n", "ALERT", "AGREEMENT", "REPLAYED", "RECORDED", "ONLY REPLAYED", "ONLY RECORDED")
	for _, a := range ags {
		fmt.Fprintf(w, "%-32s %8.1f%% %9d %9d %13d %13d\n", a.Alert, a.Percent, a.Replayed, a.Recorded, len(a.OnlyReplayed), len(a.OnlyRecorded))
	}
	for _, a := range ags {
		for _, iv := range a.OnlyReplayed {
			fmt.Fprintf(w, "  %s %s: fired only in the replay, %s to %s\n", a.Alert, iv.Labels, ts(iv.From), ts(iv.To))
		}
		for _, iv := range a.OnlyRecorded {
			fmt.Fprintf(w, "  %s %s: fired only on the server, %s to %s\n", a.Alert, iv.Labels, ts(iv.From), ts(iv.To))
		}
	}
}

// WriteSuggestions renders the suggestions and the config snippet of the changed ones.
func WriteSuggestions(w io.Writer, sugg []Suggestion) {
	fmt.Fprintf(w, "%-32s %-46s %s\n", "ALERT", "CURRENT", "PROPOSED")
	for _, s := range sugg {
		best := "(keep)"
		if s.Changed {
			best = setting(s.Best, s.BestScore, s.Incidents)
		}
		fmt.Fprintf(w, "%-32s %-46s %s\n", s.Alert, setting(s.Current, s.CurrentScore, s.Incidents), best)
	}
	snippet := Snippet(sugg)
	if snippet == "" {
		fmt.Fprintln(w, "\nno change proposed: the current settings do as well as any tried")
		return
	}
	fmt.Fprintf(w, "\nconfig snippet (merge into the alerts: section of your stormwatch.yaml):\n\n%s", snippet)
}

func setting(s Setting, sc Score, incidents int) string {
	return fmt.Sprintf("threshold %s for %s: caught %d/%d, %d false", formatNum(s.Threshold), rules.FormatDuration(s.For), sc.Caught, incidents, sc.FalsePages)
}

func formatNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Snippet is the stormwatch.yaml fragment setting the changed suggestions, "" when none.
func Snippet(sugg []Suggestion) string {
	var b strings.Builder
	for _, s := range sugg {
		if !s.Changed {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("alerts:\n")
		}
		fmt.Fprintf(&b, "  %s:\n    threshold: %s\n    for: %s\n", s.Alert, formatNum(s.Best.Threshold), rules.FormatDuration(s.Best.For))
	}
	return b.String()
}
