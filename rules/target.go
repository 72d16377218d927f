package rules

import (
	"slices"
	"strconv"
	"strings"
)

// Target is the rule engine the rule files are written for: each has constraints of its own
// that the same rules must meet.
type Target string

// The rule engines.
const (
	// TargetPrometheus is Prometheus' rule manager (and promtool): the default.
	TargetPrometheus Target = "prometheus"
	// TargetMimir is Grafana Mimir's ruler, loaded with mimirtool: the file names its
	// namespace (`namespace:` beside `groups:`; mimirtool would take the file's name, the same
	// for every service), no group holds more than MimirMaxRulesPerGroup rules, and every
	// recorded series' name has a colon (what `mimirtool rules check` asks).
	TargetMimir Target = "mimir"
	// TargetThanos is Thanos Ruler: every group sets partial_response_strategy: abort, so an
	// alert never evaluates (and resolves) on the data of only some of the stores (Thanos
	// Ruler's default too: the key states it).
	TargetThanos Target = "thanos"
	// TargetVictoriaMetrics is vmalert: it evaluates a group's rules in order but writes
	// recorded series asynchronously, so a rule must not read a series recorded in its own
	// group. Groups whose rules do are split into consecutive groups by dependency depth,
	// dependents after what they read.
	TargetVictoriaMetrics Target = "victoriametrics"
)

// Targets lists the rule engines, the default first.
var Targets = []Target{TargetPrometheus, TargetMimir, TargetThanos, TargetVictoriaMetrics}

// MimirMaxRulesPerGroup is the default of Mimir's ruler_max_rules_per_rule_group.
const MimirMaxRulesPerGroup = 20

// ThanosPartialResponseStrategy is the partial_response_strategy of every group for Thanos.
const ThanosPartialResponseStrategy = "abort"

func resolveTarget(t Target) (Target, error) {
	switch {
	case t == "":
		return TargetPrometheus, nil
	case slices.Contains(Targets, t):
		return t, nil
	}
	names := make([]string, len(Targets))
	for i, t := range Targets {
		names[i] = string(t)
	}
	return "", fieldErr("target", string(t), "not one of %s", strings.Join(names, ", "))
}

// ForTarget rewrites rule groups for engine t: split where the engine needs it (see the
// Target constants); group names stay unique (a split group's parts are <name>-1, <name>-2…).
func ForTarget(t Target, gs []Group) []Group {
	switch t {
	case TargetVictoriaMetrics:
		return splitGroups(gs, splitByDependency)
	case TargetMimir:
		return splitGroups(gs, func(rs []Rule) [][]Rule {
			if len(rs) <= MimirMaxRulesPerGroup {
				return [][]Rule{rs} // within the limit: Mimir evaluates a group in order
			}
			// Split by dependency first, so that a part never reads a series a later part
			// records, then cut each part to the limit.
			var out [][]Rule
			for _, part := range splitByDependency(rs) {
				out = append(out, slices.Collect(slices.Chunk(part, MimirMaxRulesPerGroup))...)
			}
			return out
		})
	}
	return gs
}

// splitGroups splits every group with split; a group split in several parts is named
// <name>-1, <name>-2, ….
func splitGroups(gs []Group, split func([]Rule) [][]Rule) []Group {
	var out []Group
	for _, g := range gs {
		parts := split(g.Rules)
		if len(parts) == 1 {
			out = append(out, g)
			continue
		}
		for i, p := range parts {
			out = append(out, Group{Name: g.Name + "-" + strconv.Itoa(i+1), Rules: p})
		}
	}
	return out
}

// splitByDependency orders rules into levels: level 0 reads no series recorded in rs, level
// n reads one recorded at level n-1 (and none at n or later). Each level keeps the rules'
// order.
func splitByDependency(rs []Rule) [][]Rule {
	level := make([]int, len(rs))
	top := 0
	for i, rl := range rs {
		for j := range i {
			if rs[j].Record != "" && readsSeries(rl.Expr, rs[j].Record) {
				level[i] = max(level[i], level[j]+1)
			}
		}
		top = max(top, level[i])
	}
	out := make([][]Rule, top+1)
	for i, rl := range rs {
		out[level[i]] = append(out[level[i]], rl)
	}
	return out
}

// readsSeries reports whether the PromQL expression expr names the metric name (as a whole
// token: not part of a longer name or label).
func readsSeries(expr, name string) bool {
	for i := 0; ; {
		j := strings.Index(expr[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !metricNameByte(expr[start-1])) && (end == len(expr) || !metricNameByte(expr[end])) {
			return true
		}
		i = start + 1
	}
}

func metricNameByte(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// render renders groups for format f and engine t; name is the PrometheusRule's (FormatOperator)
// or the Mimir namespace's name.
func (r *resolved) renderGroups(f Format, t Target, gs []Group, name string) ([]byte, error) {
	file := yamlRuleFile{Groups: toYAMLGroups(ForTarget(t, gs))}
	switch t {
	case TargetThanos:
		for i := range file.Groups {
			file.Groups[i].PartialResponseStrategy = ThanosPartialResponseStrategy
		}
	case TargetMimir:
		file.Namespace = name
	}
	if f == FormatOperator {
		return marshal(r.manifest(name, file))
	}
	return marshal(file)
}
