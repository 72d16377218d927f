package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestExporterRunsEveryPath checks that each dependency of an exporter has run every path of a
// retry around a breaker, as its /metrics show.
func TestExporterRunsEveryPath(t *testing.T) {
	e, err := newExporter(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range []string{dependencyName(0), dependencyName(2)} {
		for _, want := range []string{
			`resilience_retry_calls_total{kind="successful_without_retry",name="` + dep + `"}`,
			`resilience_retry_calls_total{kind="successful_with_retry",name="` + dep + `"}`,
			`resilience_retry_calls_total{kind="failed_with_retry",name="` + dep + `"}`,
			`resilience_retry_budget_denied_total{name="` + dep + `"}`,
			`resilience_circuitbreaker_transitions_total{from="closed",name="` + dep + `",to="open"}`,
			`resilience_circuitbreaker_not_permitted_calls_total{name="` + dep + `"}`,
		} {
			if v := sample(string(body), want); v <= 0 {
				t.Errorf("%s = %v, want > 0", want, v)
			}
		}
		if v := sample(string(body), `resilience_circuitbreaker_state{name="`+dep+`",state="closed"}`); v != 1 {
			t.Errorf("%s: breaker not closed again after the probe (state closed = %v)", dep, v)
		}
	}
}

// sample returns the value of the series written exactly as series in the exposition, or -1.
func sample(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.Fields(v)[0], 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}
