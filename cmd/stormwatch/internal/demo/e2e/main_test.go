//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

// stormwatchBin is the CLI, built once by TestMain.
var stormwatchBin string

// client reads the demos' and Prometheus's HTTP APIs.
var client = e2eprom.NewClient(10 * time.Second)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stormwatch-demo-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stormwatchBin = filepath.Join(dir, "stormwatch")
	build := exec.Command("go", "build", "-o", stormwatchBin, "github.com/stormwatch-go/stormwatch/cmd/stormwatch")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building stormwatch: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}
