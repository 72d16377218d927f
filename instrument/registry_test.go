package instrument

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
)

type fake struct{ name string }

func newFake(name string) (*fake, error) { return &fake{name: name}, nil }

func TestRegistryOptionsValidate(t *testing.T) {
	_, err := NewRegistry(WithMaxNames(0))
	var ce *ConfigError
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
	var ce *ConfigError
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
	assert.Equal(t, uint64(2), r.Overflowed(catalog.Primitive("test")))
	assert.Equal(t, uint64(0), r.Overflowed(catalog.CircuitBreaker), "other kinds unaffected")

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
	assert.Equal(t, uint64(32*50), r.Overflowed(catalog.Primitive("test")), "every refused get-or-create counted")
}
