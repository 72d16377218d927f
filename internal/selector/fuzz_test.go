package selector

import (
	"errors"
	"testing"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// samples are label values every accepted matcher is evaluated on: Matches must agree before
// and after a round trip.
var samples = []string{"", "a", "x", "prod", "staging", "dev", "checkout", "10.0.0.1:9464", "é", "a\nb", "\xff", "a|b", "A"}

// FuzzSelector checks, for any input, that the parser never panics; that a refusal is a
// *catalog.ConfigError naming the selector; that an accepted selector renders back to PromQL
// that parses to the same matchers, which match the same values; that what Parse accepts the
// grammar alone (ParsePromQL) accepts with the same matchers; and that whatever the grammar
// accepts round-trips too. The seed corpus is testdata/fuzz/FuzzSelector; parity with the
// PromQL parser itself is FuzzSelectorParity in the conformance module.
func FuzzSelector(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := Parse("rules", s)
		if err != nil {
			var ce *catalog.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Parse(%q): error %T %v is not a *catalog.ConfigError", s, err, err)
			}
			if ce.Primitive != "rules" || ce.Field != "selector" || ce.Value != s || ce.Reason == "" {
				t.Fatalf("Parse(%q): error %#v does not name the selector", s, ce)
			}
		} else {
			if len(ms) > MaxMatchers || len(s) > MaxLen {
				t.Fatalf("Parse(%q) accepted %d matchers from %d bytes", s, len(ms), len(s))
			}
			again, err := Parse("rules", ms.String())
			if err != nil {
				t.Fatalf("Parse(%q) = %s, which does not parse again: %v", s, ms, err)
			}
			sameMatchers(t, s, ms, again)
			grammar, err := ParsePromQL(s)
			if err != nil {
				t.Fatalf("Parse accepted %q, ParsePromQL refused it: %v", s, err)
			}
			sameMatchers(t, s, ms, grammar)
		}

		ms, err = ParsePromQL(s)
		if err != nil {
			var ce *catalog.ConfigError
			if !errors.As(err, &ce) || ce.Field != "selector" || ce.Value != s {
				t.Fatalf("ParsePromQL(%q): error %T %v does not name the selector", s, err, err)
			}
			return
		}
		again, err := ParsePromQL(ms.String())
		if err != nil {
			t.Fatalf("ParsePromQL(%q) = %s, which does not parse again: %v", s, ms, err)
		}
		sameMatchers(t, s, ms, again)
	})
}

func sameMatchers(t *testing.T, in string, want, got Matchers) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%q: %d matchers (%s), then %d (%s)", in, len(want), want, len(got), got)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Name != g.Name || w.Type != g.Type || w.Value != g.Value {
			t.Fatalf("%q: matcher %d is %s, then %s", in, i, w, g)
		}
		for _, v := range samples {
			if w.Matches(v) != g.Matches(v) {
				t.Fatalf("%q: %s and %s disagree on %q", in, w, g, v)
			}
		}
	}
}
