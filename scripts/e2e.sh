#!/usr/bin/env bash
# `make e2e`: every end-to-end package at once — ./e2e (Alertmanager, examples/breaker, the
# httpx drill), ./e2e/victoriametrics, the demo's (cmd/stormwatch/internal/demo/e2e) and its
# real-time-scale simulation (…/e2e/realtime) in one `go test -p 4`, the OpenTelemetry
# bridge's (collector/otelx, a module of its own) beside them. They wait on wall clocks — alerts' `for`, scrape intervals — far more than they compute,
# so in parallel the slowest package alone sets the time (in sequence they took the sum).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
start=$(date +%s)
otel_log=$(mktemp)
trap 'rm -f "$otel_log"' EXIT
(cd collector/otelx && "$GO" test -tags e2e -count=1 -timeout 3m -v -run OnRealPrometheus ./... >"$otel_log" 2>&1) &
otel=$!
"$GO" test -tags e2e -count=1 -timeout 14m -p 4 -v ./e2e/... ./cmd/stormwatch/internal/demo/e2e/...
rc=$?
wait "$otel"
otel_rc=$?
echo "--- collector/otelx e2e ---"
cat "$otel_log"
echo "e2e: finished in $(( $(date +%s) - start ))s"
[ "$rc" -eq 0 ] && [ "$otel_rc" -eq 0 ]
