package dashboards

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Every generated dashboard fits a ConfigMap as Kubernetes constrains it: a DNS-1123 subdomain
// name, data keys matching [-._a-zA-Z0-9]+, at most 1 MiB of data; the sidecar label is set and
// the data is the dashboard file byte for byte.
func TestConfigMapsMeetKubernetesConstraints(t *testing.T) {
	files, err := Generate(Config{})
	require.NoError(t, err)
	cms, err := ConfigMaps(files, ConfigMapOptions{Name: "stormwatch-checkout", Namespace: "monitoring",
		Labels: map[string]string{"release": "kps"}, SidecarLabel: "grafana_dashboard", SidecarValue: "1"})
	require.NoError(t, err)
	require.Len(t, cms, len(files))
	name := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	key := regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
	for i, cm := range cms {
		var doc struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string
			Metadata   struct {
				Name, Namespace string
				Labels          map[string]string
			}
			Data map[string]string
		}
		require.NoError(t, yaml.Unmarshal(cm.Data, &doc))
		assert.Equal(t, "v1", doc.APIVersion)
		assert.Equal(t, "ConfigMap", doc.Kind)
		assert.Regexp(t, name, doc.Metadata.Name)
		assert.LessOrEqual(t, len(doc.Metadata.Name), 253)
		assert.Equal(t, doc.Metadata.Name+".yaml", cm.Path)
		assert.True(t, strings.HasPrefix(doc.Metadata.Name, "stormwatch-checkout-dashboard-"))
		assert.Equal(t, "monitoring", doc.Metadata.Namespace)
		assert.Equal(t, map[string]string{"release": "kps", "grafana_dashboard": "1"}, doc.Metadata.Labels)
		require.Len(t, doc.Data, 1)
		size := 0
		for k, v := range doc.Data {
			assert.Regexp(t, key, k)
			assert.Equal(t, string(files[i].Data), v)
			size += len(k) + len(v)
		}
		assert.LessOrEqual(t, size, MaxConfigMapBytes)
	}
}

func TestConfigMapsRefuseWhatKubernetesRefuses(t *testing.T) {
	o := ConfigMapOptions{Name: "stormwatch", SidecarLabel: "grafana_dashboard", SidecarValue: "1"}
	_, err := ConfigMaps([]File{{Path: "dashboards/big.json", Data: bytes.Repeat([]byte("x"), MaxConfigMapBytes+1)}}, o)
	assert.ErrorContains(t, err, "over a ConfigMap's 1048576")
	_, err = ConfigMaps([]File{{Path: "dashboards/a b-x.json", Data: []byte("{}")}}, o)
	assert.ErrorContains(t, err, `data key "a b-x.json"`)
	_, err = ConfigMaps([]File{{Path: "dashboards/x-Über.json", Data: []byte("{}")}}, o)
	assert.ErrorContains(t, err, "not a DNS-1123 subdomain")
	cms, err := ConfigMaps([]File{{Path: "dashboards/provisioning.yaml", Data: []byte("x")}}, o)
	require.NoError(t, err)
	assert.Empty(t, cms, "only dashboards become ConfigMaps")
}
