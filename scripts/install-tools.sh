#!/usr/bin/env bash
# Installs the pinned external tools (promtool and the Prometheus server 3.16) into ./bin.
# They are built from source with `go install`, never added to the library's go.mod, and reused
# from ./bin or from a per-user cache when already built.
set -euo pipefail
cd "$(dirname "$0")/.."
PROM_VERSION=v0.316.0        # Go module version of Prometheus 3.16.0
PROM_RELEASE=3.16.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/stormwatch-tools/prometheus-$PROM_VERSION"
mkdir -p bin "$cache"
for tool in promtool prometheus; do
  if [ -x "bin/$tool" ] && "bin/$tool" --version 2>&1 | grep -q "version $PROM_RELEASE"; then
    continue
  fi
  if ! { [ -x "$cache/$tool" ] && "$cache/$tool" --version 2>&1 | grep -q "version $PROM_RELEASE"; }; then
    echo "installing $tool $PROM_RELEASE (go install, first time only)" >&2
    GOBIN="$cache" go install \
      -ldflags "-X github.com/prometheus/common/version.Version=$PROM_RELEASE" \
      "github.com/prometheus/prometheus/cmd/$tool@$PROM_VERSION"
  fi
  cp "$cache/$tool" "bin/$tool"
done
bin/promtool --version | head -1
