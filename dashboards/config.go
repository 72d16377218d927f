package dashboards

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
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
// config file: "namespace", "selector", "dashboards.title_prefix", "dashboards.uid_prefix",
// "dashboards.histograms".
// Inspect it with errors.As.
type ConfigError = catalog.ConfigError

// Fields of the stormwatch config file that ConfigError.Field names.
const (
	fieldNamespace   = "namespace"
	fieldSelector    = "selector"
	fieldTitlePrefix = "dashboards.title_prefix"
	fieldUIDPrefix   = "dashboards.uid_prefix"
	fieldHistograms  = "dashboards.histograms"
	fieldGroupBy     = "group_by"
)

// Histograms says in which form Prometheus stores the latency histograms (call durations, retry
// delays, bulkhead waits), which decides how the quantile panels query them.
type Histograms string

// The histogram forms. The default ("") is either: every histogram query reads the classic
// buckets `or` the native histogram, whichever the server stored — classic buckets in a
// Prometheus with its default configuration (no native histogram ingestion until Prometheus 4)
// and in VictoriaMetrics, native histograms with `scrape_native_histograms: true` (the
// collector's default exposition carries both).
const (
	// NativeHistograms: only native histograms (one series per histogram); quantiles are
	// histogram_quantile(φ, sum by (…) (rate(m[w]))).
	NativeHistograms Histograms = "native"
	// ClassicHistograms: only classic buckets; quantiles are histogram_quantile(φ, sum by (…,
	// le) (rate(m_bucket[w]))).
	ClassicHistograms Histograms = "classic"
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
	// variable and annotation, e.g. `job="checkout", env!~"dev|test"`: the matchers of a PromQL
	// vector selector without the braces, parsed as PromQL parses them, with the same syntax and
	// checks as the rules' Selector (see the README's configuration reference). The queries
	// carry the parsed matchers, rendered in PromQL. Empty means none. An invalid selector is a
	// *catalog.ConfigError with Field "selector".
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
	// GroupBy are the labels the rules aggregate by (the rules' group_by, of the same config
	// file): the Overview groups its series and its "who is hurting" table by them, and every
	// one besides job and name becomes a multi-value variable named after it (cluster →
	// $cluster) that filters every query. "name" is always kept, listed or not. nil means
	// DefaultGroupBy (job, name). Legacy label names only; not instance, datasource, a label
	// stormwatch's metrics set themselves, nor one starting with __; at most MaxGroupBy.
	GroupBy []string
	// Histograms is the form in which Prometheus stores the latency histograms: "" (whichever
	// exists), NativeHistograms or ClassicHistograms. Anything else is a *catalog.ConfigError with Field
	// "dashboards.histograms".
	Histograms Histograms
}

// Validate reports the first problem of cfg as a *ConfigError, or nil.
func (cfg Config) Validate() error {
	_, err := cfg.resolve()
	return err
}

// DependencyUID returns the uid of the Dependency dashboard generated with UIDPrefix
// uidPrefix ("" means DefaultUIDPrefix): the dashboard the alerts' dashboard_url opens.
func DependencyUID(uidPrefix string) string {
	if uidPrefix == "" {
		uidPrefix = DefaultUIDPrefix
	}
	return uidPrefix + dependencySuffix
}

// resolved is a validated Config with its defaults applied.
type resolved struct {
	ns           string // "" means no prefix
	selector     selector.Matchers
	titlePrefix  string
	uidPrefix    string
	provisioning bool
	classic      bool // the histograms are classic buckets
	native       bool // the histograms are native histograms; neither: whichever exists
	// groupBy are GroupBy with name; extras the labels among them that are variables of their
	// own (not job, not name).
	groupBy []string
	extras  []string
}

// DefaultGroupBy are the aggregation labels unless Config.GroupBy is set.
var DefaultGroupBy = []string{labelJob, catalog.LabelName}

// MaxGroupBy caps Config.GroupBy.
const MaxGroupBy = 16

// resolveGroupBy validates gb (nil: DefaultGroupBy) and returns it with name, and the labels
// that become variables of their own.
func resolveGroupBy(gb []string) (all, extras []string, err error) {
	if gb == nil {
		gb = DefaultGroupBy
	}
	switch {
	case len(gb) == 0:
		return nil, nil, configErr(fieldGroupBy, gb, "empty; leave it out for the default %v, or list the labels to keep besides %q", DefaultGroupBy, catalog.LabelName)
	case len(gb) > MaxGroupBy:
		return nil, nil, configErr(fieldGroupBy, gb, "%d labels, at most %d allowed", len(gb), MaxGroupBy)
	}
	seen := map[string]bool{}
	for _, l := range gb {
		switch {
		case !selector.ValidLabelName(l):
			return nil, nil, configErr(fieldGroupBy, gb, "%q is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)", l)
		case strings.HasPrefix(l, "__"):
			return nil, nil, configErr(fieldGroupBy, gb, "%q is reserved (label names starting with __ are internal)", l)
		case l == labelInstance:
			return nil, nil, configErr(fieldGroupBy, gb, "%q must not be listed: the Dependency dashboard shows every instance", l)
		case l == varDatasource:
			return nil, nil, configErr(fieldGroupBy, gb, "%q is the dashboards' data source variable", l)
		case selector.ReservedLabel(l):
			return nil, nil, configErr(fieldGroupBy, gb, "%q is a metric label the dashboards aggregate away or match on themselves", l)
		case seen[l]:
			return nil, nil, configErr(fieldGroupBy, gb, "%q is listed twice", l)
		}
		seen[l] = true
		all = append(all, l)
		if l != labelJob && l != catalog.LabelName {
			extras = append(extras, l)
		}
	}
	if !seen[catalog.LabelName] {
		all = append(all, catalog.LabelName)
	}
	return all, extras, nil
}

// resolve validates cfg and applies its defaults. Errors are *ConfigError naming the field and
// its value.
func (cfg Config) resolve() (resolved, error) {
	r := resolved{
		ns:           cfg.Namespace,
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
	switch cfg.Histograms {
	case "":
	case NativeHistograms:
		r.native = true
	case ClassicHistograms:
		r.classic = true
	default:
		return resolved{}, configErr(fieldHistograms, string(cfg.Histograms), "unknown histogram form (want %q or %q)",
			NativeHistograms, ClassicHistograms)
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
	var err error
	if r.groupBy, r.extras, err = resolveGroupBy(cfg.GroupBy); err != nil {
		return resolved{}, err
	}
	ms, err := selector.Parse("dashboards", cfg.Selector)
	if err != nil {
		return resolved{}, err
	}
	r.selector = ms
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

// VariableDatasource is the name of the dashboards' data source variable. The other variables
// are named after the labels they filter (job, instance, name and the extra GroupBy labels),
// so no GroupBy label may be called this.
const VariableDatasource = varDatasource
