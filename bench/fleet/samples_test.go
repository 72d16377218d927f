package main

import (
	"strings"
	"testing"
)

func TestSelectors(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`sum by (job, name, kind) (rate(resilience_retry_calls_total[5m]))`, `resilience_retry_calls_total`},
		{"(a:b:rate5m * 300 >= 10) / 300\n/\n(a:b:rate5m + c:d:rate5m)\n> 0.1", `a:b:rate5m a:b:rate5m c:d:rate5m`},
		{`x offset 1h / (avg_over_time(y[1h] offset 15m) > 0) or on (job, name) z`, `x y z`},
		{`max by (job, instance) (last_over_time(s{state=~"open|half_open"}[45s])) > 0 and on (job, instance) t`, `s{state=~"open|half_open"} t`},
		{`k >= 3 or on (job) (k > 0 and on (job) ALERTS{alertname="F", alertstate="firing"})`, `k k ALERTS{alertname="F", alertstate="firing"}`},
		{`time() - topk by (job) (1, u) unless on (job) u == 0`, `u u`},
	} {
		if got := strings.Join(selectors(c.expr), " "); got != c.want {
			t.Errorf("selectors(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}
