package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNamePolicy(t *testing.T) {
	good := []string{"payments-api", "api.example.com:443", "ünïcode", "a b", "\uFFFD", "日本語", strings.Repeat("é", MaxNameLen/2)}
	for _, s := range good {
		assert.Empty(t, NameProblem(s), "%q", s)
		assert.NoError(t, CheckName("name", s))
	}
	bad := map[string]string{
		"":                                "must not be empty",
		"bad\xffname":                     "not valid UTF-8 (byte 3)",
		"pay\nments":                      "control character U+000A at byte 3",
		"x\u0085":                         "control character U+0085",
		"pay\u202Eipa":                    "format character U+202E at byte 3",
		"a\u200Bb":                        "format character U+200B",
		"a\u2029b":                        "separator U+2029",
		"a\u00A0b":                        "separator U+00A0",
		"a\uE000b":                        "unprintable character U+E000",
		strings.Repeat("a", MaxNameLen+1): "is 257 bytes long, more than 256",
	}
	for s, want := range bad {
		assert.Contains(t, NameProblem(s), want, "%q", s)
		err := CheckName("slos[0].id", s)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%q", s)
		assert.Equal(t, "slos[0].id", ce.Field)
		assert.Equal(t, s, ce.Value)
	}
}
