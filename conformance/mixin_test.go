package conformance_test

// The jsonnet monitoring mixin: rendered by go-jsonnet, mixin.libsonnet yields exactly the
// generated rule files (prometheusRules + prometheusAlerts) and dashboards (grafanaDashboards).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-jsonnet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// goldenFile reads name from the first of dirs that has it (examples/generated-slo holds only
// the files the SLO example changes).
func goldenFile(t *testing.T, name string, dirs ...string) []byte {
	t.Helper()
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, name)); err == nil {
			return b
		}
	}
	t.Fatalf("%s in none of %v", name, dirs)
	return nil
}

// renderMixin evaluates field of the mixin file in dir with go-jsonnet and decodes the JSON.
func renderMixin(t *testing.T, file, field string) any {
	t.Helper()
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{filepath.Dir(file)}})
	out, err := vm.EvaluateAnonymousSnippet("render.jsonnet", `(import "`+filepath.Base(file)+`").`+field)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	return v
}

// yamlValue decodes YAML and re-encodes it as JSON values, so it compares with jsonnet's output.
func yamlValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(b, &v))
	j, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(j, &out))
	return out
}

func TestMixinRendersToTheGeneratedFiles(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dirs      []string
		ruleFiles []string
	}{
		{"defaults", []string{"../examples/generated"}, []string{"stormwatch-rules.yaml"}},
		{"slo example", []string{"../examples/generated-slo", "../examples/generated"}, []string{"stormwatch-rules.yaml", "stormwatch-slo-rules.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mixin := filepath.Join(tc.dirs[0], "mixin.libsonnet")
			require.FileExists(t, mixin)

			// Every group of the rule files, in order; the mixin splits them into recording-only
			// groups (prometheusRules) and groups with alerts (prometheusAlerts).
			var want, wantRecording, wantAlerting []any
			for _, f := range tc.ruleFiles {
				gs := yamlValue(t, goldenFile(t, f, tc.dirs...)).(map[string]any)["groups"].([]any)
				want = append(want, gs...)
			}
			for _, g := range want {
				if strings.Contains(mustJSON(t, g), `"alert":`) {
					wantAlerting = append(wantAlerting, g)
				} else {
					wantRecording = append(wantRecording, g)
				}
			}
			require.NotEmpty(t, wantRecording)
			require.NotEmpty(t, wantAlerting)
			rec := renderMixin(t, mixin, "prometheusRules").(map[string]any)["groups"].([]any)
			alerts := renderMixin(t, mixin, "prometheusAlerts").(map[string]any)["groups"].([]any)
			assert.Equal(t, wantRecording, rec)
			assert.Equal(t, wantAlerting, alerts)

			dashDir := filepath.Join(tc.dirs[0], "dashboards")
			entries, err := os.ReadDir(dashDir)
			require.NoError(t, err)
			wantDash := map[string]any{}
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".json") {
					var d any
					require.NoError(t, json.Unmarshal(goldenFile(t, filepath.Join("dashboards", e.Name()), tc.dirs...), &d))
					wantDash[e.Name()] = d
				}
			}
			if tc.name == "slo example" { // the SLO example adds a dashboard; the others are the defaults'
				for _, f := range []string{"stormwatch-overview.json", "stormwatch-dependency.json"} {
					var d any
					require.NoError(t, json.Unmarshal(goldenFile(t, filepath.Join("dashboards", f), tc.dirs...), &d))
					wantDash[f] = d
				}
			}
			assert.Equal(t, wantDash, renderMixin(t, mixin, "grafanaDashboards"))

			conf := renderMixin(t, mixin, "_config").(map[string]any)
			assert.Equal(t, "resilience", conf["metricNamespace"])
			assert.Equal(t, "5m", conf["rateWindow"])
		})
	}
}

// A user's mixin merged with ours keeps both sides' groups (groups+:).
func TestMixinMergesWithAnotherMixin(t *testing.T) {
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{"../examples/generated"}})
	out, err := vm.EvaluateAnonymousSnippet("merge.jsonnet",
		`local m = {prometheusAlerts+:: {groups+: [{name: "mine", rules: []}]}} + (import "mixin.libsonnet"); std.length(m.prometheusAlerts.groups)`)
	require.NoError(t, err)
	ours := renderMixin(t, "../examples/generated/mixin.libsonnet", "prometheusAlerts").(map[string]any)["groups"].([]any)
	assert.Equal(t, len(ours)+1, mustInt(t, out))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func mustInt(t *testing.T, s string) int {
	t.Helper()
	var n int
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(s)), &n))
	return n
}
