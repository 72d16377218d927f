package rules

import "time"

// matrixConfigs are the configurations of TestPromtoolAcceptsTheConfigMatrix (build tag
// promtoolmatrix), whose test cost TestAlertTestsStayCheap bounds in the unit suite.
func matrixConfigs() map[string]Config {
	configs := map[string]Config{
		"custom": {
			Namespace: "acme", Selector: `job=~"checkout|cart", env="prod", team!="x", instance!="10.0.0.9:9464"`, GroupBy: []string{"cluster", "job", "name"},
			RunbookBaseURL: "https://wiki.example.com/rb",
			Alerts: map[string]AlertConfig{
				AlertStuckOpen:              {Threshold: ptr(300.0), For: ptr(2 * time.Minute), KeepFiringFor: ptr(time.Minute)},
				AlertFlapping:               {Threshold: ptr(5.0), KeepFiringFor: ptr(5 * time.Minute)},
				AlertOpenFleetWide:          {Threshold: ptr(0.25), For: ptr(time.Minute)},
				AlertRejectingCalls:         {Threshold: ptr(0.5), For: ptr(10 * time.Minute)},
				AlertRetryRateHigh:          {Threshold: ptr(0.5), Severity: "critical"},
				AlertRetryRateSpike:         {Threshold: ptr(5.0)},
				AlertRetryBudgetExhausted:   {Threshold: ptr(0.5)},
				AlertRetriesNotRescuing:     {Threshold: ptr(0.3)},
				AlertBulkheadRejectionsHigh: {Threshold: ptr(0.05), KeepFiringFor: ptr(2 * time.Minute)},
				AlertBulkheadSaturated:      {Threshold: ptr(0.75), For: ptr(5 * time.Minute)},
				AlertFallbackSustained:      {Threshold: ptr(0.5), For: ptr(20 * time.Minute)},
				AlertSlowCallRateHigh:       {Threshold: ptr(1.0)},
			},
		},
		"longer durations": {
			Alerts: map[string]AlertConfig{
				AlertStuckOpen:            {For: ptr(5 * time.Minute), KeepFiringFor: ptr(2 * time.Minute)},
				AlertFlapping:             {For: ptr(2 * time.Minute), KeepFiringFor: ptr(time.Duration(0))},
				AlertOpenFleetWide:        {For: ptr(5 * time.Minute), KeepFiringFor: ptr(3 * time.Minute)},
				AlertRetryRateSpike:       {For: ptr(10 * time.Minute)},
				AlertRetryBudgetExhausted: {For: ptr(10 * time.Minute), KeepFiringFor: ptr(5 * time.Minute)},
				AlertRetriesNotRescuing:   {For: ptr(15 * time.Minute)},
				AlertBulkheadSaturated:    {For: ptr(30 * time.Minute)},
				AlertFallbackSustained:    {For: ptr(30 * time.Minute), KeepFiringFor: ptr(5 * time.Minute)},
				AlertSlowCallRateHigh:     {For: ptr(20 * time.Minute), KeepFiringFor: ptr(10 * time.Minute)},
			},
		},
		// A short rate window (fast scrapes, quick resolution): the alerts on rates keep a
		// for longer than the window, or the blip tests would fail (a blip stays in the
		// window for the whole window).
		"rate window 1m, short fors": {
			RateWindow: time.Minute,
			Alerts: map[string]AlertConfig{
				AlertStuckOpen:              {Threshold: ptr(15.0), For: ptr(30 * time.Second)},
				AlertOpenFleetWide:          {For: ptr(30 * time.Second)},
				AlertRejectingCalls:         {For: ptr(2 * time.Minute)},
				AlertRetryRateHigh:          {For: ptr(2 * time.Minute)},
				AlertRetryRateSpike:         {For: ptr(2 * time.Minute)},
				AlertRetryBudgetExhausted:   {For: ptr(3 * time.Minute)},
				AlertRetriesNotRescuing:     {For: ptr(2 * time.Minute)},
				AlertBulkheadRejectionsHigh: {For: ptr(90 * time.Second), KeepFiringFor: ptr(time.Minute)},
				AlertBulkheadSaturated:      {For: ptr(time.Minute)},
				AlertFallbackSustained:      {For: ptr(2 * time.Minute)},
				AlertSlowCallRateHigh:       {For: ptr(time.Minute)},
			},
		},
		"rate window 1m, defaults otherwise": {RateWindow: time.Minute},
		// Slow scrapes: the gauges are read over 90s, and a vanished target resolves within 75s.
		"scrape interval 30s": {ScrapeInterval: 30 * time.Second},
		// The shortest window (scrapes every few seconds) and fors that are no whole number of
		// evaluation intervals, as in the demo profile.
		"rate window 30s": {RateWindow: 30 * time.Second, ScrapeInterval: time.Second, Alerts: map[string]AlertConfig{
			AlertStuckOpen: {Threshold: ptr(25.0), For: ptr(10 * time.Second)}, AlertRejectingCalls: {For: ptr(time.Minute)},
			AlertRetryRateHigh: {For: ptr(45 * time.Second)}, AlertRetryBudgetExhausted: {For: ptr(90 * time.Second)}, AlertRetryRateSpike: {For: ptr(time.Minute)}, AlertRetriesNotRescuing: {For: ptr(time.Minute)},
			AlertBulkheadRejectionsHigh: {For: ptr(time.Minute)}, AlertBulkheadSaturated: {For: ptr(30 * time.Second)},
			AlertFallbackSustained: {For: ptr(time.Minute)}, AlertSlowCallRateHigh: {For: ptr(30 * time.Second)},
		}},
		// A long rate window (slow scrapes), not a whole number of minutes: the fors on rates
		// exceed it.
		"rate window 15m30s, long fors": {
			RateWindow: 15*time.Minute + 30*time.Second, Selector: `env="prod"`,
			Alerts: map[string]AlertConfig{
				AlertRejectingCalls:         {For: ptr(20 * time.Minute)},
				AlertRetryRateHigh:          {For: ptr(20 * time.Minute), Threshold: ptr(0.2)},
				AlertRetryRateSpike:         {For: ptr(20 * time.Minute)},
				AlertRetriesNotRescuing:     {For: ptr(20 * time.Minute)},
				AlertBulkheadRejectionsHigh: {For: ptr(20 * time.Minute)},
				AlertFallbackSustained:      {For: ptr(30 * time.Minute), Threshold: ptr(0.5)},
			},
		},
		"no namespace, some disabled": {
			Namespace: NoNamespace, GroupBy: []string{"name"},
			Alerts: map[string]AlertConfig{
				AlertFallbackSustained: {Enabled: ptr(false)}, AlertBulkheadSaturated: {Enabled: ptr(false)},
				AlertBulkheadRejectionsHigh: {Enabled: ptr(false)}, AlertFlapping: {Threshold: ptr(40.0)},
			},
		},
	}
	// Thresholds at both ends of their ranges: the scenarios still fire, stay silent and resolve.
	for name, th := range map[string]map[string]float64{
		"low thresholds": {AlertStuckOpen: 15, AlertFlapping: 2, AlertOpenFleetWide: 0.01, AlertRejectingCalls: 0.001,
			AlertRetryRateHigh: 0.001, AlertRetryRateSpike: 1.01, AlertRetryBudgetExhausted: 0, AlertRetriesNotRescuing: 0.01,
			AlertDependencyOutage: 0.001, AlertRetryStormContained: 0.001,
			AlertBulkheadRejectionsHigh: 0.001, AlertBulkheadSaturated: 0.01, AlertFallbackSustained: 0, AlertSlowCallRateHigh: 0.01},
		"high thresholds": {AlertStuckOpen: 3600, AlertFlapping: 40, AlertOpenFleetWide: 0.99, AlertRejectingCalls: 0.999,
			AlertRetryRateHigh: 10, AlertRetryRateSpike: 100, AlertRetryBudgetExhausted: 0.999, AlertRetriesNotRescuing: 1,
			AlertDependencyOutage: 0.999, AlertRetryStormContained: 10,
			AlertBulkheadRejectionsHigh: 0.999, AlertBulkheadSaturated: 0.999, AlertFallbackSustained: 1000, AlertSlowCallRateHigh: 1},
	} {
		cfg := Config{Alerts: map[string]AlertConfig{}}
		for a, v := range th {
			cfg.Alerts[a] = AlertConfig{Threshold: ptr(v)}
		}
		configs[name] = cfg
	}
	return configs
}
