package instrument

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

type fake struct{ name string }

func newFake(name string) (*fake, error) { return &fake{name: name}, nil }

func TestRegistryOptionsValidate(t *testing.T) {
	_, err := NewRegistry(WithMaxNames(0))
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, string(catalog.Registry), ce.Primitive)
	assert.Equal(t, "MaxNames", ce.Field)
	assert.Equal(t, 0, ce.Value)
	assert.EqualError(t, err, "registry: MaxNames = 0: must be at least 1")
	_, err = NewRegistry(WithEvents(nil))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Events", ce.Field)

	r, err := NewRegistry()
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxNames, r.MaxNames())
	assert.NotNil(t, r.Events())
}

func TestFamilyGetOrCreate(t *testing.T) {
	r, err := NewRegistry(WithMaxNames(2))
	require.NoError(t, err)
	f := familyOf[*fake](r, catalog.Primitive("test"))
	assert.Same(t, f, familyOf[*fake](r, catalog.Primitive("test")), "one family per kind")

	a, err := f.get("a", newFake)
	require.NoError(t, err)
	a2, err := f.get("a", newFake)
	require.NoError(t, err)
	assert.Same(t, a, a2, "same name, same instance")

	_, err = f.get("", newFake)
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "test", ce.Primitive)
	assert.Equal(t, "name", ce.Field)

	b, err := f.get("b", newFake)
	require.NoError(t, err)
	assert.NotSame(t, a, b)

	// The guard is reached: new names share the overflow instance and are counted.
	c, err := f.get("c", newFake)
	require.NoError(t, err)
	d, err := f.get("d", newFake)
	require.NoError(t, err)
	assert.Same(t, c, d)
	assert.Equal(t, catalog.OverflowName, c.name)
	assert.Equal(t, uint64(2), r.OverflowCount(catalog.Primitive("test")))
	assert.Equal(t, uint64(0), r.OverflowCount(catalog.CircuitBreaker), "other kinds unaffected")

	// Existing names keep working after the guard is reached.
	a3, err := f.get("a", newFake)
	require.NoError(t, err)
	assert.Same(t, a, a3)

	var names []string
	for _, n := range f.all() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{catalog.OverflowName, "a", "b"}, names, "sorted snapshot")

	got, ok := f.lookup("b")
	assert.True(t, ok)
	assert.Same(t, b, got)
	_, ok = f.lookup("zzz")
	assert.False(t, ok)
}

func TestFamilyCreateErrorIsReturnedAndNotStored(t *testing.T) {
	r, err := NewRegistry()
	require.NoError(t, err)
	f := familyOf[*fake](r, catalog.Primitive("test"))
	boom := errors.New("bad config")
	_, err = f.get("x", func(string) (*fake, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	assert.Empty(t, f.all())
	v, err := f.get("x", newFake)
	require.NoError(t, err)
	assert.Equal(t, "x", v.name)
}

func TestFamilyConcurrentGetOrCreate(t *testing.T) {
	r, err := NewRegistry(WithMaxNames(50))
	require.NoError(t, err)
	f := familyOf[*fake](r, catalog.Primitive("test"))
	var created sync.Map
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				name := fmt.Sprintf("n%d", i)
				v, err := f.get(name, newFake)
				if err != nil {
					t.Error(err)
					return
				}
				if prev, loaded := created.LoadOrStore(name, v); loaded && prev != v {
					t.Errorf("two instances for %s", name)
				}
			}
		}()
	}
	wg.Wait()
	assert.Len(t, f.all(), 51, "50 names and the overflow instance")
	assert.Equal(t, uint64(32*50), r.OverflowCount(catalog.Primitive("test")), "every refused get-or-create counted")
}

func TestRegistryRefusesNamesThatAreNotLabelValues(t *testing.T) {
	long := strings.Repeat("a", MaxNameLen+1)
	bad := []struct {
		name, name2 string
		reason      string
	}{
		{"invalid UTF-8", "bad\xffname", "not valid UTF-8 (byte 3)"},
		{"truncated UTF-8", "caf\xc3", "not valid UTF-8 (byte 3)"},
		{"newline", "pay\nments", "control character U+000A at byte 3"},
		{"NUL", "x\x00", "control character U+0000 at byte 1"},
		{"DEL", "x\x7f", "control character U+007F"},
		{"C1 control", "x\u0085", "control character U+0085"},
		{"too long", long, fmt.Sprintf("is %d bytes long, more than %d", MaxNameLen+1, MaxNameLen)},
		{"empty", "", "must not be empty"},
		{"bidi override", "pay\u202Eipa", "format character U+202E at byte 3"},
		{"zero-width joiner", "a\u200Db", "format character U+200D"},
		{"line separator", "a\u2028b", "separator U+2028"},
		{"the overflow instance's name", catalog.OverflowName, "is reserved"},
	}
	cfgs := map[string]func(r *Registry, name string) error{
		"circuitbreaker": func(r *Registry, name string) error { _, err := r.Breaker(name, breaker.Config{}); return err },
		"retry":          func(r *Registry, name string) error { _, err := r.Retry(name, retry.Config{}); return err },
		"bulkhead":       func(r *Registry, name string) error { _, err := r.Bulkhead(name, bulkhead.Config{}); return err },
		"timeout":        func(r *Registry, name string) error { _, err := r.Timeout(name, timeout.Config{}); return err },
		"fallback":       func(r *Registry, name string) error { _, err := r.Fallback(name, fallback.Config{}); return err },
		"pipeline": func(r *Registry, name string) error {
			_, err := r.Pipeline(name, PipelineConfig{Retry: &retry.Config{}, Breaker: &breaker.Config{}})
			return err
		},
		"pipeline without layers": func(r *Registry, name string) error { _, err := r.Pipeline(name, PipelineConfig{}); return err },
	}
	for kind, get := range cfgs {
		for _, b := range bad {
			t.Run(kind+"/"+b.name, func(t *testing.T) {
				// Also past the cardinality guard: a bad name never reaches the overflow instance.
				for _, maxNames := range []int{DefaultMaxNames, 1} {
					r, err := NewRegistry(WithMaxNames(maxNames))
					require.NoError(t, err)
					if maxNames == 1 {
						require.NoError(t, get(r, "first"))
					}
					err = get(r, b.name2)
					var ce *catalog.ConfigError
					require.ErrorAs(t, err, &ce)
					assert.Equal(t, "name", ce.Field)
					assert.Equal(t, b.name2, ce.Value, "the error names the value")
					assert.Contains(t, err.Error(), b.reason)
					assert.LessOrEqual(t, len(err.Error()), 400, "an oversized name is not repeated whole")
					for _, p := range catalog.Primitives {
						assert.Zero(t, r.OverflowCount(p), "a refused name is not an overflow")
					}
				}
			})
		}
	}
	r, err := NewRegistry()
	require.NoError(t, err)
	for _, good := range []string{"payments-api", "ünïcode.example:8443", "api.example.com:443", strings.Repeat("é", MaxNameLen/2), "\uFFFD", "_overflow2", "a b"} {
		_, err := r.Breaker(good, breaker.Config{})
		assert.NoError(t, err, "%q", good)
	}
}

func TestSanitizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"payments-api", "payments-api"},
		{"ünï.example:443", "ünï.example:443"},
		{"bad\xffname", "bad\uFFFDname"},
		{"\xff\xfe", "\uFFFD\uFFFD"},
		{"caf\xc3", "caf\uFFFD"},
		{"a\nb\tc\x00", "a\uFFFDb\uFFFDc\uFFFD"},
		{"x\u0085y", "x\uFFFDy"},
		{"pay\u202Eipa", "pay\uFFFDipa"},
		{catalog.OverflowName, "\uFFFDoverflow"},
		{"", ""},
		{strings.Repeat("a", MaxNameLen+10), strings.Repeat("a", MaxNameLen)},
		// Cut on a character boundary: 255 bytes of 'a' and a 2-byte 'é' would be 257.
		{strings.Repeat("a", MaxNameLen-1) + "é", strings.Repeat("a", MaxNameLen-1)},
		{strings.Repeat("a", MaxNameLen-2) + "\xff", strings.Repeat("a", MaxNameLen-2)}, // U+FFFD (3 bytes) would not fit
	}
	for _, tt := range tests {
		got := SanitizeName(tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
		if got != "" {
			assert.Empty(t, nameProblem(got), "%q is accepted", got)
		}
	}
	ok := "api.example.com:443"
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = SanitizeName(ok) }), "an acceptable name costs no allocation")
}

func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"bad\xffname", "a\nb", "", "ünï", strings.Repeat("é", 200), "x\u0085", "\xc3", "\u202E", catalog.OverflowName} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SanitizeName(s)
		if s == "" {
			if got != "" {
				t.Fatalf("SanitizeName(\"\") = %q", got)
			}
			return
		}
		if p := nameProblem(got); p != "" {
			t.Fatalf("SanitizeName(%q) = %q, which the registry refuses: %s", s, got, p)
		}
		if nameProblem(s) == "" && got != s {
			t.Fatalf("SanitizeName changed the acceptable name %q to %q", s, got)
		}
		if SanitizeName(got) != got {
			t.Fatalf("SanitizeName is not idempotent on %q", s)
		}
	})
}
