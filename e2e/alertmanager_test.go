//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
	"github.com/stormwatch-go/stormwatch/rules"
)

// outagePage is the critical alert a sustained outage with user impact raises (the first
// source of the generated fragment's inhibition table; the test checks that the fragment
// routes and inhibits with it).
const outagePage = rules.AlertDependencyOutage

// amScale is how many times faster than real time the notification test runs: the fragment's
// group_wait, group_interval and repeat_interval are divided by it, and so are the minutes of
// the timeline (one minute of the outage lasts one second).
const amScale = 60

// firing is one alert of the outage timeline: its labels, and the minute of the outage at which
// it fires (it keeps firing until the end of the outage).
type firing struct {
	at     float64
	labels map[string]string
}

// outageTimeline models what fires in the 20-minute outage scenario with the default rules at
// real time: payments goes down (its breaker is stuck open on one instance, its retries no
// longer rescue, its fallback answers; the outage page fires within 10 minutes), inventory turns
// flaky (retries rescue it, at the cost of its budget) and recommendations slow (its bulkhead
// queues and rejects). Thirteen alerts, three dependencies.
func outageTimeline() []firing {
	a := func(at float64, alert, severity, dep string, extra ...string) firing {
		l := map[string]string{"alertname": alert, "severity": severity, "job": "checkout", "name": dep}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return firing{at, l}
	}
	return []firing{
		a(3, rules.AlertStuckOpen, "warning", "payments", "instance", "10.0.0.1:9464", "cause", "failure_rate"),
		a(5, rules.AlertRetriesNotRescuing, "warning", "payments"),
		a(5, rules.AlertRetryRateHigh, "warning", "payments"),
		a(6, rules.AlertRejectingCalls, "info", "payments"),
		a(8, outagePage, "critical", "payments"),
		a(15, rules.AlertFallbackSustained, "warning", "payments"),
		a(5, rules.AlertRetryRateHigh, "warning", "inventory"),
		a(7, rules.AlertRetryBudgetExhausted, "warning", "inventory"),
		a(15, rules.AlertFallbackSustained, "warning", "inventory"),
		a(5, rules.AlertBulkheadRejectionsHigh, "warning", "recommendations"),
		a(10, rules.AlertBulkheadSaturated, "warning", "recommendations"),
		a(10, rules.AlertSlowCallRateHigh, "warning", "recommendations", "instance", "10.0.0.2:9464"),
		a(15, rules.AlertFallbackSustained, "warning", "recommendations"),
	}
}

// notification is one webhook notification as Alertmanager posts it.
type notification struct {
	Receiver    string            `json:"receiver"`
	Status      string            `json:"status"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

// webhook records the notifications it receives.
type webhook struct {
	mu  sync.Mutex
	got []notification
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var n notification
	if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.got = append(w.got, n)
	w.mu.Unlock()
}

func (w *webhook) notifications() []notification {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]notification(nil), w.got...)
}

// scaleTimings divides every group_wait, group_interval and repeat_interval of an Alertmanager
// configuration by amScale.
func scaleTimings(t *testing.T, node any) {
	switch v := node.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "group_wait" || k == "group_interval" || k == "repeat_interval" {
				d, err := model.ParseDuration(x.(string))
				require.NoError(t, err)
				v[k] = fmt.Sprintf("%dms", (time.Duration(d) / amScale).Milliseconds())
				continue
			}
			scaleTimings(t, x)
		}
	case []any:
		for _, x := range v {
			scaleTimings(t, x)
		}
	}
}

// alertmanagerConfig is the generated fragment with its timings scaled, its placeholder
// receivers sending to the webhook (one path per receiver), and, unless inhibit, without its
// inhibit rules.
func alertmanagerConfig(t *testing.T, hook string, inhibit bool) []byte {
	t.Helper()
	frag, err := rules.GenerateAlertmanager(rules.Config{})
	require.NoError(t, err)
	require.Contains(t, string(frag), `alertname="`+outagePage+`"`, "the fragment inhibits with the outage page: keep outagePage equal to its name")
	var c map[string]any
	require.NoError(t, yaml.Unmarshal(frag, &c))
	scaleTimings(t, c)
	for _, rc := range c["receivers"].([]any) {
		m := rc.(map[string]any)
		m["webhook_configs"] = []any{map[string]any{"url": hook + "/" + m["name"].(string), "send_resolved": true}}
	}
	if !inhibit {
		delete(c, "inhibit_rules")
	}
	b, err := yaml.Marshal(c)
	require.NoError(t, err)
	return b
}

// startAlertmanager starts Alertmanager 0.35 on loopback, without clustering, and returns its
// base URL.
func startAlertmanager(t *testing.T, bin, dir, name string, config []byte) string {
	t.Helper()
	dir = filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alertmanager.yml"), config, 0o644))
	addr := fmt.Sprintf("127.0.0.1:%d", e2eprom.FreePort(t))
	p := e2eprom.Start(t, e2eprom.Command{Name: name, Dir: dir, Bin: bin, Args: []string{
		"--config.file=alertmanager.yml", "--storage.path=data", "--web.listen-address=" + addr,
		"--cluster.listen-address=", "--log.level=warn"}})
	url := "http://" + addr
	e2eprom.WaitHTTP(t, client, url+"/-/ready", time.Now().Add(30*time.Second), p)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s log (tail) ---\n%s", name, p.Tail(20))
		}
	})
	return url
}

// postAlerts posts the alerts firing at minute m of the timeline, as Prometheus re-sends them:
// every (scaled) minute, valid for four more.
func postAlerts(t *testing.T, url string, timeline []firing, m float64, now time.Time) {
	t.Helper()
	type alert struct {
		Labels   map[string]string `json:"labels"`
		StartsAt time.Time         `json:"startsAt"`
		EndsAt   time.Time         `json:"endsAt"`
	}
	var as []alert
	for _, f := range timeline {
		if f.at <= m {
			as = append(as, alert{f.labels, now.Add(-time.Duration((m - f.at) * float64(time.Minute) / amScale)), now.Add(4 * time.Minute / amScale)})
		}
	}
	if len(as) == 0 {
		return
	}
	b, err := json.Marshal(as)
	require.NoError(t, err)
	resp, err := client.Post(url+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestOutageNotifiesAtMostTwicePerDependency replays the outage scenario's alerts (twenty
// minutes, scaled to twenty seconds) into two real Alertmanagers 0.35 on loopback, one with the
// generated fragment and one with the fragment without its inhibit rules, both notifying a
// webhook on loopback. With the fragment, every dependency is notified at least once and at most
// twice; payments, whose breaker is stuck open and which pages, gets the stuck breaker (ticket)
// and then the page, and never a notification naming one of its symptoms. Without the inhibit
// rules, payments' symptoms are notified too.
func TestOutageNotifiesAtMostTwicePerDependency(t *testing.T) {
	root := e2eprom.ModuleRoot(t)
	bin := filepath.Join(root, "bin", "alertmanager")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/alertmanager missing (%v): run scripts/install-tools.sh alertmanager", err)
	}
	dir := t.TempDir()
	hooks := map[bool]*webhook{true: {}, false: {}}
	urls := map[bool]string{}
	for _, inhibit := range []bool{true, false} {
		srv := httptest.NewServer(hooks[inhibit])
		t.Cleanup(srv.Close)
		urls[inhibit] = startAlertmanager(t, bin, dir, fmt.Sprintf("alertmanager-inhibit-%t", inhibit), alertmanagerConfig(t, srv.URL, inhibit))
	}
	timeline := outageTimeline()
	start := time.Now()
	const minutes = 20 // the outage; the last alert fires at 15
	tick := time.NewTicker(time.Minute / amScale / 2)
	defer tick.Stop()
	for now := range tick.C {
		m := float64(now.Sub(start)) / float64(time.Minute/amScale)
		if m > minutes {
			break
		}
		for _, inhibit := range []bool{true, false} {
			postAlerts(t, urls[inhibit], timeline, m, now)
		}
	}

	perDep := notificationsPerDependency(t, hooks[true].notifications())
	for _, dep := range []string{"payments", "inventory", "recommendations"} {
		ns := perDep[dep]
		t.Logf("%s: %d notifications: %s", dep, len(ns), describe(ns))
		assert.NotEmpty(t, ns, "%s is notified", dep)
		assert.LessOrEqual(t, len(ns), 2, "%s: at most two notifications for one incident", dep)
	}
	if pay := perDep["payments"]; assert.Len(t, pay, 2) {
		assert.Equal(t, rules.ReceiverTicket+" firing ["+rules.AlertStuckOpen+"]", describe(pay[:1]))
		assert.Equal(t, rules.ReceiverPage+" firing ["+outagePage+"]", describe(pay[1:]))
	}
	without := notificationsPerDependency(t, hooks[false].notifications())
	t.Logf("without inhibit rules, payments: %d notifications: %s", len(without["payments"]), describe(without["payments"]))
	assert.Contains(t, describe(without["payments"]), rules.AlertRetriesNotRescuing, "without the inhibit rules the symptoms are notified")
}

// notificationsPerDependency groups the notifications by the name group label, checking that
// each is grouped by job and name and that none went to the fragment's root receiver.
func notificationsPerDependency(t *testing.T, ns []notification) map[string][]notification {
	out := map[string][]notification{}
	for _, n := range ns {
		assert.NotEqual(t, rules.ReceiverDefault, n.Receiver, "every stormwatch alert is routed")
		assert.Equal(t, map[string]string{"job": "checkout", "name": n.GroupLabels["name"]}, n.GroupLabels, "grouped per dependency")
		out[n.GroupLabels["name"]] = append(out[n.GroupLabels["name"]], n)
	}
	return out
}

// describe renders notifications as "receiver status [alertnames]", separated by "; ".
func describe(ns []notification) string {
	var parts []string
	for _, n := range ns {
		var names []string
		for _, a := range n.Alerts {
			names = append(names, a.Labels["alertname"])
		}
		parts = append(parts, n.Receiver+" "+n.Status+" ["+strings.Join(names, " ")+"]")
	}
	return strings.Join(parts, "; ")
}
