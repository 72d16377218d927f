package rules

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// SLO ids follow the character policy of primitive names (catalog.NameRune): what a registry
// refuses as a name, an SLO id refuses too, and the other way round.
func TestSLOIDsFollowTheNamePolicy(t *testing.T) {
	for _, id := range []string{"pay\u202Eipa", "a\u200Db", "a\u2028b", "a\tb", "x\u0085", "payments", "ünïcode.example:8443", "a b", "\uFFFD"} {
		err := Config{SLOs: []SLO{{ID: id, Name: "payments", Objective: 0.999}}}.Validate()
		if catalog.NameProblem(id) != "" {
			assert.Error(t, err, "%q", id)
		} else {
			assert.NoError(t, err, "%q", id)
		}
	}
}
