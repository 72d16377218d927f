package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// Kubernetes says how the generated Kubernetes objects (the PrometheusRule manifests of
// FormatOperator and the dashboards' ConfigMaps) are named and labelled. The zero value derives
// everything from the rest of the Config (see KubernetesMeta).
type Kubernetes struct {
	// Name is the metadata.name of the PrometheusRule of the rules (the SLO rules' is Name
	// + "-slos", each dashboard's ConfigMap Name + "-dashboard-" + its short name). "" derives
	// it from the config so that two services' manifests never collide: "stormwatch" plus the
	// value of the selector's job="…" matcher ("stormwatch-checkout"), or else plus a short hash
	// of the selector and metric namespace when either is set. A DNS-1123 label: lower-case
	// letters, digits and '-', at most 63 characters.
	Name string
	// Namespace is the metadata.namespace of every object; "" leaves it out (kubectl applies
	// to its current namespace). A DNS-1123 label.
	Namespace string
	// Labels are added to every object's metadata.labels, over the defaults
	// (app.kubernetes.io/name and app.kubernetes.io/managed-by: stormwatch). Set the label your
	// Prometheus' ruleSelector selects: kube-prometheus-stack's default selects
	// release: <the Helm release name>.
	Labels map[string]string
	// DashboardLabel and DashboardLabelValue are the label that Grafana's dashboard sidecar
	// watches for on ConfigMaps; "" means DefaultDashboardLabel and DefaultDashboardLabelValue.
	DashboardLabel      string
	DashboardLabelValue string
}

// Defaults of Kubernetes.
const (
	DefaultManifestName        = "stormwatch"
	DefaultDashboardLabel      = "grafana_dashboard"
	DefaultDashboardLabelValue = "1"
	// MaxManifestName bounds Kubernetes.Name (a DNS-1123 label); the names derived from it
	// by a suffix are DNS-1123 subdomains, far below their 253 characters.
	MaxManifestName   = 63
	sloManifestSuffix = "-slos"
)

// KubeMeta is the resolved naming of the generated Kubernetes objects.
type KubeMeta struct {
	// Name and SLOName are the PrometheusRules' metadata.name.
	Name, SLOName string
	// Namespace is "" when none is set.
	Namespace string
	// Labels are every object's labels (defaults and configured).
	Labels map[string]string
	// DashboardLabel=DashboardLabelValue is the Grafana sidecar's label.
	DashboardLabel, DashboardLabelValue string
}

// KubernetesMeta resolves cfg.Kubernetes with its defaults, or returns the *ConfigError of an
// invalid config.
func KubernetesMeta(cfg Config) (KubeMeta, error) {
	r, err := cfg.resolve()
	if err != nil {
		return KubeMeta{}, err
	}
	return r.kube, nil
}

var (
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelNamePart    = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// resolveKubernetes validates k and applies its defaults.
func resolveKubernetes(k Kubernetes, ns string, ms selector.Matchers) (KubeMeta, error) {
	m := KubeMeta{Name: k.Name, Namespace: k.Namespace, DashboardLabel: k.DashboardLabel, DashboardLabelValue: k.DashboardLabelValue}
	if m.Name == "" {
		m.Name = derivedName(ns, ms)
	} else if len(m.Name) > MaxManifestName || !dns1123Label.MatchString(m.Name) {
		return m, fieldErr("kubernetes.name", k.Name, "not a DNS-1123 label of at most %d characters (lower-case letters, digits and '-', starting and ending with a letter or digit)", MaxManifestName)
	}
	m.SLOName = m.Name + sloManifestSuffix
	if m.Namespace != "" && (len(m.Namespace) > 63 || !dns1123Label.MatchString(m.Namespace)) {
		return m, fieldErr("kubernetes.namespace", k.Namespace, "not a DNS-1123 label of at most 63 characters (lower-case letters, digits and '-', starting and ending with a letter or digit)")
	}
	m.Labels = map[string]string{"app.kubernetes.io/name": "stormwatch", "app.kubernetes.io/managed-by": "stormwatch"}
	for _, key := range slices.Sorted(maps.Keys(k.Labels)) {
		if err := checkLabel(key, k.Labels[key]); err != nil {
			return m, fieldErr("kubernetes.labels."+key, k.Labels[key], "%s", err)
		}
		m.Labels[key] = k.Labels[key]
	}
	if m.DashboardLabel == "" {
		m.DashboardLabel = DefaultDashboardLabel
	}
	if k.DashboardLabelValue == "" {
		m.DashboardLabelValue = DefaultDashboardLabelValue
	}
	if err := checkLabel(m.DashboardLabel, m.DashboardLabelValue); err != nil {
		return m, fieldErr("kubernetes.dashboard_label", m.DashboardLabel+"="+m.DashboardLabelValue, "%s", err)
	}
	return m, nil
}

// derivedName is the default PrometheusRule name: "stormwatch", "stormwatch-<job>" when the
// selector has a job="…" matcher, else "stormwatch-<hash>" when the selector or the metric
// namespace is not the default.
func derivedName(ns string, ms selector.Matchers) string {
	for _, m := range ms {
		if m.Name == "job" && m.Type == selector.MatchEqual {
			if s := dnsLabelFrom(m.Value, MaxManifestName-len(DefaultManifestName)-1); s != "" {
				return DefaultManifestName + "-" + s
			}
		}
	}
	if len(ms) == 0 && ns == catalog.DefaultNamespace {
		return DefaultManifestName
	}
	sum := sha256.Sum256([]byte(ns + "\x00" + ms.String()))
	return DefaultManifestName + "-" + hex.EncodeToString(sum[:4])
}

// dnsLabelFrom lower-cases s, turns every run of characters a DNS-1123 label does not allow
// into one '-' and trims it to max characters; "" when nothing is left.
func dnsLabelFrom(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
	}
	return strings.TrimRight(out, "-")
}

// checkLabel checks a Kubernetes label: the key a qualified name (an optional DNS-1123
// subdomain prefix of at most 253 characters and '/', then a name of at most 63), the value
// at most 63 characters of the same alphabet, or empty.
func checkLabel(key, value string) error {
	name := key
	if prefix, rest, ok := strings.Cut(key, "/"); ok {
		if prefix == "" || len(prefix) > 253 || !dns1123Subdomain.MatchString(prefix) {
			return fmt.Errorf("label key prefix %q is not a DNS-1123 subdomain", prefix)
		}
		name = rest
	}
	if len(name) > 63 || !labelNamePart.MatchString(name) {
		return fmt.Errorf("label key %q is not a valid Kubernetes label name (at most 63 characters of [A-Za-z0-9_.-], starting and ending with a letter or digit)", key)
	}
	if value != "" && (len(value) > 63 || !labelNamePart.MatchString(value)) {
		return fmt.Errorf("label value %q is not a valid Kubernetes label value (at most 63 characters of [A-Za-z0-9_.-], starting and ending with a letter or digit)", value)
	}
	return nil
}

// manifest wraps a rule file in a PrometheusRule called name.
func (r *resolved) manifest(name string, file yamlRuleFile) yamlManifest {
	m := yamlManifest{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule", Spec: file}
	m.Metadata.Name = name
	m.Metadata.Namespace = r.kube.Namespace
	m.Metadata.Labels = maps.Clone(r.kube.Labels)
	m.Spec.Namespace = "" // a Mimir namespace is not a field of the CRD
	return m
}
