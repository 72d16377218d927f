package grpcx_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// grpcx is a module of its own so that stormwatch's main module never depends on gRPC: users
// who do not use gRPC never download it. The main module's build list must not hold it.
func TestMainModuleDoesNotDependOnGRPC(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "github.com/stormwatch-go/stormwatch\n", "ran in the main module")
	for _, line := range strings.Split(string(out), "\n") {
		mod, _, _ := strings.Cut(line, " ")
		require.NotEqual(t, "google.golang.org/grpc", mod, "the main module's build list holds gRPC")
	}
}
