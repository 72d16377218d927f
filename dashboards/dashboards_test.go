package dashboards

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
	"github.com/stormwatch-go/stormwatch/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files in examples/generated/dashboards")

// goldenDir holds the checked-in default output: the output directory of Generate(Config{}).
const goldenDir = "../examples/generated"

func TestMain(m *testing.M) {
	plugins.RegisterDefaultPlugins()
	os.Exit(m.Run())
}

// strictErr returns the error of the SDK's strict decoder. In v0.0.22 UnmarshalJSONStrict
// returns a typed-nil cog.BuildErrors on success, so an empty one is success.
func strictErr(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}

// decodeStrict checks a generated dashboard with the SDK's strict decoder (required fields,
// types, no unknown fields, down to panel options and Prometheus queries) and returns it decoded
// into the SDK's typed model.
//
// The typed model comes from the SDK's regular decoder: in v0.0.22 the strict decoder reports
// errors faithfully but drops nested values on success (the typed-nil cog.BuildErrors also
// reaches its own `if err != nil { return err }` in PanelOrRowPanel, the value-mapping union
// and the plugin options and query unmarshalers, so panels, options and targets come back
// empty). TestStrictDecoderSeesNestedFields shows the strict check still reaches them.
func decodeStrict(t *testing.T, data []byte) dashboard.Dashboard {
	t.Helper()
	require.NoError(t, strictCheck(data))
	var d dashboard.Dashboard
	require.NoError(t, json.Unmarshal(data, &d))
	require.NoError(t, d.Validate())
	return d
}

// strictCheck runs the SDK's strict decoder over a dashboard and, because the panel decoder
// reads fieldConfig leniently, over every panel's fieldConfig as well.
func strictCheck(data []byte) error {
	var strict dashboard.Dashboard
	if err := strictErr(strict.UnmarshalJSONStrict(data)); err != nil {
		return err
	}
	var raw struct {
		Panels []struct {
			Title       string          `json:"title"`
			FieldConfig json.RawMessage `json:"fieldConfig"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	for _, p := range raw.Panels {
		if p.FieldConfig == nil {
			continue
		}
		var fc dashboard.FieldConfigSource
		if err := strictErr(fc.UnmarshalJSONStrict(p.FieldConfig)); err != nil {
			return fmt.Errorf("panel %q: fieldConfig: %w", p.Title, err)
		}
	}
	return nil
}

func generate(t *testing.T, cfg Config) []File {
	t.Helper()
	files, err := Generate(cfg)
	require.NoError(t, err)
	return files
}

// jsonFiles returns the dashboard files, decoded.
func dashboardsOf(t *testing.T, files []File) map[string]dashboard.Dashboard {
	t.Helper()
	out := map[string]dashboard.Dashboard{}
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".json") {
			out[f.Path] = decodeStrict(t, f.Data)
		}
	}
	return out
}

// panels returns every panel of a dashboard, rows' collapsed panels included; rows are not panels.
func panels(d dashboard.Dashboard) []dashboard.Panel {
	var out []dashboard.Panel
	for _, p := range d.Panels {
		if p.Panel != nil {
			out = append(out, *p.Panel)
		}
		if p.RowPanel != nil {
			out = append(out, p.RowPanel.Panels...)
		}
	}
	return out
}

// query is one PromQL expression of a dashboard and where it comes from.
type query struct {
	where  string
	expr   string
	legend string
	panel  bool // a panel query (not a variable or annotation)
}

// queriesOf lists every PromQL expression of a dashboard: panel targets, the trip annotation and
// the selectors inside the variables' label_values().
func queriesOf(t *testing.T, d dashboard.Dashboard) []query {
	t.Helper()
	var out []query
	for _, p := range panels(d) {
		for _, tg := range p.Targets {
			pq, ok := tg.(*prometheus.Dataquery)
			require.True(t, ok, "panel %q: target %T is not a Prometheus query", *p.Title, tg)
			legend := ""
			if pq.LegendFormat != nil {
				legend = *pq.LegendFormat
			}
			out = append(out, query{where: "panel " + *p.Title, expr: pq.Expr, legend: legend, panel: true})
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != nil {
			out = append(out, query{where: "annotation " + a.Name, expr: *a.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != dashboard.VariableTypeQuery {
			continue
		}
		require.NotNil(t, v.Query)
		require.NotNil(t, v.Query.String, "variable %s", v.Name)
		if expr, ok := parseQueryResult(*v.Query.String); ok {
			// The name variable: the names of an instant query, by the name label.
			require.Equal(t, varName, v.Name, "only the name variable is a query_result()")
			require.NotNil(t, v.Regex, "variable %s extracts the name", v.Name)
			assert.Equal(t, nameRegex, *v.Regex)
			out = append(out, query{where: "variable " + v.Name, expr: expr})
			continue
		}
		sel, label, ok := parseLabelValues(*v.Query.String)
		require.True(t, ok, "variable %s: %q is not label_values(selector, label) nor query_result(query)", v.Name, *v.Query.String)
		require.Equal(t, v.Name, label, "variable %s lists another label", v.Name)
		if !strings.Contains(sel, "{") {
			sel += "{}" // a bare metric name: the same selector
		}
		out = append(out, query{where: "variable " + v.Name, expr: sel})
	}
	return out
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.*), ([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

var queryResultRE = regexp.MustCompile(`^query_result\((.*)\)$`)

func parseQueryResult(s string) (query string, ok bool) {
	m := queryResultRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func parseLabelValues(s string) (selector, label string, ok bool) {
	m := labelValuesRE.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

func TestGenerateProducesValidGrafanaDashboards(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Namespace: "acme", Selector: `cluster="eu-1"`, TitlePrefix: "Checkout", UIDPrefix: "checkout-res", Provisioning: true},
		{Namespace: rules.NoNamespace},
	} {
		files := generate(t, cfg)
		dashes := dashboardsOf(t, files)
		require.Len(t, dashes, 2)
		uids := map[string]bool{}
		for path, d := range dashes {
			require.NotNil(t, d.Uid, path)
			assert.False(t, uids[*d.Uid], "uid %s used twice", *d.Uid)
			uids[*d.Uid] = true
			assert.LessOrEqual(t, len(*d.Uid), maxUID)
			assert.Equal(t, Dir+"/"+*d.Uid+".json", path, "file name follows the uid")

			ids := map[uint32]string{}
			for _, p := range d.Panels {
				switch {
				case p.RowPanel != nil:
					assert.NotZero(t, p.RowPanel.Id)
					assert.Empty(t, ids[p.RowPanel.Id], "panel id %d reused", p.RowPanel.Id)
					ids[p.RowPanel.Id] = "row"
				case p.Panel != nil:
					require.NotNil(t, p.Panel.Id)
					assert.Empty(t, ids[*p.Panel.Id], "panel id %d reused", *p.Panel.Id)
					ids[*p.Panel.Id] = p.Panel.Type
				}
			}
			for _, p := range panels(d) {
				// Every panel is a known plugin whose options and field config decoded into the
				// plugin's own types.
				_, known := cog.ConfigForPanelcfgVariant(p.Type)
				require.True(t, known, "panel %q: unknown type %q", *p.Title, p.Type)
				switch p.Type {
				case "timeseries":
					assert.IsType(t, &timeseries.Options{}, p.Options, *p.Title)
					assert.IsType(t, &timeseries.FieldConfig{}, p.FieldConfig.Defaults.Custom, *p.Title)
				case "stat":
					assert.IsType(t, &stat.Options{}, p.Options, *p.Title)
				case "state-timeline":
					assert.IsType(t, &statetimeline.Options{}, p.Options, *p.Title)
					assert.IsType(t, &statetimeline.FieldConfig{}, p.FieldConfig.Defaults.Custom, *p.Title)
				case "table":
					assert.IsType(t, &table.Options{}, p.Options, *p.Title)
					assert.IsType(t, &table.FieldConfig{}, p.FieldConfig.Defaults.Custom, *p.Title)
				default:
					t.Errorf("panel %q: unexpected type %q", *p.Title, p.Type)
				}
				require.NotEmpty(t, p.Targets, *p.Title)
				refs := map[string]bool{}
				for _, tg := range p.Targets {
					pq := tg.(*prometheus.Dataquery)
					require.NotNil(t, pq.RefId)
					assert.False(t, refs[*pq.RefId], "panel %q: refId %s reused", *p.Title, *pq.RefId)
					refs[*pq.RefId] = true
				}
				require.NotNil(t, p.FieldConfig.Defaults.Unit, *p.Title)
				assert.NotEmpty(t, *p.FieldConfig.Defaults.Unit, *p.Title)
			}
		}
	}
}

func TestStrictDecoderSeesNestedFields(t *testing.T) {
	data := generate(t, Config{})[0].Data
	for _, tc := range []struct{ old, new, want string }{
		{`"graphMode": "area",`, `"graphMode": "area", "bogus": 1,`, "bogus"},                       // stat options
		{`"refId": "A"`, `"refId": "A", "exprr": "up"`, "exprr"},                                    // Prometheus query
		{`"showValue": "auto",`, `"showValue": 7,`, "showValue"},                                    // state timeline options
		{`"type": "value",`, `"type": "value", "extra": true,`, "extra"},                            // value mapping
		{`"collapsed": false,`, `"collapsed": "no",`, "collapsed"},                                  // row
		{`"lineWidth": 1,`, `"lineWidth": 1, "lineWidht": 2,`, "lineWidht"},                         // time series field config
		{`"allValue": ".+",`, `"allValue": ".+", "alValue": "",`, "alValue"},                        // variable
		{`"titleFormat": "Circuit`, `"titleFormatt": "x", "titleFormat": "Circuit`, "titleFormatt"}, // annotation
	} {
		require.Contains(t, string(data), tc.old)
		broken := strings.Replace(string(data), tc.old, tc.new, 1)
		err := strictCheck([]byte(broken))
		require.Error(t, err, "strict decoding missed %s", tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestGenerateRoundTripsUnchanged(t *testing.T) {
	for _, f := range generate(t, Config{}) {
		d := decodeStrict(t, f.Data)
		again, err := marshal(d)
		require.NoError(t, err)
		assert.Equal(t, string(f.Data), string(again), "%s changes when decoded and encoded again", f.Path)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	cfg := Config{Selector: `env="prod"`, Provisioning: true}
	assert.Equal(t, generate(t, cfg), generate(t, cfg))
}

func TestGoldenDefaultOutput(t *testing.T) {
	files := generate(t, Config{})
	dir := filepath.Join(goldenDir, Dir)
	if *update {
		require.NoError(t, os.RemoveAll(dir))
		for _, f := range files {
			p := filepath.Join(goldenDir, filepath.FromSlash(f.Path))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, f.Data, 0o644))
		}
	}
	var onDisk []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(goldenDir, p)
			onDisk = append(onDisk, filepath.ToSlash(rel))
		}
		return err
	}))
	var want []string
	for _, f := range files {
		want = append(want, f.Path)
		got, err := os.ReadFile(filepath.Join(goldenDir, filepath.FromSlash(f.Path)))
		require.NoError(t, err, "run go test ./dashboards -update")
		assert.Equal(t, string(got), string(f.Data), "%s is stale: run go test ./dashboards -update", f.Path)
	}
	sort.Strings(want)
	sort.Strings(onDisk)
	assert.Equal(t, want, onDisk, "%s holds exactly the default output", dir)
}

// The light extraction below relies on the generator's own layout (metric{matchers}); the
// conformance module checks the same with the real PromQL parser.
var (
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\{([^{}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"`)
	rateRE     = regexp.MustCompile(`\b(rate|increase|irate)\(([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
	byRE       = regexp.MustCompile(`\bby \(([^)]*)\)`)
	legendRE   = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
)

// targetLabels are attached by Prometheus at scrape time; le is the histogram bucket label.
var targetLabels = []string{labelJob, labelInstance}

// vectorSelector is one selector found in a query.
type vectorSelector struct {
	metrics  []catalog.Metric // the named metric, or the alternatives of a __name__ regex
	series   []string
	matchers [][3]string // label, op, value
}

func selectorsOf(t *testing.T, ns string, q query) []vectorSelector {
	t.Helper()
	var out []vectorSelector
	for _, m := range selectorRE.FindAllStringSubmatch(q.expr, -1) {
		if strings.HasPrefix(m[0], "{{") {
			continue
		}
		vs := vectorSelector{}
		for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			vs.matchers = append(vs.matchers, [3]string{mm[1], mm[2], mm[3]})
		}
		names := []string{m[1]}
		if m[1] == "" {
			require.NotEmpty(t, vs.matchers, "%s: empty selector in %q", q.where, q.expr)
			require.Equal(t, [2]string{"__name__", "=~"}, [2]string{vs.matchers[0][0], vs.matchers[0][1]},
				"%s: a selector without a metric name selects by a __name__ regex", q.where)
			names = strings.Split(vs.matchers[0][2], "|")
			vs.matchers = vs.matchers[1:]
		}
		for _, n := range names {
			metric, ok := catalog.Lookup(ns, n)
			require.True(t, ok, "%s: %s is not a catalog series under namespace %q", q.where, n, ns)
			vs.metrics = append(vs.metrics, metric)
			vs.series = append(vs.series, n)
		}
		out = append(out, vs)
	}
	require.NotEmpty(t, out, "%s: no vector selector in %q", q.where, q.expr)
	return out
}

// checkQueryLabels asserts that every label a query names exists on the metrics it selects:
// matchers, by() clauses and the legend's {{label}}s (which must also survive aggregation).
func checkQueryLabels(t *testing.T, ns string, q query, extraLabels []string) {
	t.Helper()
	allowed := map[string]bool{}
	for _, l := range append(slices.Clone(targetLabels), extraLabels...) {
		allowed[l] = true
	}
	for _, vs := range selectorsOf(t, ns, q) {
		for i, metric := range vs.metrics {
			own := map[string]bool{}
			for _, l := range append(metric.LabelNames(), append(slices.Clone(targetLabels), extraLabels...)...) {
				own[l] = true
			}
			if strings.HasSuffix(vs.series[i], "_bucket") && metric.Type == catalog.Histogram {
				own["le"] = true
			}
			for _, m := range vs.matchers {
				assert.True(t, own[m[0]], "%s: %s has no label %q", q.where, vs.series[i], m[0])
				if l, ok := metric.Label(m[0]); ok && l.Values != nil && (m[1] == "=" || m[1] == "!=") {
					assert.Contains(t, l.Values, m[2], "%s: %s=%q is not a value of the catalog's closed set", q.where, m[0], m[2])
				}
			}
			for l := range own {
				allowed[l] = true
			}
		}
	}
	// rate() and increase() only over counters and histogram series.
	for _, m := range rateRE.FindAllStringSubmatch(q.expr, -1) {
		metric, ok := catalog.Lookup(ns, m[2])
		require.True(t, ok, "%s: %s", q.where, m[2])
		assert.Contains(t, []catalog.Type{catalog.Counter, catalog.Histogram}, metric.Type, "%s: %s() over %s", q.where, m[1], m[2])
	}
	var grouped []string
	for _, m := range byRE.FindAllStringSubmatch(q.expr, -1) {
		for _, l := range strings.Split(m[1], ", ") {
			assert.True(t, allowed[l], "%s: by (%s) names a label no selected metric has", q.where, l)
			grouped = append(grouped, l)
		}
	}
	for _, m := range legendRE.FindAllStringSubmatch(q.legend, -1) {
		assert.Contains(t, grouped, m[1], "%s: legend {{%s}} names a label aggregated away", q.where, m[1])
	}
}

func TestQueriesUseOnlyCatalogMetricsAndLabels(t *testing.T) {
	for _, tc := range []struct {
		cfg         Config
		ns          string
		extraLabels []string
	}{
		{Config{}, catalog.DefaultNamespace, nil},
		{Config{Namespace: "acme"}, "acme", nil},
		{Config{Namespace: rules.NoNamespace}, "", nil},
		{Config{Selector: `cluster="eu-1"`}, catalog.DefaultNamespace, []string{"cluster"}},
		{Config{Histograms: ClassicHistograms}, catalog.DefaultNamespace, nil},
	} {
		for path, d := range dashboardsOf(t, generate(t, tc.cfg)) {
			qs := queriesOf(t, d)
			require.NotEmpty(t, qs, path)
			for _, q := range qs {
				checkQueryLabels(t, tc.ns, q, tc.extraLabels)
			}
		}
	}
}

func TestEveryCatalogMetricIsOnAPanel(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range dashboardsOf(t, generate(t, Config{})) {
		for _, q := range queriesOf(t, d) {
			if !q.panel {
				continue
			}
			for _, vs := range selectorsOf(t, catalog.DefaultNamespace, q) {
				for _, m := range vs.metrics {
					seen[m.FullName(catalog.DefaultNamespace)] = true
				}
			}
		}
	}
	for _, m := range catalog.All() {
		if m.FullName("") == catalog.RegistryEvicted.FullName("") { // housekeeping of idle eviction (off by default): no panel yet
			continue
		}
		if fullDetailOnly[m.FullName(catalog.DefaultNamespace)] {
			assert.False(t, seen[m.FullName(catalog.DefaultNamespace)], "%s: the default collector does not export it: no panel may depend on it", m.FullName(catalog.DefaultNamespace))
			continue
		}
		assert.True(t, seen[m.FullName(catalog.DefaultNamespace)], "%s is on no panel", m.FullName(catalog.DefaultNamespace))
	}
}

// fullDetailOnly are the catalog metrics a collector exports only with full detail (the
// configuration echoes and the sampled waiting-callers gauge): the dashboards, made for the
// default collector, do not query them.
var fullDetailOnly = map[string]bool{
	catalog.BreakerFailureRateThreshold.FullName(catalog.DefaultNamespace): true,
	catalog.BreakerOpenDuration.FullName(catalog.DefaultNamespace):         true,
	catalog.BulkheadWaiting.FullName(catalog.DefaultNamespace):             true,
}

func TestConfigShowsInEveryQueryAndTitle(t *testing.T) {
	const sel = `cluster="eu-1", env!~"dev|test"`
	cfg := Config{Namespace: "acme", Selector: sel + ",", TitlePrefix: "Checkout resilience", UIDPrefix: "checkout_res"}
	files := generate(t, cfg)
	require.Len(t, files, 2)
	for path, d := range dashboardsOf(t, files) {
		assert.True(t, strings.HasPrefix(path, Dir+"/checkout_res-"), path)
		assert.True(t, strings.HasPrefix(*d.Uid, "checkout_res-"), *d.Uid)
		assert.True(t, strings.HasPrefix(*d.Title, "Checkout resilience / "), *d.Title)
		for _, l := range d.Links {
			if l.Type == dashboard.DashboardLinkTypeDashboards {
				assert.Equal(t, []string{"checkout_res"}, l.Tags, "the other dashboards of this prefix")
				continue
			}
			assert.Contains(t, *l.Url, "/d/checkout_res-")
		}
		for _, q := range queriesOf(t, d) {
			assert.NotContains(t, q.expr, catalog.DefaultNamespace+"_", q.where)
			for _, vs := range selectorsOf(t, "acme", q) {
				for _, s := range vs.series {
					assert.True(t, strings.HasPrefix(s, "acme_"), "%s: %s", q.where, s)
				}
			}
			// Every vector selector carries the extra matchers (trailing comma dropped).
			nSel := len(selectorRE.FindAllString(q.expr, -1)) - strings.Count(q.expr, "{{")
			assert.Equal(t, nSel, strings.Count(q.expr, sel+"}"), "%s: %q", q.where, q.expr)
		}
	}

	// Without a prefix, metric names start with the primitive.
	for _, d := range dashboardsOf(t, generate(t, Config{Namespace: rules.NoNamespace})) {
		for _, q := range queriesOf(t, d) {
			for _, vs := range selectorsOf(t, "", q) {
				for i, s := range vs.series {
					assert.True(t, strings.HasPrefix(s, string(vs.metrics[i].Primitive)+"_"), "%s: %s", q.where, s)
				}
			}
		}
	}
}

func TestDependencyDashboardSelectsOneName(t *testing.T) {
	dashes := dashboardsOf(t, generate(t, Config{}))
	dep := dashes[Dir+"/stormwatch-dependency.json"]
	ov := dashes[Dir+"/stormwatch-overview.json"]
	varByName := func(d dashboard.Dashboard, n string) dashboard.VariableModel {
		for _, v := range d.Templating.List {
			if v.Name == n {
				return v
			}
		}
		t.Fatalf("no variable %s", n)
		return dashboard.VariableModel{}
	}
	for _, n := range []string{varDatasource, varJob, varInstance, varName} {
		v := varByName(ov, n)
		if n != varDatasource {
			assert.True(t, *v.Multi && *v.IncludeAll, "overview %s is multi-value with All", n)
		}
	}
	nameVar := varByName(dep, varName)
	assert.False(t, *nameVar.Multi)
	assert.False(t, *nameVar.IncludeAll)
	for _, q := range queriesOf(t, dep) {
		if q.panel {
			assert.NotContains(t, q.expr, `name=~"$name"`, q.where)
			if !strings.Contains(q.expr, overflowName()) {
				assert.Contains(t, q.expr, `name="$name"`, q.where)
			}
		}
	}
}

// overflowName is the overflow counter's full default name (it has no name label).
func overflowName() string { return catalog.RegistryOverflow.FullName(catalog.DefaultNamespace) }

func TestStateTimelineMapsEveryBreakerState(t *testing.T) {
	ov := dashboardsOf(t, generate(t, Config{}))[Dir+"/stormwatch-overview.json"]
	var tl *dashboard.Panel
	for _, p := range panels(ov) {
		if p.Type == "state-timeline" {
			tl = &p
		}
	}
	require.NotNil(t, tl)
	require.Len(t, tl.FieldConfig.Defaults.Mappings, 1)
	vm := tl.FieldConfig.Defaults.Mappings[0].ValueMap
	require.NotNil(t, vm)
	require.Len(t, vm.Options, len(catalog.Names(catalog.States[:])))
	colors := map[string]bool{}
	for i, s := range catalog.Names(catalog.States[:]) {
		r, ok := vm.Options[strings.TrimSpace(itoa(i))]
		require.True(t, ok, "state %s has no mapping", s)
		assert.Equal(t, s, *r.Text)
		assert.NotEmpty(t, *r.Color)
		assert.False(t, colors[*r.Color], "two states share colour %s", *r.Color)
		colors[*r.Color] = true
		if i > 0 {
			assert.Contains(t, tl.Targets[0].(*prometheus.Dataquery).Expr, itoa(i)+" * (max by", "state %s is encoded", s)
			assert.Contains(t, tl.Targets[0].(*prometheus.Dataquery).Expr, `state="`+s+`"`)
		}
	}
	assert.Equal(t, colorGreen, *vm.Options["0"].Color, "closed is green")
	assert.Equal(t, colorRed, *vm.Options["1"].Color, "open is red")
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestUnitsFollowTheQueries(t *testing.T) {
	for _, d := range dashboardsOf(t, generate(t, Config{})) {
		for _, p := range panels(d) {
			if p.Type == "table" {
				continue // a unit per column: TestWhoIsHurtingTable
			}
			unit := *p.FieldConfig.Defaults.Unit
			exprs := ""
			for _, tg := range p.Targets {
				exprs += tg.(*prometheus.Dataquery).Expr + "\n"
			}
			switch {
			case strings.Contains(exprs, ") * (sum"):
				assert.Equal(t, "short", unit, "%s: callers (Little's law)", *p.Title)
			case strings.Contains(exprs, "histogram_quantile"), strings.Contains(exprs, "histogram_avg("), strings.Contains(exprs, "time() -"):
				assert.Equal(t, "s", unit, *p.Title)
			case strings.Contains(exprs, " / ("), strings.Contains(exprs, "failure_rate"), strings.Contains(exprs, "slow_call_rate"):
				assert.Equal(t, "percentunit", unit, *p.Title)
				if p.Type == "timeseries" && *p.Title != "Retry rate" { // extra attempts per call can exceed 100 %
					require.NotNil(t, p.FieldConfig.Defaults.Max, *p.Title)
					assert.Equal(t, 1.0, *p.FieldConfig.Defaults.Max, *p.Title)
				}
			case strings.HasPrefix(exprs, "sum") && strings.Contains(exprs, "rate("):
				assert.Equal(t, "ops", unit, *p.Title)
			}
			if p.Type == "timeseries" {
				opts := p.Options.(*timeseries.Options)
				assert.True(t, opts.Legend.ShowLegend, "%s: legend on", *p.Title)
			}
		}
	}
}

func TestTripsAreAnnotations(t *testing.T) {
	for path, d := range dashboardsOf(t, generate(t, Config{})) {
		require.Len(t, d.Annotations.List, 1, path)
		a := d.Annotations.List[0]
		assert.True(t, a.Enable)
		assert.Contains(t, *a.Expr, catalog.BreakerTransitions.FullName(catalog.DefaultNamespace)+`{to="open"`)
		assert.Equal(t, prometheusType, *a.Datasource.Type)
	}
}

func TestProvisioningFile(t *testing.T) {
	files := generate(t, Config{UIDPrefix: "shop", TitlePrefix: `Shop: "resilience"`, Provisioning: true})
	require.Len(t, files, 3)
	f := files[2]
	assert.Equal(t, Dir+"/provisioning/shop.yaml", f.Path)
	assert.True(t, bytes.HasPrefix(f.Data, []byte("# Code generated by stormwatch")))
	// Grafana's dashboard provider schema; unknown keys fail the decode.
	var doc struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name                  string `yaml:"name"`
			OrgID                 int    `yaml:"orgId"`
			Folder                string `yaml:"folder"`
			FolderUID             string `yaml:"folderUid"`
			Type                  string `yaml:"type"`
			DisableDeletion       bool   `yaml:"disableDeletion"`
			AllowUIUpdates        bool   `yaml:"allowUiUpdates"`
			UpdateIntervalSeconds int    `yaml:"updateIntervalSeconds"`
			Options               struct {
				Path                      string `yaml:"path"`
				FoldersFromFilesStructure bool   `yaml:"foldersFromFilesStructure"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(f.Data))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&doc))
	require.Len(t, doc.Providers, 1)
	assert.Equal(t, 1, doc.APIVersion)
	assert.Equal(t, "shop", doc.Providers[0].Name)
	assert.Equal(t, `Shop: "resilience"`, doc.Providers[0].Folder)
	assert.Equal(t, "file", doc.Providers[0].Type)
	assert.Equal(t, "/var/lib/grafana/dashboards/shop", doc.Providers[0].Options.Path)
}

func TestMaxUIDPrefixLenFitsEveryDashboard(t *testing.T) {
	for _, suffix := range []string{overviewSuffix, dependencySuffix} {
		assert.LessOrEqual(t, rules.MaxDashboardUIDPrefixLen+len(suffix), maxUID, suffix)
	}
	files := generate(t, Config{UIDPrefix: strings.Repeat("u", rules.MaxDashboardUIDPrefixLen)})
	for _, d := range dashboardsOf(t, files) {
		assert.LessOrEqual(t, len(*d.Uid), maxUID)
	}
}

func TestConfigErrorsNameFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{Namespace: "1abc"}, []string{"Namespace", `"1abc"`}},
		{Config{Namespace: "res-ilience"}, []string{"Namespace", `"res-ilience"`}},
		{Config{Namespace: "res_"}, []string{"Namespace", `"res_"`}},
		{Config{UIDPrefix: "a/b"}, []string{"UIDPrefix", `"a/b"`, "'/'"}},
		{Config{UIDPrefix: "has space"}, []string{"UIDPrefix", `"has space"`}},
		{Config{UIDPrefix: strings.Repeat("x", rules.MaxDashboardUIDPrefixLen+1)}, []string{"UIDPrefix", "at most 29"}},
		{Config{TitlePrefix: "two\nlines"}, []string{"TitlePrefix", `"two\nlines"`}},
		{Config{TitlePrefix: " padded"}, []string{"TitlePrefix", `" padded"`}},
		{Config{TitlePrefix: strings.Repeat("é", rules.MaxDashboardTitlePrefixLen+1)}, []string{"TitlePrefix", "101 characters, at most 100"}},
	} {
		files, err := Generate(tc.cfg)
		require.Error(t, err, "%+v", tc.cfg)
		assert.Nil(t, files)
		// A *ConfigError whose Field is the config file's key (the CLI points at its line).
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, "%+v", tc.cfg)
		assert.Equal(t, "dashboards", ce.Primitive)
		assert.Equal(t, yamlFields[tc.want[0]], ce.Field, "%+v", tc.cfg)
		for _, w := range tc.want[1:] {
			assert.Contains(t, err.Error(), w, "%+v", tc.cfg)
		}
	}
}

// yamlFields are the config file keys of the Config fields.
var yamlFields = map[string]string{
	"Namespace": "namespace", "Selector": "selector", "TitlePrefix": "dashboards.title_prefix", "UIDPrefix": "dashboards.uid_prefix",
}

func TestConfigAcceptsValidValues(t *testing.T) {
	for _, cfg := range []Config{
		{Namespace: "my_app"},
		{Namespace: "_x"},
		{UIDPrefix: strings.Repeat("x", rules.MaxDashboardUIDPrefixLen)},
		{UIDPrefix: "a-b_C9"},
		{TitlePrefix: "Résilience · prod"},
		{Selector: `job="checkout"`},
		{Selector: ` job = "a" , env !~ 'dev|test' , x=~` + "`a\\d`" + `, y!="q\"uote" `},
		{Selector: `a='it\'s "quoted"', b="tab\there", c=~"a.+|\\d{2}"`},
	} {
		_, err := Generate(cfg)
		assert.NoError(t, err, "%+v", cfg)
	}
}

func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`"a \u003e 0 \u0026\u0026 b \u003c 1"`: `"a > 0 && b < 1"`,
		`"keep \\u003e literal"`:               `"keep \\u003e literal"`,
		`"\\\u003e"`:                           `"\\>"`,
		`"\n\"\u00e9"`:                         `"\n\"\u00e9"`,
	} {
		got := unescapeHTML([]byte(in))
		assert.Equal(t, want, string(got), in)
		var a, b string
		require.NoError(t, json.Unmarshal([]byte(in), &a))
		require.NoError(t, json.Unmarshal(got, &b))
		assert.Equal(t, a, b, "same string after unescaping %s", in)
	}
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(Config{Provisioning: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzGenerate: any config either fails with an error naming a field or yields dashboards the
// SDK's strict decoder accepts, whose every query carries the selector.
func FuzzGenerate(f *testing.F) {
	f.Add("", "", "", "")
	f.Add("acme", `job="a", env!~"dev|test",`, "Shop", "shop")
	f.Add("-", `x=~'a\'b'`, "T / x", "u_1")
	f.Add("a b", `job="a`, "\x00", "a/b")
	f.Fuzz(func(t *testing.T, ns, sel, title, uid string) {
		files, err := Generate(Config{Namespace: ns, Selector: sel, TitlePrefix: title, UIDPrefix: uid})
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || !slices.Contains(slices.Collect(maps.Values(yamlFields)), ce.Field) {
				t.Fatalf("error names no field: %v", err)
			}
			return
		}
		for _, file := range files {
			if err := strictCheck(file.Data); err != nil {
				t.Fatalf("%s: %v", file.Path, err)
			}
			if !json.Valid(file.Data) {
				t.Fatalf("%s: invalid JSON", file.Path)
			}
		}
		ms, err := selector.Parse("dashboards", sel)
		if err != nil {
			t.Fatalf("Generate accepted selector %q, selector.Parse refuses it: %v", sel, err)
		}
		want := ms.String() // the queries carry the parsed matchers, rendered
		if want == "" {
			return
		}
		var d dashboard.Dashboard
		if err := json.Unmarshal(files[0].Data, &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range panels(d) {
			for _, tg := range p.Targets {
				if expr := tg.(*prometheus.Dataquery).Expr; !strings.Contains(expr, want+"}") {
					t.Fatalf("selector %q missing from %q", want, expr)
				}
			}
		}
	})
}
