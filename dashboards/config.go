package dashboards

import (
	"fmt"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/genconfig"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// The shared settings — the namespace, the selector, group_by and the uid and title
// prefixes — are the rules': their defaults and limits are rules.NoNamespace,
// rules.DefaultGroupBy, rules.MaxGroupBy, rules.MaxLabelNameLen,
// rules.DefaultDashboardTitlePrefix, rules.MaxDashboardTitlePrefixLen,
// rules.DefaultDashboardUIDPrefix, rules.MaxDashboardUIDPrefixLen and
// rules.DependencyDashboardUID, and both generators validate them alike.

// The uid suffixes, one per dashboard, appended to the uid prefix.
const (
	overviewSuffix   = genconfig.OverviewSuffix
	dependencySuffix = genconfig.DependencySuffix // the longest: it bounds the prefix
	sloSuffix        = genconfig.SLOsSuffix
)

// maxUID is Grafana's limit on dashboard uid length.
const maxUID = genconfig.MaxUID

// ConfigError is the configuration error of every stormwatch package (catalog.ConfigError).
// The dashboards report theirs with Primitive "dashboards" and Field the key of the stormwatch
// config file: "namespace", "selector", "dashboards.title_prefix", "dashboards.uid_prefix",
// "dashboards.histograms".
// Inspect it with errors.As.
type ConfigError = catalog.ConfigError

// Fields of the stormwatch config file that ConfigError.Field names.
const (
	fieldUIDPrefix  = genconfig.FieldUIDPrefix
	fieldHistograms = "dashboards.histograms"
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

// primitive is the ConfigError.Primitive of the dashboards' configuration errors.
const primitive = "dashboards"

func configErr(field string, value any, format string, args ...any) error {
	return &catalog.ConfigError{Primitive: primitive, Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Config says how to generate the dashboards. The zero value generates the defaults.
type Config struct {
	// Namespace is the metric name prefix the collector was built with. "" means
	// catalog.DefaultNamespace ("resilience"); rules.NoNamespace means no prefix. Anything else
	// must pass catalog.ValidateNamespace.
	Namespace string
	// Selector holds extra PromQL label matchers added to every vector selector of every query,
	// variable and annotation, e.g. `job="checkout", env!~"dev|test"`: the matchers of a PromQL
	// vector selector without the braces, parsed as PromQL parses them, with the same syntax and
	// checks as the rules' Selector (see the README's configuration reference). The queries
	// carry the parsed matchers, rendered in PromQL. Empty means none. An invalid selector is a
	// *catalog.ConfigError with Field "selector".
	Selector string
	// TitlePrefix starts every dashboard title ("<TitlePrefix> / Overview"); "" means
	// rules.DefaultDashboardTitlePrefix. Valid UTF-8 without control characters or surrounding
	// white space, at most rules.MaxDashboardTitlePrefixLen characters.
	TitlePrefix string
	// UIDPrefix starts every dashboard uid and output file name ("<UIDPrefix>-overview"); ""
	// means rules.DefaultDashboardUIDPrefix. Letters, digits, '-' and '_', at most
	// rules.MaxDashboardUIDPrefixLen characters. The Dependency dashboard's uid is
	// rules.DependencyDashboardUID(UIDPrefix).
	UIDPrefix string
	// Provisioning also emits a Grafana file-provisioning YAML for the dashboards.
	Provisioning bool
	// GroupBy are the labels the rules aggregate by (the rules' group_by, of the same config
	// file): the Overview groups its series and its "who is hurting" table by them, and every
	// one besides job and name becomes a multi-value variable named after it (cluster →
	// $cluster) that filters every query. "name" is always kept, listed or not. nil means
	// rules.DefaultGroupBy (job, name). Legacy label names of at most rules.MaxLabelNameLen
	// bytes; not instance, datasource, a label stormwatch's metrics set themselves, nor one
	// starting with __; at most rules.MaxGroupBy.
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

// extraVariables are the group_by labels that become variables of their own (not job, not
// name).
func extraVariables(gb []string) []string {
	var extras []string
	for _, l := range gb {
		if l != labelJob && l != catalog.LabelName {
			extras = append(extras, l)
		}
	}
	return extras
}

// resolve validates cfg and applies its defaults. Errors are *ConfigError naming the field and
// its value.
func (cfg Config) resolve() (resolved, error) {
	r := resolved{provisioning: cfg.Provisioning}
	var err error
	if r.ns, err = genconfig.Namespace(primitive, cfg.Namespace); err != nil {
		return resolved{}, err
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
	if r.titlePrefix, err = genconfig.TitlePrefix(primitive, cfg.TitlePrefix); err != nil {
		return resolved{}, err
	}
	if r.uidPrefix, err = genconfig.UIDPrefix(primitive, cfg.UIDPrefix); err != nil {
		return resolved{}, err
	}
	if r.groupBy, err = genconfig.GroupBy(primitive, cfg.GroupBy, selector.ReservedLabel); err != nil {
		return resolved{}, err
	}
	r.extras = extraVariables(r.groupBy)
	if r.selector, err = genconfig.Selector(primitive, cfg.Selector); err != nil {
		return resolved{}, err
	}
	// The rules aggregate by group_by and the selector's labels: the same bound for both.
	if _, err := genconfig.Aggregation(primitive, r.groupBy, r.selector, cfg.Selector); err != nil {
		return resolved{}, err
	}
	return r, nil
}

// VariableDatasource is the name of the dashboards' data source variable. The other variables
// are named after the labels they filter (job, instance, name and the extra GroupBy labels),
// so no GroupBy label may be called this.
const VariableDatasource = varDatasource
