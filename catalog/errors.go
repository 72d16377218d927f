package catalog

import "fmt"

// ConfigError is stormwatch's one configuration error: every primitive's constructor and
// Reconfigure, the registry, the pipeline and the generators' configurations report an invalid
// setting with it, naming what was being configured, the field, the rejected value and why.
// Inspect it with errors.As; never match the message text.
type ConfigError struct {
	// Primitive is what was being configured: a primitive kind ("circuitbreaker", "retry", …),
	// "pipeline", "registry", or a generator's configuration ("rules", "dashboards").
	Primitive string
	// Name is the configured instance's name (a primitive's name, a config file); may be empty.
	Name string
	// Field is the setting, spelled as the user wrote it: a Go field path
	// ("Backoff.Multiplier") or a configuration key path ("alerts.RetryRateHigh.threshold").
	Field string
	// Value is the rejected value.
	Value any
	// Reason says what is wrong with it and, where possible, what would be right.
	Reason string
}

// Error implements error: `retry "payments": Backoff.Multiplier = 0.5: must be at least 1`.
func (e *ConfigError) Error() string {
	prefix := e.Primitive
	if e.Name != "" {
		if prefix != "" {
			prefix += " "
		}
		prefix += fmt.Sprintf("%q", e.Name)
	}
	if prefix != "" {
		prefix += ": "
	}
	switch {
	case e.Field == "" && e.Value == nil:
		return prefix + e.Reason
	case e.Field == "":
		return fmt.Sprintf("%s%v: %s", prefix, formatValue(e.Value), e.Reason)
	case e.Value == nil:
		return fmt.Sprintf("%s%s: %s", prefix, e.Field, e.Reason)
	}
	return fmt.Sprintf("%s%s = %v: %s", prefix, e.Field, formatValue(e.Value), e.Reason)
}

// maxValueLen bounds how much of a rejected value an error message repeats: an oversized input
// (a 10 MB selector) must not become a 10 MB error message.
const maxValueLen = 120

func formatValue(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		if len(v) > maxValueLen {
			return fmt.Sprintf("%q… (%d bytes)", truncate(v, maxValueLen), len(v))
		}
		return fmt.Sprintf("%q", v)
	case fmt.Stringer:
		s = v.String()
	default:
		s = fmt.Sprint(v)
	}
	if len(s) > maxValueLen {
		return truncate(s, maxValueLen) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
