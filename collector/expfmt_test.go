package collector

import (
	"fmt"
	"strconv"
	"strings"
)

// histogramLines renders, in the text exposition format, the classic buckets, sum and count of
// the histogram series family{labels} whose observations are obs (in seconds): each bucket counts
// the observations ≤ its bound. labels are the series' labels before `le`, e.g. `name="x"`.
func histogramLines(family, labels string, bounds []float64, obs ...float64) string {
	var b strings.Builder
	var sum float64
	for _, o := range obs {
		sum += o
	}
	for _, le := range bounds {
		n := 0
		for _, o := range obs {
			if o <= le {
				n++
			}
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", family, labels, strconv.FormatFloat(le, 'g', -1, 64), n)
	}
	fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n", family, labels, len(obs))
	fmt.Fprintf(&b, "%s_sum{%s} %s\n", family, labels, strconv.FormatFloat(sum, 'g', -1, 64))
	fmt.Fprintf(&b, "%s_count{%s} %d\n", family, labels, len(obs))
	return b.String()
}
