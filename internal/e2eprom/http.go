package e2eprom

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// NewClient returns an HTTP client with the given timeout per request and no keep-alive
// connections, so that no connection outlives the test (goleak).
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

// FreePort asks the kernel for a free port on 127.0.0.1.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitHTTP polls rawURL every 200ms until it answers 200. It fails the test when deadline
// passes first, or when one of procs (the processes that serve rawURL) exits.
func WaitHTTP(t testing.TB, client *http.Client, rawURL string, deadline time.Time, procs ...*Process) {
	t.Helper()
	began := time.Now()
	for {
		resp, err := client.Get(rawURL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		for _, p := range procs {
			if exited, err := p.exited(); exited {
				t.Fatalf("%s exited early (%v):\n%s", p.Name, err, p.Tail(30))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s (last error %v)", rawURL, time.Since(began).Round(time.Second), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// API reads a Prometheus server's HTTP API.
type API struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:9090.
	URL    string
	Client *http.Client
}

// GetJSON gets URL+path, requires a 200 answer and decodes its JSON body into into.
func (a API) GetJSON(t testing.TB, path string, into any) {
	t.Helper()
	rawURL := a.URL + path
	resp, err := a.Client.Get(rawURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", rawURL, body)
	require.NoError(t, json.Unmarshal(body, into), string(body))
}

// Alert is one entry of /api/v1/alerts: a pending or firing alert.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// Alerts returns the server's pending and firing alerts.
func (a API) Alerts(t testing.TB) []Alert {
	t.Helper()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	a.GetJSON(t, "/api/v1/alerts", &r)
	require.Equal(t, "success", r.Status)
	return r.Data.Alerts
}

// TargetsUp returns, per job, whether one of its targets' last scrape succeeded.
func (a API) TargetsUp(t testing.TB) map[string]bool {
	t.Helper()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			ActiveTargets []struct {
				Labels map[string]string `json:"labels"`
				Health string            `json:"health"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	a.GetJSON(t, "/api/v1/targets?state=active", &r)
	require.Equal(t, "success", r.Status)
	up := map[string]bool{}
	for _, tg := range r.Data.ActiveTargets {
		up[tg.Labels["job"]] = up[tg.Labels["job"]] || tg.Health == "up"
	}
	return up
}

// Query returns the value of an instant query that yields at most one sample, and false when
// it yields none.
func (a API) Query(t testing.TB, expr string) (float64, bool) {
	t.Helper()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	a.GetJSON(t, "/api/v1/query?query="+url.QueryEscape(expr), &r)
	require.Equal(t, "success", r.Status)
	if len(r.Data.Result) == 0 {
		return 0, false
	}
	require.Len(t, r.Data.Result, 1, expr)
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v, true
}
