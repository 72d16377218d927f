package dashboards

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
)

// Defaults applied to the zero fields of a Config.
const (
	// DefaultTitlePrefix starts every dashboard title: "stormwatch / Overview".
	DefaultTitlePrefix = "stormwatch"
	// DefaultUIDPrefix starts every dashboard uid and file name: "stormwatch-overview".
	DefaultUIDPrefix = "stormwatch"
	// NoNamespace, as Config.Namespace, asks for metric names without a prefix
	// (circuitbreaker_state instead of resilience_circuitbreaker_state), matching a collector
	// built with collector.WithNamespace(""). An empty Config.Namespace means
	// catalog.DefaultNamespace.
	NoNamespace = "-"
)

// maxUID is Grafana's limit on dashboard uid length.
const maxUID = 40

// The uid suffixes, one per dashboard, appended to the uid prefix.
const (
	overviewSuffix   = "-overview"
	dependencySuffix = "-dependency" // the longest: it bounds the prefix
)

// MaxUIDPrefixLen is the longest UIDPrefix whose dashboard uids stay within Grafana's 40
// characters.
const MaxUIDPrefixLen = maxUID - len(dependencySuffix)

// MaxTitlePrefixLen caps TitlePrefix, in characters.
const MaxTitlePrefixLen = 100

// ConfigError is the configuration error of every stormwatch package (catalog.ConfigError).
// The dashboards report theirs with Primitive "dashboards" and Field the key of the stormwatch
// config file: "namespace", "selector", "dashboards.title_prefix", "dashboards.uid_prefix".
// Inspect it with errors.As.
type ConfigError = catalog.ConfigError

// Fields of the stormwatch config file that ConfigError.Field names.
const (
	fieldNamespace   = "namespace"
	fieldSelector    = "selector"
	fieldTitlePrefix = "dashboards.title_prefix"
	fieldUIDPrefix   = "dashboards.uid_prefix"
)

func configErr(field string, value any, format string, args ...any) error {
	return &catalog.ConfigError{Primitive: "dashboards", Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Config says how to generate the dashboards. The zero value generates the defaults.
type Config struct {
	// Namespace is the metric name prefix the collector was built with. "" means
	// catalog.DefaultNamespace ("resilience"); NoNamespace means no prefix. Anything else must
	// pass catalog.ValidateNamespace.
	Namespace string
	// Selector holds extra PromQL label matchers added to every vector selector of every query,
	// variable and annotation, e.g. `job="checkout", env!~"dev|test"`. Empty means none.
	// Generate checks it only lexically (label, operator, quoted value, commas; no braces, no
	// __name__); regular expressions are not compiled. A trailing comma is dropped.
	Selector string
	// TitlePrefix starts every dashboard title ("<TitlePrefix> / Overview"); "" means
	// DefaultTitlePrefix. Valid UTF-8 without control characters or surrounding white space, at
	// most MaxTitlePrefixLen characters.
	TitlePrefix string
	// UIDPrefix starts every dashboard uid and output file name ("<UIDPrefix>-overview"); ""
	// means DefaultUIDPrefix. Letters, digits, '-' and '_', at most MaxUIDPrefixLen characters.
	UIDPrefix string
	// Provisioning also emits a Grafana file-provisioning YAML for the dashboards.
	Provisioning bool
}

// resolved is a validated Config with its defaults applied.
type resolved struct {
	ns           string // "" means no prefix
	selector     string // trimmed; "" means none
	titlePrefix  string
	uidPrefix    string
	provisioning bool
}

// resolve validates cfg and applies its defaults. Errors are *ConfigError naming the field and
// its value.
func (cfg Config) resolve() (resolved, error) {
	r := resolved{
		ns:           cfg.Namespace,
		selector:     strings.TrimSpace(cfg.Selector),
		titlePrefix:  cfg.TitlePrefix,
		uidPrefix:    cfg.UIDPrefix,
		provisioning: cfg.Provisioning,
	}
	switch r.ns {
	case "":
		r.ns = catalog.DefaultNamespace
	case NoNamespace:
		r.ns = ""
	default:
		if err := catalog.ValidateNamespace(r.ns); err != nil {
			reason := err.Error()
			var ce *catalog.ConfigError
			if errors.As(err, &ce) {
				reason = ce.Reason
			}
			return resolved{}, configErr(fieldNamespace, r.ns, "not a valid metric name prefix: %s", reason)
		}
	}
	if r.titlePrefix == "" {
		r.titlePrefix = DefaultTitlePrefix
	}
	if err := checkTitlePrefix(r.titlePrefix); err != nil {
		return resolved{}, err
	}
	if r.uidPrefix == "" {
		r.uidPrefix = DefaultUIDPrefix
	}
	if err := checkUIDPrefix(r.uidPrefix); err != nil {
		return resolved{}, err
	}
	if r.selector != "" {
		if err := checkSelector(r.selector); err != nil {
			return resolved{}, configErr(fieldSelector, cfg.Selector, "%v", err)
		}
		r.selector = strings.TrimSpace(strings.TrimSuffix(r.selector, ","))
	}
	return r, nil
}

func checkTitlePrefix(s string) error {
	if !utf8.ValidString(s) {
		return configErr(fieldTitlePrefix, s, "not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > MaxTitlePrefixLen {
		return configErr(fieldTitlePrefix, s, "%d characters, at most %d allowed", n, MaxTitlePrefixLen)
	}
	if strings.TrimSpace(s) != s {
		return configErr(fieldTitlePrefix, s, "leading or trailing white space")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return configErr(fieldTitlePrefix, s, "control character %q", r)
		}
	}
	return nil
}

func checkUIDPrefix(s string) error {
	if len(s) > MaxUIDPrefixLen {
		return configErr(fieldUIDPrefix, s, "%d characters, at most %d allowed (Grafana uids are at most %d)",
			len(s), MaxUIDPrefixLen, maxUID)
	}
	for i, r := range s {
		if !(r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return configErr(fieldUIDPrefix, s, "invalid character %q at offset %d (want [a-zA-Z0-9_-])", r, i)
		}
	}
	return nil
}

// checkSelector is a light check of a comma-separated list of PromQL label matchers
// (label op "value"): label names are identifiers (not __name__), values are PromQL string
// literals (double, single or back quotes, PromQL escapes) and regular-expression values
// compile. It catches typos such as a missing quote or a brace; the CLI may parse the selector
// with the full PromQL grammar.
func checkSelector(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	for n := 0; ; n++ {
		skip()
		if i == len(s) {
			if n == 0 {
				return fmt.Errorf("no matcher")
			}
			return nil // after a trailing comma, which PromQL allows
		}
		start := i
		for i < len(s) && (s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (i > start && s[i] >= '0' && s[i] <= '9')) {
			i++
		}
		if i == start {
			return fmt.Errorf("want a label name at offset %d", i)
		}
		label := s[start:i]
		if label == "__name__" {
			return fmt.Errorf("matcher on __name__ at offset %d: the metric names come from the catalog", start)
		}
		skip()
		op := ""
		for _, o := range []string{"=~", "!=", "!~", "="} {
			if strings.HasPrefix(s[i:], o) {
				op = o
				break
			}
		}
		if op == "" {
			return fmt.Errorf("want =, !=, =~ or !~ after %s at offset %d", label, i)
		}
		i += len(op)
		skip()
		end, value, err := stringLiteral(s, i)
		if err != nil {
			return fmt.Errorf("value of %s at offset %d: %w", label, i, err)
		}
		if op == "=~" || op == "!~" {
			if _, err := regexp.Compile(value); err != nil {
				return fmt.Errorf("value of %s: %w", label, err)
			}
		}
		i = end
		skip()
		if i == len(s) {
			return nil
		}
		if s[i] != ',' {
			return fmt.Errorf("want ',' at offset %d", i)
		}
		i++
	}
}

// stringLiteral reads the PromQL string literal starting at s[i] and returns the offset after
// it and its value. PromQL strings follow Go's rules, except that single-quoted strings are
// strings too (with \' rather than \" as the escaped quote).
func stringLiteral(s string, i int) (end int, value string, err error) {
	if i == len(s) || (s[i] != '"' && s[i] != '\'' && s[i] != '`') {
		return 0, "", fmt.Errorf("want a quoted value")
	}
	q := s[i]
	j := i + 1
	for j < len(s) && s[j] != q {
		if s[j] == '\\' && q != '`' {
			j++
		}
		j++
	}
	if j >= len(s) {
		return 0, "", fmt.Errorf("unterminated string")
	}
	lit, ok := s[i:j+1], true
	if q == '\'' {
		lit, ok = singleToDouble(lit)
	}
	v, err := strconv.Unquote(lit)
	if err != nil || !ok {
		return 0, "", fmt.Errorf("invalid string %s", s[i:j+1])
	}
	return j + 1, v, nil
}

// singleToDouble rewrites a single-quoted PromQL literal as the equivalent double-quoted one;
// false if it holds \", which PromQL rejects in single quotes.
func singleToDouble(lit string) (string, bool) {
	var b strings.Builder
	b.WriteByte('"')
	in := lit[1 : len(lit)-1]
	for k := 0; k < len(in); k++ {
		switch {
		case in[k] == '\\' && k+1 < len(in) && in[k+1] == '\'':
			b.WriteByte('\'')
			k++
		case in[k] == '\\' && k+1 < len(in) && in[k+1] == '"':
			return "", false
		case in[k] == '\\' && k+1 < len(in):
			b.WriteString(in[k : k+2])
			k++
		case in[k] == '"':
			b.WriteString(`\"`)
		default:
			b.WriteByte(in[k])
		}
	}
	b.WriteByte('"')
	return b.String(), true
}
