// Package genconfig holds the settings the two generators share — the rules (package rules)
// and the dashboards (package dashboards) read the same stormwatch.yaml keys namespace,
// group_by, dashboards.title_prefix and dashboards.uid_prefix — with their defaults, limits
// and validation, so that both accept and refuse exactly the same values. The public names
// are package rules' (rules.NoNamespace, rules.MaxGroupBy, …); this package is their one
// definition. It imports only the catalog.
package genconfig

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/escape"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// Settings shared by the generators.
const (
	// NamespaceNone, as a configured namespace, asks for metric names without a prefix
	// (exported as rules.NoNamespace).
	NamespaceNone = "-"
	// MaxGroupBy caps the group_by labels: each is part of every recorded series' name and of
	// every alert's label set.
	MaxGroupBy = 16
	// MaxLabelNameLen caps every configured label name (group_by, the selector's, SLO labels),
	// in bytes: group_by labels are spelled in every recorded series' name.
	MaxLabelNameLen = 64
	// DefaultUIDPrefix starts every dashboard uid and file name: "stormwatch-overview".
	DefaultUIDPrefix = "stormwatch"
	// DefaultTitlePrefix starts every dashboard title: "stormwatch / Overview".
	DefaultTitlePrefix = "stormwatch"
	// MaxTitlePrefixLen caps the title prefix, in characters.
	MaxTitlePrefixLen = 100
	// MaxUID is Grafana's limit on a dashboard uid's length.
	MaxUID = 40
	// DependencySuffix ends the Dependency dashboard's uid, the longest suffix: it bounds the
	// uid prefix.
	DependencySuffix = "-dependency"
	// MaxUIDPrefixLen is the longest uid prefix whose dashboard uids stay within MaxUID.
	MaxUIDPrefixLen = MaxUID - len(DependencySuffix)
	// DatasourceVariable is the dashboards' data source variable: no group_by label may be
	// called so, since the others become dashboard variables of their names.
	DatasourceVariable = "datasource"
	// LabelJob and LabelInstance are the target labels Prometheus adds.
	LabelJob      = "job"
	LabelInstance = "instance"
)

// NoGrafanaVariables ends the errors about Grafana variable syntax in a string that reaches a
// dashboard: Grafana has no escape for it.
const NoGrafanaVariables = "which Grafana would replace with a variable's value in the dashboards ($name, ${name}, [[name]]; Grafana has no escape for them)"

// Fields of the stormwatch config file the errors of this package name.
const (
	FieldNamespace   = "namespace"
	FieldGroupBy     = "group_by"
	FieldTitlePrefix = "dashboards.title_prefix"
	FieldUIDPrefix   = "dashboards.uid_prefix"
)

// DefaultGroupBy are the labels every aggregation keeps unless group_by is set.
func DefaultGroupBy() []string { return []string{LabelJob, catalog.LabelName} }

// DependencyUID is the uid of the Dependency dashboard under uidPrefix ("" means
// DefaultUIDPrefix): the dashboard every alert's dashboard_url opens.
func DependencyUID(uidPrefix string) string {
	if uidPrefix == "" {
		uidPrefix = DefaultUIDPrefix
	}
	return uidPrefix + DependencySuffix
}

func configErr(primitive, field string, value any, format string, args ...any) error {
	return &catalog.ConfigError{Primitive: primitive, Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// maxQuoted is how much of a user's string an error message repeats.
const maxQuoted = 64

// Quote renders a user's string for an error message: quoted, and cut to its first 64 bytes
// (on a character boundary) with the full length said, so that an oversized input never
// becomes an oversized message and a message stays on one line.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// Namespace resolves a configured namespace to the metric name prefix: "" is
// catalog.DefaultNamespace, NamespaceNone none; anything else must pass
// catalog.ValidateNamespace.
func Namespace(primitive, ns string) (string, error) {
	switch ns {
	case "":
		return catalog.DefaultNamespace, nil
	case NamespaceNone:
		return "", nil
	}
	if err := catalog.ValidateNamespace(ns); err != nil {
		reason := err.Error()
		var ce *catalog.ConfigError
		if errors.As(err, &ce) {
			reason = ce.Reason
		}
		return "", configErr(primitive, FieldNamespace, ns, "not a valid metric name prefix: %s", reason)
	}
	return ns, nil
}

// CheckLabelName reports why name is not usable as a configured label name ("" if it is):
// a legacy Prometheus name ([a-zA-Z_][a-zA-Z0-9_]*) of at most MaxLabelNameLen bytes, not
// starting with __.
func CheckLabelName(name string) string {
	switch {
	case len(name) > MaxLabelNameLen:
		return fmt.Sprintf("label name %s is %d bytes long, at most %d allowed", Quote(name), len(name), MaxLabelNameLen)
	case !validLabelName(name):
		return fmt.Sprintf("%s is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)", Quote(name))
	case strings.HasPrefix(name, "__"):
		return fmt.Sprintf("%s is reserved (label names starting with __ are internal)", Quote(name))
	}
	return ""
}

func validLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// GroupBy validates the configured group_by labels (nil: DefaultGroupBy) and returns them
// with name appended when it is not listed. reserved reports the labels stormwatch's metrics
// set themselves.
func GroupBy(primitive string, gb []string, reserved func(string) bool) ([]string, error) {
	if gb == nil {
		gb = DefaultGroupBy()
	}
	shown := func() any { return quotedList(gb) }
	switch {
	case len(gb) == 0:
		return nil, configErr(primitive, FieldGroupBy, gb, "empty; leave it out for the default %v, or list the labels to keep besides %q", DefaultGroupBy(), catalog.LabelName)
	case len(gb) > MaxGroupBy:
		return nil, configErr(primitive, FieldGroupBy, nil, "%d labels, at most %d allowed", len(gb), MaxGroupBy)
	}
	seen := map[string]bool{}
	for _, l := range gb {
		if why := CheckLabelName(l); why != "" {
			return nil, configErr(primitive, FieldGroupBy, shown(), "%s", why)
		}
		switch {
		case l == LabelInstance:
			return nil, configErr(primitive, FieldGroupBy, shown(), "%q must not be listed: the per-process alerts add it, CircuitBreakerOpenFleetWide counts instances and the Dependency dashboard shows every instance", l)
		case l == DatasourceVariable:
			return nil, configErr(primitive, FieldGroupBy, shown(), "%q is the dashboards' data source variable: every other group_by label becomes a dashboard variable of its name", l)
		case reserved(l):
			return nil, configErr(primitive, FieldGroupBy, shown(), "%q is a metric label the generated queries aggregate away or match on themselves", l)
		case seen[l]:
			return nil, configErr(primitive, FieldGroupBy, shown(), "%q is listed twice", l)
		}
		seen[l] = true
	}
	out := slices.Clone(gb)
	if !seen[catalog.LabelName] {
		out = append(out, catalog.LabelName)
	}
	return out, nil
}

// quotedList renders a list of label names for ConfigError.Value, each cut by Quote's rule.
type quotedList []string

func (l quotedList) String() string {
	parts := make([]string, len(l))
	for i, s := range l {
		if validLabelName(s) && len(s) <= maxQuoted {
			parts[i] = s
		} else {
			parts[i] = Quote(s)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// UIDPrefix resolves the dashboards' uid prefix ("" means DefaultUIDPrefix): letters, digits,
// '-' and '_', at most MaxUIDPrefixLen bytes.
func UIDPrefix(primitive, s string) (string, error) {
	if s == "" {
		return DefaultUIDPrefix, nil
	}
	if len(s) > MaxUIDPrefixLen {
		return "", configErr(primitive, FieldUIDPrefix, s, "%d characters, at most %d allowed (Grafana uids are at most %d)", len(s), MaxUIDPrefixLen, MaxUID)
	}
	for i, c := range s {
		if !(c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return "", configErr(primitive, FieldUIDPrefix, s, "invalid character %q at offset %d (want [a-zA-Z0-9_-])", c, i)
		}
	}
	return s, nil
}

// TitlePrefix resolves the dashboards' title prefix ("" means DefaultTitlePrefix): valid
// UTF-8 without control characters or surrounding white space, at most MaxTitlePrefixLen
// characters.
func TitlePrefix(primitive, s string) (string, error) {
	if s == "" {
		return DefaultTitlePrefix, nil
	}
	if !utf8.ValidString(s) {
		return "", configErr(primitive, FieldTitlePrefix, s, "not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > MaxTitlePrefixLen {
		return "", configErr(primitive, FieldTitlePrefix, s, "%d characters, at most %d allowed", n, MaxTitlePrefixLen)
	}
	if strings.TrimSpace(s) != s {
		return "", configErr(primitive, FieldTitlePrefix, s, "leading or trailing white space")
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return "", configErr(primitive, FieldTitlePrefix, s, "control character %q", r)
		}
	}
	if v := escape.GrafanaVariable(s); v != "" {
		return "", configErr(primitive, FieldTitlePrefix, s, "holds %s, %s", Quote(v), NoGrafanaVariables)
	}
	return s, nil
}

// Selector parses the configured selector (selector.Parse) and caps its label names at
// MaxLabelNameLen: the generated rules keep them in every aggregation and recorded series name.
func Selector(primitive, s string) (selector.Matchers, error) {
	ms, err := selector.Parse(primitive, s)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if len(m.Name) > MaxLabelNameLen {
			return nil, configErr(primitive, "selector", s, "label name %s is %d bytes long, at most %d allowed", Quote(m.Name), len(m.Name), MaxLabelNameLen)
		}
		if v := escape.GrafanaVariable(m.Value); v != "" {
			return nil, configErr(primitive, "selector", s, "the value of %s holds %s, %s", m.Name, Quote(v), NoGrafanaVariables)
		}
	}
	return ms, nil
}

// Key renders a user's mapping key in a config path (ConfigError.Field): as written when it is
// short printable text without quotes, else as Quote renders it.
func Key(k string) string {
	if len(k) > maxQuoted || k == "" {
		return Quote(k)
	}
	for _, r := range k {
		if !unicode.IsPrint(r) || r == '"' || r == ' ' {
			return Quote(k)
		}
	}
	return k
}

// The dashboards' uid suffixes; DependencySuffix is the longest.
const (
	OverviewSuffix = "-overview"
	SLOsSuffix     = "-slos"
)

// MaxAggregationLabels caps the labels the rules' aggregations keep: group_by (with name) and
// the selector's other labels (but instance). Each is spelled in every recorded series' name.
const MaxAggregationLabels = 24

// Aggregation returns the labels the rules' aggregations keep: gb (resolved by GroupBy) and
// the labels of the selector's matchers not among them (but instance), at most
// MaxAggregationLabels.
func Aggregation(primitive string, gb []string, ms selector.Matchers, sel string) ([]string, error) {
	out := slices.Clone(gb)
	for _, m := range ms {
		if !slices.Contains(out, m.Name) && m.Name != LabelInstance {
			out = append(out, m.Name)
		}
	}
	if len(out) > MaxAggregationLabels {
		return nil, configErr(primitive, "selector", sel, "%d labels besides group_by's %d: the aggregations keep group_by's and the selector's labels, at most %d in all",
			len(out)-len(gb), len(gb), MaxAggregationLabels)
	}
	return out, nil
}
