package rules

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// crdFile is the PrometheusRule CRD of the prometheus-operator release the manifests target.
const crdFile = "testdata/prometheusrule-crd-v0.93.0.yaml"

// crdSchema returns the openAPIV3Schema of the CRD's served version v1.
func crdSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(crdFile)
	require.NoError(t, err)
	var crd map[string]any
	require.NoError(t, yaml.Unmarshal(b, &crd))
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		v := v.(map[string]any)
		if v["name"] == "v1" {
			return v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		}
	}
	t.Fatal("no v1 in the CRD")
	return nil
}

// checkSchema validates v against the structural OpenAPI schema s as the API server does with
// kubectl's default --validate=strict: types, required fields, patterns, enums, minLength,
// int-or-string, list-type map keys, and no field the schema does not declare.
func checkSchema(path string, s map[string]any, v any) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	if s["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case int, string:
		default:
			fail("want an integer or a string, got %T", v)
		}
		return errs
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			fail("want an object, got %T", v)
			return errs
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asSlice(s["required"]) {
			if _, ok := m[r.(string)]; !ok {
				fail("required field %q missing", r)
			}
		}
		for k, fv := range m {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, checkSchema(path+"."+k, ps, fv)...)
			} else if as, ok := s["additionalProperties"].(map[string]any); ok {
				errs = append(errs, checkSchema(path+"."+k, as, fv)...)
			} else if props != nil || s["x-kubernetes-preserve-unknown-fields"] != true {
				if path != "" || (k != "apiVersion" && k != "kind") {
					if props != nil || path != ".metadata" {
						fail("unknown field %q", k)
					}
				}
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			fail("want an array, got %T", v)
			return errs
		}
		items, _ := s["items"].(map[string]any)
		seen := map[string]bool{}
		for i, item := range a {
			errs = append(errs, checkSchema(fmt.Sprintf("%s[%d]", path, i), items, item)...)
			if s["x-kubernetes-list-type"] == "map" {
				var key []string
				for _, k := range asSlice(s["x-kubernetes-list-map-keys"]) {
					key = append(key, fmt.Sprint(item.(map[string]any)[k.(string)]))
				}
				if seen[strings.Join(key, "\x00")] {
					fail("duplicate list-map key %v", key)
				}
				seen[strings.Join(key, "\x00")] = true
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			fail("want a string, got %T (%v)", v, v)
			return errs
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			fail("%q does not match %s", str, p)
		}
		if n, ok := s["minLength"].(int); ok && len(str) < n {
			fail("%q shorter than %d", str, n)
		}
		if e := asSlice(s["enum"]); e != nil && !slices.Contains(e, any(str)) {
			fail("%q not one of %v", str, e)
		}
	case "integer":
		if _, ok := v.(int); !ok {
			fail("want an integer, got %T", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fail("want a boolean, got %T", v)
		}
	}
	return errs
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// checkObjectMeta checks what the API server checks of a namespaced object's metadata.
func checkObjectMeta(meta map[string]any) []string {
	var errs []string
	name, _ := meta["name"].(string)
	if len(name) > 253 || !dns1123Subdomain.MatchString(name) {
		errs = append(errs, fmt.Sprintf("metadata.name %q is not a DNS-1123 subdomain", name))
	}
	if ns, ok := meta["namespace"]; ok {
		if s, _ := ns.(string); len(s) > 63 || !dns1123Label.MatchString(s) {
			errs = append(errs, fmt.Sprintf("metadata.namespace %v is not a DNS-1123 label", ns))
		}
	}
	labels, _ := meta["labels"].(map[string]any)
	for k, v := range labels {
		s, ok := v.(string)
		if !ok {
			errs = append(errs, fmt.Sprintf("label %s: value %v is not a string", k, v))
		} else if err := checkLabel(k, s); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for k := range meta {
		if k != "name" && k != "namespace" && k != "labels" {
			errs = append(errs, "unexpected metadata field "+k)
		}
	}
	return errs
}

// manifestConfigs are the configurations whose manifests the schema test checks: defaults,
// every target, SLOs, and a fully configured Kubernetes block.
func manifestConfigs(t *testing.T) map[string]Config {
	out := map[string]Config{
		"defaults": {},
		"selector": {Selector: `job="checkout", env!~"dev|test"`},
		"configured": {Kubernetes: Kubernetes{Name: "payments-rules", Namespace: "monitoring",
			Labels: map[string]string{"release": "kube-prometheus-stack", "example.com/team": "payments"}}},
		"slos": {SLOs: exampleSLOs(t)},
	}
	for _, tg := range Targets {
		out["target "+string(tg)] = Config{Target: tg, SLOs: exampleSLOs(t)}
	}
	return out
}

// TestManifestsMatchTheCRDSchema checks every generated PrometheusRule against the CRD's
// OpenAPI schema (as kubectl apply --validate=strict does) and its metadata against the API
// server's rules for names, namespaces and labels.
func TestManifestsMatchTheCRDSchema(t *testing.T) {
	schema := crdSchema(t)
	for name, cfg := range manifestConfigs(t) {
		t.Run(name, func(t *testing.T) {
			cfg.Format = FormatOperator
			docs := [][]byte{}
			b, err := Generate(cfg)
			require.NoError(t, err)
			docs = append(docs, b)
			if len(cfg.SLOs) > 0 {
				b, err := GenerateSLORules(cfg)
				require.NoError(t, err)
				docs = append(docs, b)
			}
			for _, b := range docs {
				var m map[string]any
				require.NoError(t, yaml.Unmarshal(b, &m))
				assert.Equal(t, "monitoring.coreos.com/v1", m["apiVersion"])
				assert.Equal(t, "PrometheusRule", m["kind"])
				assert.Empty(t, checkSchema("", schema, m))
				assert.Empty(t, checkObjectMeta(m["metadata"].(map[string]any)))
			}
		})
	}
}

// The checker itself rejects what the API server rejects.
func TestSchemaCheckerRejectsInvalidManifests(t *testing.T) {
	schema := crdSchema(t)
	good, err := Generate(Config{Format: FormatOperator, Target: TargetThanos})
	require.NoError(t, err)
	for _, tc := range []struct{ name, from, to, want string }{
		{"unknown rule field", "for: 1m", "fore: 1m", `unknown field "fore"`},
		{"bad duration", "for: 2m", "for: 2 minutes", "does not match"},
		{"bad strategy", "partial_response_strategy: abort", "partial_response_strategy: never", "does not match"},
		{"duplicate group", "name: stormwatch-retry", "name: stormwatch-recording", "duplicate list-map key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Replace(good, []byte(tc.from), []byte(tc.to), 1)
			require.False(t, bytes.Equal(good, bad), "nothing replaced")
			var m map[string]any
			require.NoError(t, yaml.Unmarshal(bad, &m))
			assert.Contains(t, strings.Join(checkSchema("", schema, m), "\n"), tc.want)
		})
	}
}

// Two services' manifests never collide: the default name follows the selector's job, or a
// hash of the selector and metric namespace.
func TestManifestNamesDeriveFromTheConfig(t *testing.T) {
	name := func(cfg Config) string {
		m, err := KubernetesMeta(cfg)
		require.NoError(t, err)
		return m.Name
	}
	assert.Equal(t, "stormwatch", name(Config{}))
	assert.Equal(t, "stormwatch-checkout", name(Config{Selector: `job="checkout"`}))
	assert.Equal(t, "stormwatch-payments-api", name(Config{Selector: `env="prod", job="Payments_API"`}))
	a, b := name(Config{Selector: `env="prod"`}), name(Config{Selector: `env="staging"`})
	assert.Regexp(t, `^stormwatch-[0-9a-f]{8}$`, a)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, name(Config{}), name(Config{Namespace: "myapp"}))
	assert.Equal(t, a, name(Config{Selector: `env="prod"`}), "stable across runs")
	assert.Equal(t, "mine", name(Config{Selector: `job="checkout"`, Kubernetes: Kubernetes{Name: "mine"}}))

	m, err := KubernetesMeta(Config{Selector: `job="checkout"`})
	require.NoError(t, err)
	assert.Equal(t, "stormwatch-checkout-slos", m.SLOName)
	assert.Equal(t, "grafana_dashboard", m.DashboardLabel)
	assert.Equal(t, "1", m.DashboardLabelValue)

	cfg := Config{Selector: `job="checkout"`, Format: FormatOperator, SLOs: exampleSLOs(t),
		Kubernetes: Kubernetes{Namespace: "shop", Labels: map[string]string{"release": "kps"}}}
	for _, gen := range []func(Config) ([]byte, error){Generate, GenerateSLORules} {
		b, err := gen(cfg)
		require.NoError(t, err)
		var doc struct {
			Metadata struct {
				Name, Namespace string
				Labels          map[string]string
			}
		}
		require.NoError(t, yaml.Unmarshal(b, &doc))
		assert.Contains(t, []string{"stormwatch-checkout", "stormwatch-checkout-slos"}, doc.Metadata.Name)
		assert.Equal(t, "shop", doc.Metadata.Namespace)
		assert.Equal(t, "kps", doc.Metadata.Labels["release"])
		assert.Equal(t, "stormwatch", doc.Metadata.Labels["app.kubernetes.io/managed-by"])
	}
}

func TestKubernetesConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		k     Kubernetes
		field string
	}{
		{Kubernetes{Name: "Payments"}, "kubernetes.name"},
		{Kubernetes{Name: strings.Repeat("a", 64)}, "kubernetes.name"},
		{Kubernetes{Namespace: "my_ns"}, "kubernetes.namespace"},
		{Kubernetes{Labels: map[string]string{"bad key": "x"}}, "kubernetes.labels.bad key"},
		{Kubernetes{Labels: map[string]string{"release": "not valid!"}}, "kubernetes.labels.release"},
		{Kubernetes{Labels: map[string]string{"Bad_Prefix/x": "y"}}, "kubernetes.labels.Bad_Prefix/x"},
		{Kubernetes{DashboardLabel: "-x"}, "kubernetes.dashboard_label"},
	} {
		_, err := Generate(Config{Format: FormatOperator, Kubernetes: tc.k})
		var ce *catalog.ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", tc.k, err)
		assert.Equal(t, tc.field, ce.Field)
	}
	_, err := Generate(Config{Target: "cortex"})
	var ce *catalog.ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "target", ce.Field)
	assert.Contains(t, ce.Error(), "victoriametrics")
}

// exampleSLOs are three SLOs of different sources and periods.
func exampleSLOs(t *testing.T) []SLO {
	t.Helper()
	return []SLO{
		{Name: "payments", Objective: 0.999},
		{ID: "storefront", NameRegex: "inventory|recommendations", Objective: 0.99, Period: 28 * 24 * time.Hour},
		{Name: "ledger-db", Objective: 0.9995, Source: SLOSourceBreaker},
	}
}
