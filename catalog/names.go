package catalog

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest name, in bytes, stormwatch accepts for a primitive: room for any DNS
// host name with its port, while keeping label values (stored in every series and every query)
// small. Identifiers with a tighter limit of their own (an SLO id) apply it on top.
const MaxNameLen = 256

// The one character policy of the names and ids users give stormwatch — primitive names (label
// values of every series), SLO ids — so that what one place accepts, every place accepts, and
// what ends in a label, a rule, a dashboard or a runbook reads as it is written.

// NameRune reports whether r may appear in a name or an id: a printable character (a letter, a
// mark, a number, a punctuation mark or a symbol, as unicode.IsPrint) or the ASCII space.
// Refused: control characters (newlines, tabs, NUL), format characters such as the bidi
// overrides (U+202E) and zero-width joiners, which make a name display as another, other
// spaces and separators, private-use and unassigned code points.
func NameRune(r rune) bool {
	return r == ' ' || unicode.IsPrint(r)
}

// NameProblem says what is wrong with name under the character policy (see [NameRune]), or ""
// when nothing is: it must not be empty, must be valid UTF-8, at most [MaxNameLen] bytes long,
// and made of [NameRune] characters only.
func NameProblem(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if len(name) > MaxNameLen {
		return fmt.Sprintf("is %d bytes long, more than %d", len(name), MaxNameLen)
	}
	for i, r := range name {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(name[i:]); size == 1 {
				return fmt.Sprintf("is not valid UTF-8 (byte %d)", i)
			}
		}
		if !NameRune(r) {
			return fmt.Sprintf("contains the %s %U at byte %d (names and ids hold printable characters only)", runeKind(r), r, i)
		}
	}
	return ""
}

// CheckName returns nil when value is an acceptable name or id (see [NameProblem]), else a
// *ConfigError naming field and value; the caller fills in Primitive and Name where it knows
// them.
func CheckName(field, value string) error {
	if reason := NameProblem(value); reason != "" {
		return &ConfigError{Field: field, Value: value, Reason: reason}
	}
	return nil
}

// runeKind names the category of a refused character for an error message.
func runeKind(r rune) string {
	switch {
	case unicode.IsControl(r):
		return "control character"
	case unicode.Is(unicode.Cf, r):
		return "format character"
	case unicode.IsSpace(r) || unicode.Is(unicode.Z, r):
		return "separator"
	}
	return "unprintable character"
}
