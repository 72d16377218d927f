package conformance_test

// Grafana's dashboard-linter (github.com/grafana/dashboard-linter, not installable from the
// module proxy): its rules, encoded here as it implements them, over every generated dashboard.
// `dashboard-linter lint --strict` fails on any error or warning that the .lint file beside the
// dashboard does not exclude; so does this test, with the .lint the generator writes. The rules
// for Loki targets (target-logql-rule, target-logql-auto-rule) do not apply: every target is
// Prometheus.

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

// The linter's model of a dashboard: the fields its rules read.
type (
	lintDashboard struct {
		Title      string `json:"title"`
		Editable   bool   `json:"editable"`
		Templating struct {
			List []lintTemplate `json:"list"`
		} `json:"templating"`
		Rows []struct {
			Panels []lintPanel `json:"panels"`
		} `json:"rows"`
		Panels []lintPanel `json:"panels"`
	}
	lintTemplate struct {
		Name       string           `json:"name"`
		Label      string           `json:"label"`
		Type       string           `json:"type"`
		Query      any              `json:"query"`
		Datasource any              `json:"datasource"`
		Multi      bool             `json:"multi"`
		AllValue   string           `json:"allValue"`
		Current    map[string]any   `json:"current"`
		Options    []map[string]any `json:"options"`
		Refresh    int              `json:"refresh"`
	}
	lintPanel struct {
		ID          int             `json:"id"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		Type        string          `json:"type"`
		Datasource  any             `json:"datasource"`
		Targets     []lintTarget    `json:"targets"`
		Panels      []lintPanel     `json:"panels"`
		Options     json.RawMessage `json:"options"`
		FieldConfig *struct {
			Defaults struct {
				Unit     string          `json:"unit"`
				Mappings json.RawMessage `json:"mappings"`
			} `json:"defaults"`
			Overrides []struct {
				Properties []struct {
					ID    string `json:"id"`
					Value any    `json:"value"`
				} `json:"properties"`
			} `json:"overrides"`
		} `json:"fieldConfig"`
	}
	lintTarget struct {
		Expr    string `json:"expr"`
		PanelID int    `json:"panelId"`
	}
)

// query is the template's query string (a string, or the "query" of an object).
func (t lintTemplate) query() string {
	switch q := t.Query.(type) {
	case string:
		return q
	case map[string]any:
		s, _ := q["query"].(string)
		return s
	}
	return ""
}

// datasourceUID is the uid of a datasource reference: a string, or an object's uid.
func datasourceUID(ds any) string {
	switch v := ds.(type) {
	case string:
		return v
	case map[string]any:
		s, _ := v["uid"].(string)
		return s
	}
	return ""
}

// allPanels is the linter's GetPanels: every panel, rows and nested panels included.
func (d lintDashboard) allPanels() []lintPanel {
	var out []lintPanel
	var add func(ps []lintPanel)
	add = func(ps []lintPanel) {
		for _, p := range ps {
			out = append(out, p)
			add(p.Panels)
		}
	}
	for _, r := range d.Rows {
		add(r.Panels)
	}
	add(d.Panels)
	return out
}

func (d lintDashboard) templatesOfType(typ string) []lintTemplate {
	var out []lintTemplate
	for _, t := range d.Templating.List {
		if strings.EqualFold(t.Type, typ) {
			out = append(out, t)
		}
	}
	return out
}

// prometheusDashboard: the first datasource template queries Prometheus (the rules on
// Prometheus queries apply only then).
func (d lintDashboard) prometheusDashboard() bool {
	ds := d.templatesOfType("datasource")
	return len(ds) > 0 && ds[0].query() == "prometheus"
}

// finding is one error or warning of a rule.
type finding struct {
	rule, dashboard, panel string
	target                 int // -1: not a target's
	warning                bool
	msg                    string
}

func (f finding) String() string {
	return fmt.Sprintf("%s: dashboard %q panel %q target %d: %s", f.rule, f.dashboard, f.panel, f.target, f.msg)
}

// The linter's sample values of Grafana's global variables (its variables.go).
var lintGlobals = map[string]string{
	"__rate_interval": "8869990787ms", "__interval": "4867856611ms", "__interval_ms": "7781188786",
	"__range_ms": "6737667980", "__range_s": "9397795485", "__range": "6069770749ms", "__auto": "12345ms",
}

var lintVariableRE = regexp.MustCompile(`\$([[:word:]]+)|\$\{([^}]+)\}|\[\[([^\[\]]+)\]\]`)

// expandVariables is the linter's: outside double-quoted strings, each variable becomes a
// sample value (a global's, a template's current value or first option, else its name).
func expandVariables(expr string, templates []lintTemplate) string {
	parts := strings.Split(expr, `"`)
	for i := 0; i < len(parts); i += 2 {
		parts[i] = lintVariableRE.ReplaceAllStringFunc(parts[i], func(m string) string {
			sub := lintVariableRE.FindStringSubmatch(m)
			name := sub[1] + sub[2] + sub[3]
			name, _, _ = strings.Cut(name, ":")
			if v, ok := lintGlobals[name]; ok {
				return v
			}
			if strings.HasPrefix(name, "__auto_interval") {
				return "10s"
			}
			for _, t := range templates {
				if t.Name != name {
					continue
				}
				if v, ok := t.Current["value"].(string); ok && v != "" {
					return v
				}
				if len(t.Options) > 0 {
					if v, ok := t.Options[0]["value"].(string); ok {
						return v
					}
				}
			}
			return name
		})
	}
	return strings.Join(parts, `"`)
}

func lintParse(expr string, templates []lintTemplate) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(expandVariables(expr, templates))
}

var rateIntervalRange = func() time.Duration {
	d, err := time.ParseDuration(lintGlobals["__rate_interval"])
	if err != nil {
		panic(err)
	}
	return d
}()

// validUnits are the units the linter's panel-units-rule accepts (Grafana's unit ids).
var validUnits = strings.Fields(`none string short percent percentunit humidity dB hex0x hex sci locale pixel
accMS2 accFS2 accG degree radian grad arcmin arcsec areaM2 areaF2 areaMI2 flops mflops gflops tflops pflops eflops zflops yflops
ppm conppb conngm3 conngNm3 conμgm3 conμgNm3 conmgm3 conmgNm3 congm3 congNm3 conmgdL conmmolL
bytes decbytes bits decbits kbytes deckbytes mbytes decmbytes gbytes decgbytes tbytes dectbytes pbytes decpbytes
pps binBps Bps binbps bps KiBs Kibits KBs Kbits MiBs Mibits MBs Mbits GiBs Gibits GBs Gbits TiBs Tibits TBs Tbits PiBs Pibits PBs Pbits
dateTimeAsIso dateTimeAsIsoNoDateIfToday dateTimeAsUS dateTimeAsUSNoDateIfToday dateTimeAsLocal dateTimeAsLocalNoDateIfToday dateTimeAsSystem dateTimeFromNow
hertz ns µs ms s m h d dtdurationms dtdurations dthms dtdhms timeticks clockms clocks
cps ops reqps rps wps iops cpm opm rpm wpm mps mpm bool bool_yes_no bool_on_off`)

// lintDashboardRules applies the linter's dashboard and template rules.
func lintDashboardRules(d lintDashboard) []finding {
	var out []finding
	add := func(rule string, warning bool, format string, args ...any) {
		out = append(out, finding{rule: rule, dashboard: d.Title, target: -1, warning: warning, msg: fmt.Sprintf(format, args...)})
	}
	// template-datasource-rule
	dss := d.templatesOfType("datasource")
	if len(dss) == 0 {
		add("template-datasource-rule", false, "does not have a templated data source")
	}
	for _, ds := range dss {
		q := ds.query()
		names := []string{strings.ToLower(q) + "_datasource"}
		labels := []string{strings.ToUpper(q[:1]) + q[1:] + " data source"}
		if len(dss) == 1 {
			names, labels = append(names, "datasource"), append(labels, "Data source")
		}
		if !slices.Contains(names, ds.Name) {
			add("template-datasource-rule", false, "templated data source variable named %q, should be one of %q", ds.Name, names)
		}
		if !slices.Contains(labels, ds.Label) {
			add("template-datasource-rule", true, "templated data source variable labeled %q, should be one of %q", ds.Label, labels)
		}
	}
	// template-job-rule, template-instance-rule
	if d.prometheusDashboard() {
		for _, name := range []string{"job", "instance"} {
			rule := "template-" + name + "-rule"
			i := slices.IndexFunc(d.Templating.List, func(t lintTemplate) bool { return t.Name == name })
			if i < 0 {
				add(rule, false, "is missing the %s template", name)
				continue
			}
			t := d.Templating.List[i]
			if uid := datasourceUID(t.Datasource); !slices.Contains([]string{"$datasource", "${datasource}", "$prometheus_datasource", "${prometheus_datasource}"}, uid) {
				add(rule, false, "%s template should use datasource '$datasource', is currently %q", name, uid)
			}
			if t.Type != "query" {
				add(rule, false, "%s template should be a Prometheus query, is currently %q", name, t.Type)
			}
			if want := strings.ToUpper(name[:1]) + name[1:]; t.Label != want {
				add(rule, true, "%s template should be labeled %q, is currently %q", name, want, t.Label)
			}
			if !t.Multi {
				add(rule, false, "%s template should be a multi select", name)
			}
			if t.AllValue != ".+" {
				add(rule, false, "%s template allValue should be '.+', is currently %q", name, t.AllValue)
			}
		}
	}
	// template-label-promql-rule
	templatedLabel := regexp.MustCompile(`([a-z_]+)\((.+)\)`)
	if d.prometheusDashboard() {
		for _, t := range d.Templating.List {
			if t.Type != "query" {
				continue
			}
			tokens := templatedLabel.FindStringSubmatch(t.query())
			switch {
			case tokens == nil:
				add("template-label-promql-rule", false, "template %q: invalid query %q", t.Name, t.query())
			case !slices.Contains([]string{"label_names", "label_values", "metrics", "query_result"}, tokens[1]):
				add("template-label-promql-rule", false, "template %q: invalid function %q", t.Name, tokens[1])
			default:
				// The linter accepts what its parser makes an expression of; stricter here:
				// label_values' selector, query_result's query, each parses whole.
				arg := tokens[2]
				if tokens[1] == "label_values" {
					if i := strings.LastIndex(arg, ","); i >= 0 {
						arg = arg[:i]
					}
				}
				if _, err := lintParse(arg, d.Templating.List); err != nil {
					add("template-label-promql-rule", false, "template %q: %v", t.Name, err)
				}
			}
		}
	}
	// template-on-time-change-reload-rule
	for _, t := range d.Templating.List {
		if t.Type == "query" && t.Refresh != 2 {
			add("template-on-time-change-reload-rule", false, "template %q: refresh %d, should be 2 (on time range change)", t.Name, t.Refresh)
		}
	}
	// uneditable-dashboard
	if d.Editable {
		add("uneditable-dashboard", false, "is editable, it should be set to 'editable: false'")
	}
	return out
}

// lintPanelRules applies the linter's panel and target rules.
func lintPanelRules(d lintDashboard) []finding {
	var out []finding
	dsUIDs := []string{}
	for _, t := range d.templatesOfType("datasource") {
		dsUIDs = append(dsUIDs, "$"+t.Name, "${"+t.Name+"}")
	}
	for _, p := range d.allPanels() {
		add := func(rule string, target int, format string, args ...any) {
			out = append(out, finding{rule: rule, dashboard: d.Title, panel: p.Title, target: target, msg: fmt.Sprintf(format, args...)})
		}
		queryPanel := slices.Contains([]string{"stat", "singlestat", "graph", "table", "timeseries", "gauge"}, p.Type)
		if slices.Contains([]string{"singlestat", "graph", "table", "timeseries"}, p.Type) && !slices.Contains(dsUIDs, datasourceUID(p.Datasource)) {
			add("panel-datasource-rule", -1, "does not use a templated datasource, uses %q", datasourceUID(p.Datasource))
		}
		if queryPanel && (p.Title == "" || p.Description == "") {
			add("panel-title-description-rule", -1, "has missing title or description")
		}
		if queryPanel && p.Targets == nil {
			add("panel-no-targets-rule", -1, "has no targets")
		}
		if queryPanel && !panelUnitsOK(p) {
			add("panel-units-rule", -1, "has no or invalid units defined")
		}
		for ti, t := range p.Targets {
			out = append(out, lintTargetRules(d, p, ti, t)...)
		}
	}
	return out
}

// panelUnitsOK is the panel-units-rule: a stat reducing non-numeric fields, value mappings,
// or a valid unit (an override's, else the default's).
func panelUnitsOK(p lintPanel) bool {
	if p.Type == "stat" {
		var opts struct {
			ReduceOptions struct {
				Fields string `json:"fields"`
			} `json:"reduceOptions"`
		}
		if json.Unmarshal(p.Options, &opts) == nil && opts.ReduceOptions.Fields != "" {
			return true
		}
	}
	unit := ""
	if p.FieldConfig != nil {
		for _, o := range p.FieldConfig.Overrides {
			for _, prop := range o.Properties {
				if prop.ID == "mappings" && prop.Value != nil {
					return true
				}
				if prop.ID == "unit" {
					unit, _ = prop.Value.(string)
				}
			}
		}
		if len(p.FieldConfig.Defaults.Mappings) > 0 && string(p.FieldConfig.Defaults.Mappings) != "null" {
			return true
		}
		if unit == "" {
			unit = p.FieldConfig.Defaults.Unit
		}
	}
	return unit != "" && slices.Contains(validUnits, unit)
}

// lintTargetRules applies the target rules to target ti of panel p.
func lintTargetRules(d lintDashboard, p lintPanel, ti int, t lintTarget) []finding {
	var out []finding
	add := func(rule, format string, args ...any) {
		out = append(out, finding{rule: rule, dashboard: d.Title, panel: p.Title, target: ti, msg: fmt.Sprintf(format, args...)})
	}
	if !d.prometheusDashboard() {
		return nil
	}
	hasQueries := slices.Contains([]string{"singlestat", "gauge", "table", "stat", "state-timeline", "timeseries"}, p.Type)
	expr, err := lintParse(t.Expr, d.Templating.List)
	if hasQueries {
		// target-promql-rule
		if t.Expr == "" && t.PanelID > 0 && !slices.ContainsFunc(d.Panels, func(o lintPanel) bool { return o.ID == t.PanelID }) {
			add("target-promql-rule", "invalid panel reference in target")
		}
		if err != nil {
			add("target-promql-rule", "invalid PromQL query %q: %v", t.Expr, err)
		}
	}
	if err != nil {
		return out // invalid PromQL is target-promql-rule's
	}
	// target-rate-interval-rule
	if hasQueries {
		_ = parser.Walk(lintInspector(func(node parser.Node, parents []parser.Node) error {
			ms, ok := node.(*parser.MatrixSelector)
			if !ok || ms.Range == rateIntervalRange || len(parents) == 0 {
				return nil
			}
			call, ok := parents[len(parents)-1].(*parser.Call)
			switch {
			case !ok:
				add("target-rate-interval-rule", "$__rate_interval used in non-rate function: %q", t.Expr)
			case call.Func.Name == "rate" || call.Func.Name == "irate":
				add("target-rate-interval-rule", "should use $__rate_interval: %q", t.Expr)
			}
			return nil
		}), expr, nil)
	}
	// target-job-rule, target-instance-rule
	for _, name := range []string{"job", "instance"} {
		for _, sel := range parser.ExtractSelectors(expr) {
			if err := checkForMatcher(sel, name, "$"+name); err != nil {
				add("target-"+name+"-rule", "invalid PromQL query %q: %v", t.Expr, err)
			}
		}
	}
	// target-counter-agg-rule
	_ = parser.Walk(lintInspector(func(node parser.Node, parents []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok || !strings.HasSuffix(vs.String(), "_total") {
			return nil
		}
		ok = len(parents) >= 2
		if ok {
			_, ok = parents[len(parents)-1].(*parser.MatrixSelector)
		}
		if ok {
			var call *parser.Call
			call, ok = parents[len(parents)-2].(*parser.Call)
			ok = ok && slices.Contains([]string{"rate", "irate", "increase"}, call.Func.Name)
		}
		if !ok {
			add("target-counter-agg-rule", "counter metric %q is not aggregated with rate, irate, or increase", vs.String())
		}
		return nil
	}), expr, nil)
	return out
}

type lintInspector func(parser.Node, []parser.Node) error

func (f lintInspector) Visit(node parser.Node, path []parser.Node) (parser.Visitor, error) {
	if err := f(node, path); err != nil {
		return nil, err
	}
	return f, nil
}

// checkForMatcher is the linter's: a matcher name=~value among the selector's.
func checkForMatcher(sel []*labels.Matcher, name, value string) error {
	err := fmt.Errorf("%s selector not found", name)
	for _, m := range sel {
		if m.Name != name {
			continue
		}
		if m.Type == labels.MatchRegexp && m.Value == value {
			return nil
		}
		err = fmt.Errorf("%s selector is %s%s%q, not =~%q", name, m.Name, m.Type, m.Value, value)
	}
	return err
}

// lintConfig is the linter's .lint file, decoded as the linter decodes it (YAML keys are the
// lowercased field names: reason, entries, dashboard, panel, alert, targetidx).
type lintConfig struct {
	Exclusions map[string]*lintRuleEntries `yaml:"exclusions"`
	Warnings   map[string]*lintRuleEntries `yaml:"warnings"`
}

type lintRuleEntries struct {
	Reason  string
	Entries []lintEntry
}

type lintEntry struct {
	Reason, Dashboard, Panel, Alert, TargetIdx string
}

// matches is the linter's ConfigurationEntry.IsMatch.
func (e lintEntry) matches(f finding) bool {
	if e.Dashboard != "" && e.Dashboard != f.dashboard {
		return false
	}
	if e.Panel != "" && f.panel != "" && e.Panel != f.panel {
		return false
	}
	if f.target >= 0 && e.TargetIdx != "" {
		if idx, err := strconv.Atoi(e.TargetIdx); err == nil && idx != f.target {
			return false
		}
	}
	return true
}

// excluded reports whether the configuration excludes f, and by which entry (-1: the whole rule).
func (c lintConfig) excluded(f finding) (bool, int) {
	ex, ok := c.Exclusions[f.rule]
	if !ok {
		return false, 0
	}
	if ex == nil || len(ex.Entries) == 0 {
		return true, -1
	}
	for i, e := range ex.Entries {
		if e.matches(f) {
			return true, i
		}
	}
	return false, 0
}

// lintSet is a directory of generated dashboards with the .lint beside them.
type lintSet struct {
	name       string
	dashboards map[string]lintDashboard // by path
	config     lintConfig
	hasConfig  bool
}

func newLintSet(t *testing.T, name string, files ...[]dashboards.File) lintSet {
	t.Helper()
	s := lintSet{name: name, dashboards: map[string]lintDashboard{}}
	for _, fs := range files {
		for _, f := range fs {
			switch {
			case path.Base(f.Path) == dashboards.LintFile:
				require.False(t, s.hasConfig, "%s: one .lint", name)
				require.Equal(t, dashboards.Dir, path.Dir(f.Path), "the .lint is beside the dashboards")
				require.NoError(t, yaml.Unmarshal(f.Data, &s.config), "%s: %s", name, f.Data)
				s.hasConfig = true
			case strings.HasSuffix(f.Path, ".json"):
				require.Equal(t, dashboards.Dir, path.Dir(f.Path))
				var d lintDashboard
				require.NoError(t, json.Unmarshal(f.Data, &d), f.Path)
				s.dashboards[f.Path] = d
			}
		}
	}
	return s
}

// findings lints every dashboard of the set.
func (s lintSet) findings() []finding {
	var out []finding
	for _, p := range slices.Sorted(mapsKeys(s.dashboards)) {
		d := s.dashboards[p]
		out = append(out, lintDashboardRules(d)...)
		out = append(out, lintPanelRules(d)...)
	}
	return out
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// lintSets are the generated dashboard directories the linter must pass: the Overview and
// Dependency dashboards of several configurations, with the SLOs dashboard of several SLO
// configurations (and its .lint).
func lintSets(t *testing.T) []lintSet {
	var sets []lintSet
	for name, cfg := range map[string]dashboards.Config{
		"default":      {},
		"custom":       {Namespace: "acme", Selector: `env="prod", team!~"x.*"`, GroupBy: []string{"cluster", "job", "name"}, TitlePrefix: "Shop", UIDPrefix: "shop"},
		"no namespace": {Namespace: rules.NoNamespace, Histograms: dashboards.ClassicHistograms},
	} {
		files, err := dashboards.Generate(cfg)
		require.NoError(t, err)
		sets = append(sets, newLintSet(t, name, files))
	}
	for _, sc := range sloConfigs {
		dcfg := dashboards.Config{Namespace: sc.cfg.Namespace, Selector: sc.cfg.Selector, GroupBy: sc.cfg.GroupBy}
		files, err := dashboards.Generate(dcfg)
		require.NoError(t, err)
		infos, err := rules.SLOs(sc.cfg)
		require.NoError(t, err)
		slos, err := dashboards.GenerateSLOs(dcfg, infos)
		require.NoError(t, err)
		sets = append(sets, newLintSet(t, "SLOs "+sc.name, files, slos))
	}
	return sets
}

// TestDashboardsPassDashboardLinterStrict: every finding of every rule — error or warning, as
// --strict fails on both — is excluded by the generated .lint, every exclusion carries its
// reason, and every exclusion entry is needed (it excludes a finding).
func TestDashboardsPassDashboardLinterStrict(t *testing.T) {
	for _, s := range lintSets(t) {
		t.Run(s.name, func(t *testing.T) {
			require.NotEmpty(t, s.dashboards)
			used := map[string]map[int]bool{}
			for _, f := range s.findings() {
				ex, entry := s.config.excluded(f)
				if !assert.True(t, ex, "%s", f) {
					continue
				}
				if used[f.rule] == nil {
					used[f.rule] = map[int]bool{}
				}
				used[f.rule][entry] = true
			}
			for rule, ex := range s.config.Exclusions {
				require.NotNil(t, ex, rule)
				assert.NotEmpty(t, ex.Reason, "%s: an exclusion says why", rule)
				for i, e := range ex.Entries {
					assert.NotEmpty(t, e.Reason, "%s entry %d: says why", rule, i)
					assert.True(t, used[rule][i], "%s entry %d (%+v) excludes nothing: stale", rule, i, e)
				}
			}
			assert.Empty(t, s.config.Warnings, "no finding is downgraded")
		})
	}
}

// TestDashboardLinterRulesCatchTheirProblems keeps the encoded rules honest: each reports a
// dashboard broken the way the rule forbids.
func TestDashboardLinterRulesCatchTheirProblems(t *testing.T) {
	files, err := dashboards.Generate(dashboards.Config{})
	require.NoError(t, err)
	var good lintDashboard
	for _, f := range files {
		if strings.HasSuffix(f.Path, "-overview.json") {
			require.NoError(t, json.Unmarshal(f.Data, &good))
		}
	}
	require.NotEmpty(t, good.Panels)
	rulesOf := func(d lintDashboard) []string {
		var out []string
		for _, f := range append(lintDashboardRules(d), lintPanelRules(d)...) {
			if !slices.Contains(out, f.rule) {
				out = append(out, f.rule)
			}
		}
		return out
	}
	assert.Empty(t, rulesOf(good), "the Overview is clean")
	copyOf := func() lintDashboard {
		var d lintDashboard
		data, err := json.Marshal(good)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &d))
		return d
	}
	firstGraph := func(d *lintDashboard) *lintPanel {
		for i := range d.Panels {
			if d.Panels[i].Type == "timeseries" {
				return &d.Panels[i]
			}
			for j := range d.Panels[i].Panels {
				if d.Panels[i].Panels[j].Type == "timeseries" {
					return &d.Panels[i].Panels[j]
				}
			}
		}
		t.Fatal("no timeseries panel")
		return nil
	}
	variable := func(d *lintDashboard, name string) *lintTemplate {
		for i := range d.Templating.List {
			if d.Templating.List[i].Name == name {
				return &d.Templating.List[i]
			}
		}
		t.Fatalf("no variable %s", name)
		return nil
	}
	for _, tc := range []struct {
		rule   string
		break_ func(d *lintDashboard)
	}{
		{"uneditable-dashboard", func(d *lintDashboard) { d.Editable = true }},
		{"template-job-rule", func(d *lintDashboard) { variable(d, "job").AllValue = ".*" }},
		{"template-instance-rule", func(d *lintDashboard) { variable(d, "instance").Name = "host" }},
		{"template-datasource-rule", func(d *lintDashboard) { variable(d, "datasource").Label = "DS" }},
		{"template-on-time-change-reload-rule", func(d *lintDashboard) { variable(d, "job").Refresh = 1 }},
		{"template-label-promql-rule", func(d *lintDashboard) { variable(d, "job").Query = "label_values(up{, job)" }},
		{"panel-title-description-rule", func(d *lintDashboard) { firstGraph(d).Description = "" }},
		{"panel-units-rule", func(d *lintDashboard) { firstGraph(d).FieldConfig.Defaults.Unit = "furlongs" }},
		{"panel-datasource-rule", func(d *lintDashboard) { firstGraph(d).Datasource = map[string]any{"uid": "prom-1"} }},
		{"panel-no-targets-rule", func(d *lintDashboard) { firstGraph(d).Targets = nil }},
		{"target-promql-rule", func(d *lintDashboard) { firstGraph(d).Targets[0].Expr = "sum(" }},
		{"target-rate-interval-rule", func(d *lintDashboard) {
			firstGraph(d).Targets[0].Expr = `rate(x{job=~"$job", instance=~"$instance"}[5m])`
		}},
		{"target-job-rule", func(d *lintDashboard) {
			firstGraph(d).Targets[0].Expr = `rate(x{instance=~"$instance"}[$__rate_interval])`
		}},
		{"target-instance-rule", func(d *lintDashboard) { firstGraph(d).Targets[0].Expr = `rate(x{job=~"$job"}[$__rate_interval])` }},
		{"target-counter-agg-rule", func(d *lintDashboard) { firstGraph(d).Targets[0].Expr = `sum(x_total)` }},
	} {
		d := copyOf()
		tc.break_(&d)
		assert.Contains(t, rulesOf(d), tc.rule)
	}
}

// TestSLODashboardNeedsItsExclusions: without the .lint, the linter reports the SLOs dashboard
// for its instance matchers (and job matchers where the SLO rules drop job) — exactly the
// rules the .lint excludes, and no other.
func TestSLODashboardNeedsItsExclusions(t *testing.T) {
	for _, s := range lintSets(t) {
		if !s.hasConfig {
			continue
		}
		var rulesFound []string
		for _, f := range s.findings() {
			if !slices.Contains(rulesFound, f.rule) {
				rulesFound = append(rulesFound, f.rule)
			}
			assert.True(t, strings.HasSuffix(f.dashboard, " / SLOs"), "%s: %s", s.name, f)
		}
		slices.Sort(rulesFound)
		excluded := slices.Sorted(mapsKeys(s.config.Exclusions))
		assert.Equal(t, excluded, rulesFound, s.name)
		assert.Contains(t, rulesFound, "target-instance-rule", s.name)
	}
}
