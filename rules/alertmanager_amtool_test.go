package rules

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// amtoolPath is where scripts/install-tools.sh puts amtool 0.35.
const amtoolPath = "../bin/amtool"

func amtool(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(amtoolPath)
	require.NoError(t, err)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("bin/amtool is absent (%v): run scripts/install-tools.sh amtool (CI does: make alertmanager-check) to check the Alertmanager fragment", err)
	}
	return p
}

// runAmtool runs amtool with args and returns its combined output and whether it succeeded.
func runAmtool(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, amtool(t), args...).CombinedOutput()
	require.NoError(t, ctx.Err(), "amtool timed out")
	return string(out), err == nil
}

// userAlertmanager is an Alertmanager configuration of a user's own, with routes of its own, into
// which embedAlertmanager merges the fragment.
const userAlertmanager = `global:
  resolve_timeout: 5m
route:
  receiver: team-default
  group_by: [alertname]
  routes:
    - receiver: db-team
      matchers: ['team="db"']
receivers:
  - name: team-default
  - name: db-team
    webhook_configs:
      - url: http://127.0.0.1:9/db
inhibit_rules:
  - source_matchers: ['alertname="DatabaseDown"']
    target_matchers: ['team="db"', 'alertname!="DatabaseDown"']
    equal: [cluster]
`

// embedAlertmanager merges the fragment into user as its header says: route.routes[0] first
// among the user's routes, the inhibit rules appended, the placeholder receivers given webhook
// integrations (receiverURL(name)); the fragment's root receiver is left out.
func embedAlertmanager(t *testing.T, user string, fragment []byte, receiverURL func(string) string) []byte {
	t.Helper()
	var u, f map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(user), &u))
	require.NoError(t, yaml.Unmarshal(fragment, &f))
	uRoute, fRoute := u["route"].(map[string]any), f["route"].(map[string]any)
	userRoutes, _ := uRoute["routes"].([]any)
	uRoute["routes"] = append(fRoute["routes"].([]any), userRoutes...)
	for _, rc := range f["receivers"].([]any) {
		name := rc.(map[string]any)["name"].(string)
		if name == ReceiverDefault {
			continue
		}
		u["receivers"] = append(u["receivers"].([]any), map[string]any{
			"name": name, "webhook_configs": []any{map[string]any{"url": receiverURL(name)}},
		})
	}
	userInhibit, _ := u["inhibit_rules"].([]any)
	u["inhibit_rules"] = append(userInhibit, f["inhibit_rules"].([]any)...)
	b, err := yaml.Marshal(u)
	require.NoError(t, err)
	return b
}

func writeAmConfig(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "alertmanager.yml")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// TestAmtoolChecksTheFragment runs amtool check-config on the fragment on its own and embedded
// into a configuration of a user's own, for the defaults and a group_by + selector config.
func TestAmtoolChecksTheFragment(t *testing.T) {
	amtool(t)
	for name, cfg := range map[string]Config{
		"defaults": {},
		"group_by cluster and job, with a selector": {GroupBy: []string{"cluster", "job"}, Selector: `env="prod"`},
	} {
		t.Run(name, func(t *testing.T) {
			frag, err := GenerateAlertmanager(cfg)
			require.NoError(t, err)
			out, ok := runAmtool(t, "check-config", writeAmConfig(t, frag))
			assert.True(t, ok, "amtool check-config on the fragment:\n%s", out)
			assert.Contains(t, out, "SUCCESS")
			full := embedAlertmanager(t, userAlertmanager, frag, func(r string) string { return "http://127.0.0.1:9/" + r })
			out, ok = runAmtool(t, "check-config", writeAmConfig(t, full))
			assert.True(t, ok, "amtool check-config on the embedded fragment:\n%s\n%s", out, full)
			assert.Contains(t, out, "5 inhibit rules")
		})
	}
}

// routeCase is one alert and the receiver Alertmanager must route it to.
type routeCase struct {
	labels   []string
	receiver string
}

// alertRouteCases are one case per alert of cfg: its name, its severity as configured, a
// dependency (and an instance for the per-process alerts), to the page receiver when critical
// and the ticket receiver otherwise; the outage page's placeholder, critical; and alerts of the
// user's own, which keep their routes.
func alertRouteCases(t *testing.T, cfg Config) []routeCase {
	t.Helper()
	r, err := cfg.resolve()
	require.NoError(t, err)
	var cases []routeCase
	for _, sp := range specs {
		s := r.alerts[sp.name]
		labels := []string{"alertname=" + sp.name, "severity=" + s.severity, "job=checkout", "name=payments"}
		if sp.perInstance {
			labels = append(labels, "instance=10.0.0.1:9464")
		}
		want := ReceiverTicket
		if s.severity == "critical" {
			want = ReceiverPage
		}
		cases = append(cases, routeCase{labels, want})
	}
	return append(cases,
		routeCase{[]string{"alertname=DatabaseDown", "severity=critical", "team=db"}, "db-team"},
		routeCase{[]string{"alertname=DiskFull", "severity=critical"}, "team-default"},
	)
}

// TestAmtoolRoutesEveryAlert runs amtool config routes test, one case per alert: every alert
// reaches stormwatch's route and the receiver of its severity, in the defaults and with
// severities overridden; the user's own alerts keep their routes.
func TestAmtoolRoutesEveryAlert(t *testing.T) {
	amtool(t)
	for name, cfg := range map[string]Config{
		"defaults": {},
		"StuckOpen critical, FleetWide warning": {Alerts: map[string]AlertConfig{
			AlertStuckOpen:     {Severity: "critical"},
			AlertOpenFleetWide: {Severity: "warning"},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			frag, err := GenerateAlertmanager(cfg)
			require.NoError(t, err)
			path := writeAmConfig(t, embedAlertmanager(t, userAlertmanager, frag, func(r string) string { return "http://127.0.0.1:9/" + r }))
			pages := 0
			for _, c := range alertRouteCases(t, cfg) {
				args := append([]string{"config", "routes", "test", "--config.file=" + path, "--verify.receivers=" + c.receiver}, c.labels...)
				out, ok := runAmtool(t, args...)
				assert.True(t, ok, "%s: want receiver %s, amtool says:\n%s", strings.Join(c.labels, " "), c.receiver, out)
				assert.Equal(t, c.receiver, strings.TrimSpace(out), strings.Join(c.labels, " "))
				if c.receiver == ReceiverPage {
					pages++
				}
			}
			assert.Equal(t, 2, pages, "FleetWide or StuckOpen, and the outage page")
		})
	}
}
