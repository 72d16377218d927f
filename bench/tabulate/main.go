// Command tabulate turns the raw output of an interleaved benchmark session (see
// bench/session.sh) into the Markdown tables of bench/README.md.
//
// Each input file holds the `go test -bench` output of one binary in one round and is named
// <round>-<label>.txt. For every benchmark it reports, per label, the median ns/op over the
// rounds and the largest B/op and allocs/op seen, and, for every label after the first, the
// median over rounds of (label ÷ first label) within the same round: the paired ratio, which
// cancels most of the load drift between rounds.
//
//	go run ./tabulate -dir raw -labels before,after -match 'Breaker' \
//	    -alias 'before:stormwatch/1000=stormwatch/default/1000'
//
// With -ref RE=REPL (repeatable) it adds a second table: for every benchmark whose name RE
// matches, its reference is the name with RE replaced by REPL (a peer, or the plain call), and
// for every label the median over rounds of (benchmark ÷ reference) within the same round and
// binary, with the difference of their allocs/op (largest seen):
//
//	go run ./tabulate -dir raw -match 'Breaker|HTTP' \
//	    -ref '/stormwatch_[a-z_]+/=/gobreaker/' -ref 'Overhead/httpx[a-z_]*=Overhead/plain'
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// metric is the time unit read into sample.ns (-metric).
var metric = "ns/op"

type sample struct {
	ns, bytes, allocs float64
}

// results[label][benchmark][round] = sample
type results map[string]map[string]map[string]sample

var lineRE = regexp.MustCompile(`^(Benchmark\S+)\s+\d+\s+([0-9.]+) ns/op(.*)$`)

func main() {
	dir := flag.String("dir", "raw", "directory of <round>-<label>.txt files")
	labels := flag.String("labels", "before,after", "labels in column order; ratios are to the first")
	match := flag.String("match", ".", "regular expression selecting benchmarks")
	alias := flag.String("alias", "", "comma-separated label:name=canonical renames")
	flag.StringVar(&metric, "metric", "ns/op", "the time metric tabulated (cpu-ns/op where the benchmark reports it)")
	var refs refFlag
	flag.Var(&refs, "ref", "RE=REPL: a benchmark's reference is its name with RE replaced by REPL (repeatable)")
	flag.Parse()
	if err := run(*dir, strings.Split(*labels, ","), *match, *alias, refs); err != nil {
		fmt.Fprintln(os.Stderr, "tabulate:", err)
		os.Exit(1)
	}
}

// ref maps a benchmark name to the name of its reference.
type ref struct {
	re   *regexp.Regexp
	repl string
}

type refFlag []ref

func (f *refFlag) String() string { return fmt.Sprint(len(*f), " references") }

func (f *refFlag) Set(v string) error {
	pat, repl, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want RE=REPL, got %q", v)
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return err
	}
	*f = append(*f, ref{re, repl})
	return nil
}

func run(dir string, labels []string, match, alias string, refs []ref) error {
	re, err := regexp.Compile(match)
	if err != nil {
		return fmt.Errorf("-match %q: %w", match, err)
	}
	renames := map[string]string{}
	for _, a := range strings.Split(alias, ",") {
		if a == "" {
			continue
		}
		from, to, ok := strings.Cut(a, "=")
		if !ok || !strings.Contains(from, ":") {
			return fmt.Errorf("-alias %q: want label:name=canonical", a)
		}
		renames[from] = to
	}
	res := results{}
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return err
	}
	for _, f := range files {
		round, label, ok := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".txt"), "-")
		if !ok {
			return fmt.Errorf("%s: want <round>-<label>.txt", f)
		}
		if err := parse(f, round, label, renames, res); err != nil {
			return err
		}
	}
	var names []string
	seen := map[string]bool{}
	for _, l := range labels {
		for n := range res[l] {
			if !seen[n] && re.MatchString(n) {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)

	head := "| benchmark |"
	sep := "|---|"
	for i, l := range labels {
		head += fmt.Sprintf(" %s ns/op | %s B/op | %s allocs/op |", l, l, l)
		sep += "---:|---:|---:|"
		if i > 0 {
			head += fmt.Sprintf(" %s ÷ %s (paired median) |", l, labels[0])
			sep += "---:|"
		}
	}
	fmt.Println(head)
	fmt.Println(sep)
	for _, n := range names {
		row := "| " + strings.TrimPrefix(n, "Benchmark") + " |"
		for i, l := range labels {
			rounds := res[l][n]
			if len(rounds) == 0 {
				row += " — | — | — |"
				if i > 0 {
					row += " — |"
				}
				continue
			}
			var ns []float64
			var maxB, maxA float64
			for _, s := range rounds {
				ns = append(ns, s.ns)
				maxB = max(maxB, s.bytes)
				maxA = max(maxA, s.allocs)
			}
			row += fmt.Sprintf(" %s | %.0f | %.0f |", num(median(ns)), maxB, maxA)
			if i > 0 {
				var ratios []float64
				for round, s := range rounds {
					if base, ok := res[labels[0]][n][round]; ok && base.ns > 0 {
						ratios = append(ratios, s.ns/base.ns)
					}
				}
				if len(ratios) == 0 {
					row += " — |"
				} else {
					row += fmt.Sprintf(" %.2f |", median(ratios))
				}
			}
		}
		fmt.Println(row)
	}
	if len(refs) > 0 {
		refTable(res, labels, names, refs)
	}
	return nil
}

// refTable prints, for each benchmark with a reference, the paired median of benchmark ÷
// reference per label, and the difference of their largest allocs/op.
func refTable(res results, labels, names []string, refs []ref) {
	head, sep := "\n| benchmark | reference |", "|---|---|"
	for _, l := range labels {
		head += fmt.Sprintf(" %s ÷ reference (paired median) | %s allocs/op − reference |", l, l)
		sep += "---:|---:|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	for _, n := range names {
		refName := ""
		for _, r := range refs {
			if r.re.MatchString(n) {
				refName = r.re.ReplaceAllString(n, r.repl)
				break
			}
		}
		if refName == "" || refName == n {
			continue
		}
		row := fmt.Sprintf("| %s | %s |", strings.TrimPrefix(n, "Benchmark"), strings.TrimPrefix(refName, "Benchmark"))
		for _, l := range labels {
			var ratios []float64
			var a, ra float64
			for round, s := range res[l][n] {
				rs, ok := res[l][refName][round]
				if !ok || rs.ns <= 0 {
					continue
				}
				ratios = append(ratios, s.ns/rs.ns)
				a, ra = max(a, s.allocs), max(ra, rs.allocs)
			}
			if len(ratios) == 0 {
				row += " — | — |"
				continue
			}
			row += fmt.Sprintf(" %.2f | %+.0f |", median(ratios), a-ra)
		}
		fmt.Println(row)
	}
}

func parse(file, round, label string, renames map[string]string, res results) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := m[1]
		if to, ok := renames[label+":"+strings.TrimPrefix(name, "Benchmark")]; ok {
			name = "Benchmark" + to
		}
		ns, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return fmt.Errorf("%s: %q: %w", file, sc.Text(), err)
		}
		s := sample{ns: ns}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			switch fields[i+1] {
			case metric:
				s.ns = v
			case "B/op":
				s.bytes = v
			case "allocs/op":
				s.allocs = v
			}
		}
		if res[label] == nil {
			res[label] = map[string]map[string]sample{}
		}
		if res[label][name] == nil {
			res[label][name] = map[string]sample{}
		}
		res[label][name][round] = s
	}
	return sc.Err()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// num prints ns/op with three significant figures, in ms from 1 ms up.
func num(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	case ns >= 100:
		return fmt.Sprintf("%.0f", ns)
	default:
		return fmt.Sprintf("%.1f", ns)
	}
}
