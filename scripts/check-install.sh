#!/usr/bin/env bash
# Runs the two install paths README gives, as a user would, and checks what they generate with
# promtool 3.16 (bin/promtool, from scripts/install-tools.sh):
#
#  1. From a clone: `go build -o bin/stormwatch ./cmd/stormwatch`, then
#     `bin/stormwatch generate -o <dir>`.
#  2. In the user's own module, with Go's tool directive:
#     `go get -tool github.com/stormwatch-go/stormwatch/cmd/stormwatch`, then
#     `go tool stormwatch generate …`. The throwaway module points the stormwatch module at this
#     checkout with a replace directive and reads dependencies from the module cache only
#     (GOPROXY=off), so the check runs offline and tests this commit, not a published version.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
go=${GO:-go}
module=github.com/stormwatch-go/stormwatch
promtool=$root/bin/promtool
if [ ! -x "$promtool" ]; then
  echo "check-install: $promtool is missing: run 'make tools' (scripts/install-tools.sh)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check_rules() { # dir: lint the rule file and run the generated promtool tests (each file set
  # once per machine: scripts/promtool.sh remembers what passed)
  "$root/scripts/promtool.sh" "$1" check rules --lint=all --lint-fatal stormwatch-rules.yaml
  "$root/scripts/promtool.sh" "$1" test rules stormwatch-rules.test.yaml
}

echo "== check-install: from a clone"
set -x
"$go" build -o bin/stormwatch ./cmd/stormwatch
bin/stormwatch version
bin/stormwatch generate -o "$tmp/clone-out"
{ set +x; } 2>/dev/null
check_rules "$tmp/clone-out"
test -f "$tmp/clone-out/runbooks/CircuitBreakerStuckOpen/README.md"

echo "== check-install: go get -tool in a user's module (offline, replace => this checkout)"
mkdir "$tmp/user"
cd "$tmp/user"
"$go" mod init example.com/user >/dev/null 2>&1
"$go" mod edit -replace "$module=$root"
cp "$root/go.sum" go.sum # the checksums of stormwatch's dependencies, so no sum database is needed
# The rules package's unit tests check this configuration's rules and tests with promtool
# (TestPromtoolAcceptsGeneratedRulesAndTests): scripts/promtool.sh recalls that run by content
# rather than spending a minute of promtool on another configuration here.
cat >stormwatch.yaml <<'EOF'
group_by: [cluster, job]
selector: 'job=~"checkout|cart", cluster!="dev"'
EOF
export GOPROXY=off GOFLAGS="${GOFLAGS:-} -mod=mod"
set -x
"$go" get -tool "$module/cmd/stormwatch"
"$go" tool stormwatch version | grep '^stormwatch devel ' # a local replacement has no version
"$go" tool stormwatch generate -c stormwatch.yaml -o monitoring/stormwatch
{ set +x; } 2>/dev/null
grep -qx "tool $module/cmd/stormwatch" go.mod || { echo "check-install: go.mod has no tool directive" >&2; exit 1; }
grep -q 'by (cluster, job, name)' monitoring/stormwatch/stormwatch-rules.yaml # the config was applied
grep -q 'cluster!="dev"' monitoring/stormwatch/stormwatch-rules.yaml
check_rules monitoring/stormwatch
echo "== check-install: ok"
