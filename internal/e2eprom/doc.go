// Package e2eprom holds the helpers shared by the end-to-end tests that run a real Prometheus
// server (e2e and cmd/stormwatch/internal/demo/e2e, both behind the e2e build tag): starting
// and stopping child processes by PID, building the module's binaries, picking free loopback
// ports, waiting for an HTTP endpoint, starting Prometheus with a generated configuration, and
// reading alerts and query results through its HTTP API.
//
// Everything here fails the test through testing.TB (require) rather than returning errors,
// binds to 127.0.0.1 only, and bounds every wait. The package has no package-level state.
package e2eprom
