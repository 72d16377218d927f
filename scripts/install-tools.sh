#!/usr/bin/env bash
# Installs the pinned external tools (promtool and the Prometheus server 3.16) into ./bin.
# They are built from source with `go install`, never added to the library's go.mod, and reused
# from ./bin or from a per-user cache when already built.
#
# Both are built in one `go install` (one build graph, shared compilation) with the
# remove_all_sd tag: stormwatch's checks use only static scrape configs, and dropping the
# service-discovery plugins trims the build graph by about a sixth (1,527 → 1,284 packages).
set -euo pipefail
cd "$(dirname "$0")/.."
PROM_VERSION=v0.316.0        # Go module version of Prometheus 3.16.0
PROM_RELEASE=3.16.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/stormwatch-tools/prometheus-$PROM_VERSION"
mkdir -p bin "$cache"
is_release() { [ -x "$1" ] && "$1" --version 2>&1 | grep -q "version $PROM_RELEASE"; }
missing=()
for tool in promtool prometheus; do
  if ! is_release "bin/$tool" && ! is_release "$cache/$tool"; then
    missing+=("github.com/prometheus/prometheus/cmd/$tool@$PROM_VERSION")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} (go install, first time only)" >&2
  GOBIN="$cache" go install -tags remove_all_sd \
    -ldflags "-X github.com/prometheus/common/version.Version=$PROM_RELEASE" "${missing[@]}"
fi
for tool in promtool prometheus; do
  if ! is_release "bin/$tool"; then
    cp "$cache/$tool" "bin/$tool"
  fi
done
bin/promtool --version | head -1
