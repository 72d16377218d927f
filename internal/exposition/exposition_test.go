package exposition

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const body = `# HELP c_total A counter.
# TYPE c_total counter
c_total{kind="a",name="x"} 3
c_total{kind="b",name="x"} 0
# HELP g A gauge.
# TYPE g gauge
g{name="x"} 1.5
# HELP h A histogram.
# TYPE h histogram
h_bucket{name="x",le="1"} 2
h_bucket{name="x",le="+Inf"} 4
h_sum{name="x"} 3.25
h_count{name="x"} 4
`

func TestValue(t *testing.T) {
	mfs, err := Parse(strings.NewReader(body))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"c_total", []string{"kind", "a"}, 3},
		{"c_total", []string{"name", "x", "kind", "b"}, 0},
		{"g", nil, 1.5},
		{"h", []string{"name", "x"}, 4},
	} {
		v, err := Value(mfs, tc.name, tc.labels...)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, v, tc.name)
	}
	for _, bad := range [][]string{{"c_total"}, {"c_total", "kind", "c"}, {"missing"}, {"g", "name"}} {
		_, err := Value(mfs, bad[0], bad[1:]...)
		assert.Error(t, err, bad)
	}
	_, err = Parse(strings.NewReader("not an exposition {"))
	assert.Error(t, err)
}
