package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzNamespace: ValidateNamespace never panics; an accepted namespace yields, for every
// catalog metric, series names that Prometheus's model accepts under the legacy (pre-UTF-8)
// rules, so they need no quoting in PromQL or in the text exposition; a rejected one is a
// *ConfigError naming the namespace. The seed corpus is in testdata/fuzz/FuzzNamespace.
func FuzzNamespace(f *testing.F) {
	for _, s := range []string{"", "resilience", "acme_corp", "_x", "a1", "1abc", "a-b", "trailing_", "ns:x", "a\xffb", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ns string) {
		err := ValidateNamespace(ns)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "namespace" || ce.Value != ns || ce.Reason == "" {
				t.Fatalf("%q: want a *ConfigError naming the namespace, got %#v", ns, err)
			}
			return
		}
		if len(ns) > MaxNamespaceLen {
			t.Fatalf("%q: %d bytes accepted", ns, len(ns))
		}
		for _, m := range All() {
			for _, s := range m.SeriesNames(ns) {
				if !model.LegacyValidation.IsValidMetricName(s) {
					t.Fatalf("namespace %q accepted, but series %q is not a valid metric name", ns, s)
				}
				if ns != "" && !strings.HasPrefix(s, ns+"_") {
					t.Fatalf("namespace %q: series %q does not start with it", ns, s)
				}
			}
		}
	})
}

func TestValidateNamespaceErrors(t *testing.T) {
	err := ValidateNamespace(strings.Repeat("a", MaxNamespaceLen+1))
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "65 bytes, at most 64 allowed", ce.Reason)
	require.NoError(t, ValidateNamespace(strings.Repeat("a", MaxNamespaceLen)))
	assert.Equal(t, `namespace = "1abc": invalid character '1' at offset 0 (want [a-zA-Z_][a-zA-Z0-9_]*)`, ValidateNamespace("1abc").Error())
}

// TestConfigErrorWithoutField: an error about the whole of something (a file too large) has
// no field; the message does not show an empty one.
func TestConfigErrorWithoutField(t *testing.T) {
	assert.Equal(t, `config "c.yaml": larger than 1024 KiB`, (&ConfigError{Primitive: "config", Name: "c.yaml", Reason: "larger than 1024 KiB"}).Error())
	assert.Equal(t, `"x": bad`, (&ConfigError{Value: "x", Reason: "bad"}).Error())
}
