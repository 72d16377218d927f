//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

// stormwatchBin is the CLI, built once by TestMain.
var stormwatchBin string

// client reads the demos' and Prometheus's HTTP APIs.
var client = e2eprom.NewClient(10 * time.Second)

func TestMain(m *testing.M) { e2eprom.MainWithCLI(m, &stormwatchBin) }
