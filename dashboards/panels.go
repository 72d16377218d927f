package dashboards

import (
	"strconv"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Grafana colour names used by the panels.
const (
	colorGreen     = "green"
	colorYellow    = "yellow"
	colorOrange    = "orange"
	colorRed       = "red"
	colorDarkRed   = "dark-red"
	colorBlue      = "blue"
	colorGrey      = "text"
	prometheusType = "prometheus"
)

// Grid sizes (Grafana's grid is 24 columns wide).
const (
	gridWidth   = 24
	half        = gridWidth / 2
	third       = gridWidth / 3
	statHeight  = 4
	graphHeight = 8
)

// datasourceRef points panels, queries and query variables at the dashboard's datasource variable.
func datasourceRef() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr(prometheusType), Uid: cog.ToPtr("${" + varDatasource + "}")}
}

// target is one PromQL query of a panel.
type target struct {
	expr   string
	legend string
}

// refID names the i-th query of a panel: A, B, C, …
func refID(i int) string { return string(rune('A' + i)) }

func queries(ts []target, instant bool) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], len(ts))
	for i, t := range ts {
		b := prometheus.NewDataqueryBuilder().
			Datasource(datasourceRef()).
			Expr(t.expr).
			LegendFormat(t.legend).
			RefId(refID(i))
		if instant {
			b = b.Instant()
		} else {
			b = b.Range()
		}
		out[i] = b
	}
	return out
}

func legend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).
		Calcs([]string{"mean", "max", "lastNotNull"}).
		SortBy("Max").
		SortDesc(true)
}

func tooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)
}

// thresholds builds absolute threshold steps: base colour, then (value, colour) pairs.
func thresholds(base string, steps ...step) *dashboard.ThresholdsConfigBuilder {
	ts := []dashboard.Threshold{{Color: base}}
	for _, s := range steps {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(s.value), Color: s.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

type step struct {
	value float64
	color string
}

// graph is a time series panel.
type graph struct {
	id          uint32
	title       string
	description string
	unit        string
	width       uint32
	targets     []target
	// ratio draws 0..1 values on a 0..100 % axis.
	ratio bool
	// stacked stacks the series (parts of one whole, such as outcomes).
	stacked bool
	// bars draws bars (discrete events such as trips).
	bars bool
	// dashed lists the refIds drawn as dashed red reference lines (configured limits).
	dashed []string
}

func (g graph) build() *timeseries.PanelBuilder {
	b := timeseries.NewPanelBuilder().
		Id(g.id).
		Title(g.title).
		Description(g.description).
		Datasource(datasourceRef()).
		Targets(queries(g.targets, false)).
		Unit(g.unit).
		Min(0).
		Height(graphHeight).
		Span(g.width).
		Legend(legend()).
		Tooltip(tooltip()).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		SpanNulls(common.BoolOrFloat64{Bool: cog.ToPtr(false)})
	if g.ratio {
		b = b.Max(1)
	}
	if g.stacked {
		b = b.Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).FillOpacity(30)
	}
	if g.bars {
		b = b.DrawStyle(common.GraphDrawStyleBars).FillOpacity(80)
	}
	for _, ref := range g.dashed {
		b = b.OverrideByQuery(ref, []dashboard.DynamicConfigValue{
			{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []any{10.0, 10.0}}},
			{Id: "custom.fillOpacity", Value: 0.0},
			{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": colorRed}},
		})
	}
	return b
}

// single is a stat panel showing one number.
type single struct {
	id          uint32
	title       string
	description string
	unit        string
	width       uint32
	expr        string
	legend      string
	thresholds  *dashboard.ThresholdsConfigBuilder
	mappings    []dashboard.ValueMapping
	noValue     string
	decimals    *float64
	// named shows the series' legend (the dependency) next to the value.
	named bool
}

func (s single) build() *stat.PanelBuilder {
	b := stat.NewPanelBuilder().
		Id(s.id).
		Title(s.title).
		Description(s.description).
		Datasource(datasourceRef()).
		Targets(queries([]target{{expr: s.expr, legend: s.legend}}, false)).
		Unit(s.unit).
		Height(statHeight).
		Span(s.width).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeBackground).
		TextMode(textMode(s.named)).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		Thresholds(s.thresholds)
	if s.mappings != nil {
		b = b.Mappings(s.mappings)
	}
	if s.noValue != "" {
		b = b.NoValue(s.noValue)
	}
	if s.decimals != nil {
		b = b.Decimals(*s.decimals)
	}
	return b
}

func textMode(named bool) common.BigValueTextMode {
	if named {
		return common.BigValueTextModeValueAndName
	}
	return common.BigValueTextModeValue
}

// timeline is a state timeline panel.
type timeline struct {
	id          uint32
	title       string
	description string
	targets     []target
	mappings    []dashboard.ValueMapping
	links       []cog.Builder[dashboard.DashboardLink]
	height      uint32
}

func (t timeline) build() *statetimeline.PanelBuilder {
	b := statetimeline.NewPanelBuilder().
		Id(t.id).
		Title(t.title).
		Description(t.description).
		Datasource(datasourceRef()).
		Targets(queries(t.targets, false)).
		Unit(units.NoUnit).
		Height(t.height).
		Span(gridWidth).
		Mappings(t.mappings).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)).
		Thresholds(thresholds(colorGrey)).
		ShowValue(common.VisibilityModeAuto).
		MergeValues(true).
		RowHeight(0.9).
		FillOpacity(80).
		LineWidth(0).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom)).
		Tooltip(tooltip())
	if len(t.links) > 0 {
		b = b.DataLinks(t.links)
	}
	return b
}

// valueText maps exact values to texts and colours; the order of values is kept.
func valueText(texts []string, colors map[string]string, first int) dashboard.ValueMapping {
	opts := make(map[string]dashboard.ValueMappingResult, len(texts))
	for i, text := range texts {
		opts[strconv.Itoa(first+i)] = dashboard.ValueMappingResult{
			Text:  cog.ToPtr(text),
			Color: cog.ToPtr(colors[text]),
			Index: cog.ToPtr(int32(i)),
		}
	}
	return dashboard.ValueMapping{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}
}
