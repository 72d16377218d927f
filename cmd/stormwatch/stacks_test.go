package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// kubeObject is what kubectl needs of every document of a manifest file.
type kubeObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
}

// readObjects reads every file under dir as Kubernetes objects, failing on a file kubectl
// would refuse (not YAML/JSON by extension, or a document without apiVersion, kind, name).
func readObjects(t *testing.T, dir string) map[string]kubeObject {
	t.Helper()
	out := map[string]kubeObject{}
	for _, f := range listFiles(t, dir) {
		require.Regexp(t, `\.(yaml|yml|json)$`, f, "kubectl apply -f reads only manifests")
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		var o kubeObject
		require.NoError(t, yaml.Unmarshal(b, &o), f)
		require.NotEmpty(t, o.APIVersion, f)
		require.NotEmpty(t, o.Kind, f)
		require.NotEmpty(t, o.Metadata.Name, f)
		out[f] = o
	}
	return out
}

// `generate --format operator` writes manifests/ with nothing but manifests, named, namespaced
// and labelled from the config file and the flags (flags win), the dashboards as ConfigMaps with
// the sidecar label; the tests, runbooks and dashboard JSON stay outside.
func TestGenerateOperatorWritesApplyableManifests(t *testing.T) {
	dir := t.TempDir()
	cfg := sloConfig + `selector: 'job="checkout"'
kubernetes:
  namespace: shop
  labels:
    team: payments
    release: from-config
  dashboard_label: grafana_dashboard
  dashboard_label_value: "yes"
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stormwatch.yaml"), []byte(cfg), 0o644))
	res := runBin(t, dir, "generate", "-c", "stormwatch.yaml", "-o", "out", "--format", "operator",
		"--manifest-namespace", "monitoring", "--manifest-label", "release=kube-prometheus-stack")
	require.Equal(t, 0, res.code, res.stderr)
	objs := readObjects(t, filepath.Join(dir, "out", manifestsDir))
	assert.Equal(t, []string{
		"manifests/stormwatch-checkout-dashboard-dependency.yaml", "manifests/stormwatch-checkout-dashboard-overview.yaml",
		"manifests/stormwatch-checkout-dashboard-slos.yaml", "manifests/" + manifestFile, "manifests/" + sloManifestFile,
	}, prefixed(manifestsDir, keys(objs)))
	for f, o := range objs {
		assert.Equal(t, "monitoring", o.Metadata.Namespace, f)
		assert.Equal(t, "kube-prometheus-stack", o.Metadata.Labels["release"], f)
		assert.Equal(t, "payments", o.Metadata.Labels["team"], f)
		if o.Kind == "ConfigMap" {
			assert.Equal(t, "yes", o.Metadata.Labels["grafana_dashboard"], f)
			require.Len(t, o.Data, 1)
			for k, v := range o.Data {
				dash, err := os.ReadFile(filepath.Join(dir, "out", "dashboards", k))
				require.NoError(t, err)
				assert.Equal(t, string(dash), v, "the ConfigMap holds the dashboard file as it is")
			}
		}
	}
	assert.Equal(t, "stormwatch-checkout", objs[manifestFile].Metadata.Name)
	assert.Equal(t, "stormwatch-checkout-slos", objs[sloManifestFile].Metadata.Name)
	all := listFiles(t, filepath.Join(dir, "out"))
	assert.Contains(t, all, testsFile)
	assert.Contains(t, all, rulesFile)
	assert.Contains(t, all, "dashboards/stormwatch-overview.json")
}

func TestGenerateTargetFlag(t *testing.T) {
	dir := t.TempDir()
	res := runBin(t, dir, "generate", "-o", "out", "--target", "mimir", "rules")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, []string{"stormwatch-rules.mimir.yaml"}, listFiles(t, filepath.Join(dir, "out")))
	b, err := os.ReadFile(filepath.Join(dir, "out", "stormwatch-rules.mimir.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "\nnamespace: stormwatch\n")

	// With another engine the tests get a plain rule file of their own.
	res = runBin(t, dir, "generate", "-o", "out2", "--target", "thanos")
	require.Equal(t, 0, res.code, res.stderr)
	files := listFiles(t, filepath.Join(dir, "out2"))
	assert.Contains(t, files, "stormwatch-rules.thanos.yaml")
	assert.Contains(t, files, rulesFile)
	plain, err := os.ReadFile(filepath.Join(dir, "out2", rulesFile))
	require.NoError(t, err)
	assert.NotContains(t, string(plain), "partial_response_strategy")

	for _, tc := range []struct{ args, want string }{
		{"--target cortex", `stormwatch generate: target = "cortex": not one of prometheus, mimir, thanos, victoriametrics`},
		{"--format operator --manifest-name Bad", `stormwatch generate: kubernetes.name = "Bad": not a DNS-1123 label`},
		{"--format operator --manifest-label x", `invalid value "x" for flag -manifest-label: want key=value`},
		{"--format operator --dashboard-label grafana_dashboard", `--dashboard-label = "grafana_dashboard": want key=value`},
	} {
		res := runBin(t, dir, append([]string{"generate", "-o", "bad"}, strings.Fields(tc.args)...)...)
		assert.Equal(t, 2, res.code, tc.args)
		assert.Contains(t, res.stderr, tc.want, tc.args)
	}
}

func TestConfigFileKubernetesErrorsPointAtTheLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("kubernetes:\n  labels:\n    release: 1\n"), 0o644))
	res := runBin(t, dir, "generate", "-c", "c.yaml", "-o", "out")
	assert.Equal(t, 2, res.code)
	assert.Regexp(t, regexp.MustCompile(`c\.yaml:3: kubernetes\.labels\.release = 1: want a string`), res.stderr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("target: mimir\nkubernetes:\n  nme: x\n"), 0o644))
	res = runBin(t, dir, "generate", "-c", "c.yaml", "-o", "out")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "c.yaml:3: kubernetes.nme: unknown key")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// prefixed returns dir/p for each p, sorted.
func prefixed(dir string, ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = dir + "/" + p
	}
	slices.Sort(out)
	return out
}
