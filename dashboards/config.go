package dashboards

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
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
	// DefaultTitlePrefix.
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
	selector     selector.Matchers
	titlePrefix  string
	uidPrefix    string
	provisioning bool
}

// resolve validates cfg and applies its defaults. Errors name the field and its value.
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
			return resolved{}, fmt.Errorf("dashboards: Namespace: %w", err)
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
	ms, err := selector.Parse("dashboards", cfg.Selector)
	if err != nil {
		return resolved{}, err
	}
	r.selector = ms
	return r, nil
}

func checkTitlePrefix(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("dashboards: TitlePrefix %q: not valid UTF-8", s)
	}
	if strings.TrimSpace(s) != s {
		return fmt.Errorf("dashboards: TitlePrefix %q: leading or trailing white space", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("dashboards: TitlePrefix %q: control character %q", s, r)
		}
	}
	return nil
}

func checkUIDPrefix(s string) error {
	if len(s) > MaxUIDPrefixLen {
		return fmt.Errorf("dashboards: UIDPrefix %q: %d characters, at most %d allowed (Grafana uids are at most %d)",
			s, len(s), MaxUIDPrefixLen, maxUID)
	}
	for i, r := range s {
		if !(r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return fmt.Errorf("dashboards: UIDPrefix %q: invalid character %q at offset %d (want [a-zA-Z0-9_-])", s, r, i)
		}
	}
	return nil
}
