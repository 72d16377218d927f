#!/usr/bin/env bash
# Installs the pinned external tools into ./bin: promtool and/or the Prometheus server 3.16,
# amtool and/or the Alertmanager server 0.35.
#
#   scripts/install-tools.sh [promtool|prometheus|amtool|alertmanager|all|victoriametrics]     (default: all)
#
# `all` is what CI needs: promtool, prometheus and amtool (the Alertmanager fragment's
# check-config and routes tests). The Alertmanager server is for `make e2e` only.
#
# `make test` needs promtool only; `make e2e` and `make demo-prometheus` need the server, whose
# build takes several minutes cold: each target installs only what it uses. Both are built from
# source with `go install` (never added to the library's go.mod), with the remove_all_sd tag:
# stormwatch uses static scrape configs only, and dropping the service-discovery plugins trims
# the build graph by about a sixth. Built binaries are cached per user
# (${XDG_CACHE_HOME:-~/.cache}/stormwatch-tools), so a new clone or worktree copies them in
# a second; Go's build cache makes the second tool's build shorter than the first's.
set -euo pipefail
cd "$(dirname "$0")/.."
PROM_VERSION=v0.316.0        # Go module version of Prometheus 3.16.0
PROM_RELEASE=3.16.0
# victoriametrics: the single-node server and vmalert 1.151, built from source with go install
# (cached per user). Debian's victoria-metrics package is too old (1.79: its vmalert refuses
# keep_firing_for). Measured: about 40 s for both with a warm module cache.
VM_VERSION=v1.151.0
if [ "${1:-}" = victoriametrics ]; then
  mkdir -p bin
  vmcache="${XDG_CACHE_HOME:-$HOME/.cache}/stormwatch-tools/victoria-metrics-$VM_VERSION"
  if [ ! -x "$vmcache/vmalert" ] || [ ! -x "$vmcache/victoria-metrics" ]; then
    scripts/progress.sh "building vmalert and victoria-metrics $VM_VERSION from source (first time only)" \
      env GOBIN="$vmcache" go install \
      "github.com/VictoriaMetrics/VictoriaMetrics/app/vmalert@$VM_VERSION" \
      "github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@$VM_VERSION"
  fi
  if ! cmp -s "$vmcache/vmalert" bin/vmalert || ! cmp -s "$vmcache/victoria-metrics" bin/victoria-metrics; then
    cp "$vmcache/vmalert" "$vmcache/victoria-metrics" bin/
  fi
  echo "install-tools: bin/vmalert, bin/victoria-metrics ($VM_VERSION)"
  exit 0
fi
case "${1:-all}" in
  promtool) tools=(promtool) ;;
  prometheus) tools=(prometheus) ;;
  amtool) tools=() ; am_tools=(amtool) ;;
  alertmanager) tools=() ; am_tools=(alertmanager) ;;
  all) tools=(promtool prometheus) ; am_tools=(amtool) ;;
  *) echo "usage: $0 [promtool|prometheus|amtool|alertmanager|all|victoriametrics]" >&2; exit 2 ;;
esac
am_tools=("${am_tools[@]+"${am_tools[@]}"}")
cache="${XDG_CACHE_HOME:-$HOME/.cache}/stormwatch-tools/prometheus-$PROM_VERSION"
mkdir -p bin "$cache"
is_release() { [ -x "$1" ] && "$1" --version 2>&1 | grep -q "version $PROM_RELEASE"; }
missing=()
for tool in "${tools[@]+"${tools[@]}"}"; do
  if ! is_release "bin/$tool" && ! is_release "$cache/$tool"; then
    missing+=("$tool")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=()
  for tool in "${missing[@]}"; do
    pkgs+=("github.com/prometheus/prometheus/cmd/$tool@$PROM_VERSION")
  done
  # Measured cold (empty Go build cache, 2 shared cores): promtool 110 s; the server 143 s on
  # its own, 74 s after promtool (shared compilation in the Go build cache).
  scripts/progress.sh "building ${missing[*]} $PROM_RELEASE from source (first time only)" \
    env GOBIN="$cache" go install -tags remove_all_sd \
    -ldflags "-X github.com/prometheus/common/version.Version=$PROM_RELEASE" "${pkgs[@]}"
fi
for tool in "${tools[@]+"${tools[@]}"}"; do
  if ! is_release "bin/$tool"; then
    cp "$cache/$tool" "bin/$tool"
  fi
  echo "install-tools: bin/$tool ($("bin/$tool" --version 2>&1 | grep -o "version [0-9.]*" | head -1))"
done

# amtool and the Alertmanager server 0.35, built the same way (go install, cached per user).
AM_VERSION=v0.35.0
AM_RELEASE=0.35.0
[ ${#am_tools[@]} -gt 0 ] || exit 0
am_cache="${XDG_CACHE_HOME:-$HOME/.cache}/stormwatch-tools/alertmanager-$AM_VERSION"
mkdir -p "$am_cache"
is_am_release() { [ -x "$1" ] && "$1" --version 2>&1 | grep -q "version $AM_RELEASE"; }
am_missing=()
for tool in "${am_tools[@]}"; do
  if ! is_am_release "bin/$tool" && ! is_am_release "$am_cache/$tool"; then
    am_missing+=("$tool")
  fi
done
am_ldflags="-X github.com/prometheus/common/version.Version=$AM_RELEASE"
for tool in "${am_missing[@]+"${am_missing[@]}"}"; do
  if [ "$tool" = amtool ]; then
    scripts/progress.sh "building amtool $AM_RELEASE from source (first time only)" \
      env GOBIN="$am_cache" go install -ldflags "$am_ldflags" "github.com/prometheus/alertmanager/cmd/amtool@$AM_VERSION"
    continue
  fi
  # The server embeds its web UI (ui/app/dist), which is built by npm and absent from the Go
  # module: `go install …/cmd/alertmanager@…` fails on the //go:embed. Build it from a copy
  # of the module with a placeholder page instead of the UI: the API, the routing, grouping,
  # inhibition and notifications are all there (the tests use nothing else).
  src=$(mktemp -d)
  trap 'chmod -R u+w "$src" 2>/dev/null; rm -rf "$src"' EXIT
  mod=$(go mod download -json "github.com/prometheus/alertmanager@$AM_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  cp -R "$mod/." "$src/" && chmod -R u+w "$src"
  for ui in elm mantine; do
    mkdir -p "$src/ui/app/dist/$ui"
    echo '<!doctype html><title>Alertmanager</title><p>Built without the web UI: use the API (/api/v2) or amtool.' >"$src/ui/app/dist/$ui/index.html"
  done
  scripts/progress.sh "building alertmanager $AM_RELEASE from source, without the web UI (first time only)" \
    sh -c "cd '$src' && go build -ldflags '$am_ldflags' -o '$am_cache/alertmanager' ./cmd/alertmanager"
done
for tool in "${am_tools[@]}"; do
  if ! is_am_release "bin/$tool"; then
    cp "$am_cache/$tool" "bin/$tool"
  fi
  echo "install-tools: bin/$tool ($("bin/$tool" --version 2>&1 | grep -o "version [0-9.]*" | head -1))"
done
