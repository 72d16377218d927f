//go:build e2e

// Package realtime runs the demo's scenarios at real time scales (31 minutes of demo time on
// a fake clock) against the default generated rules, evaluated by promtool. It is a package of
// its own, so a test binary of its own: its simulation drives the Go scheduler to idle between
// clock steps (GOMAXPROCS 1), which no other test's goroutines may disturb, and `make e2e` runs
// it beside the wall-clock packages rather than before them.
package realtime

import (
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

// stormwatchBin is the CLI, built once by TestMain.
var stormwatchBin string

// client reads the demos' /metrics.
var client = e2eprom.NewClient(10 * time.Second)

func TestMain(m *testing.M) { e2eprom.MainWithCLI(m, &stormwatchBin) }
