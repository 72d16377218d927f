#!/usr/bin/env bash
# Installs the pinned external tools into ./bin: promtool and/or the Prometheus server 3.16.
#
#   scripts/install-tools.sh [promtool|prometheus|all|victoriametrics]     (default: all)
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
# victoriametrics: the single-node server and vmalert from Debian's victoria-metrics package
# (both binaries in one .deb, no build): extracted, not installed, so no service starts.
# Measured cold (2 shared cores): 10 s for apt-get download (23 MB) + dpkg -x; then cached per user.
if [ "${1:-}" = victoriametrics ]; then
  mkdir -p bin
  if [ -x bin/vmalert ] && [ -x bin/victoria-metrics ]; then
    echo "install-tools: bin/vmalert, bin/victoria-metrics (present)"; exit 0
  fi
  vmcache="${XDG_CACHE_HOME:-$HOME/.cache}/stormwatch-tools/victoria-metrics"
  if [ ! -x "$vmcache/vmalert" ] || [ ! -x "$vmcache/victoria-metrics" ]; then
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && { apt-get download victoria-metrics >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download victoria-metrics; }; }) \
      || { echo "install-tools: apt-get download victoria-metrics failed (Debian's package ships vmalert and victoria-metrics)" >&2; exit 1; }
    dpkg -x "$tmp"/victoria-metrics_*.deb "$tmp/x"
    mkdir -p "$vmcache"
    cp "$tmp/x/usr/bin/vmalert" "$tmp/x/usr/bin/victoria-metrics" "$vmcache/"
    basename "$tmp"/victoria-metrics_*.deb > "$vmcache/VERSION"
  fi
  cp "$vmcache/vmalert" "$vmcache/victoria-metrics" bin/
  echo "install-tools: bin/vmalert, bin/victoria-metrics ($(cat "$vmcache/VERSION"))"
  exit 0
fi
case "${1:-all}" in
  promtool) tools=(promtool) ;;
  prometheus) tools=(prometheus) ;;
  all) tools=(promtool prometheus) ;;
  *) echo "usage: $0 [promtool|prometheus|all|victoriametrics]" >&2; exit 2 ;;
esac
cache="${XDG_CACHE_HOME:-$HOME/.cache}/stormwatch-tools/prometheus-$PROM_VERSION"
mkdir -p bin "$cache"
is_release() { [ -x "$1" ] && "$1" --version 2>&1 | grep -q "version $PROM_RELEASE"; }
missing=()
for tool in "${tools[@]}"; do
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
for tool in "${tools[@]}"; do
  if ! is_release "bin/$tool"; then
    cp "$cache/$tool" "bin/$tool"
  fi
  echo "install-tools: bin/$tool ($("bin/$tool" --version 2>&1 | grep -o "version [0-9.]*" | head -1))"
done
