#!/usr/bin/env bash
# Runs bin/promtool in a directory, remembering passing runs:
#
#   scripts/promtool.sh DIR ARGS…      e.g. scripts/promtool.sh out test rules stormwatch-rules.test.yaml
#
# A `test rules` or `check rules` run that passed before on the same inputs — promtool's version,
# the arguments and every file under DIR — is not repeated; its output is printed again. The key
# is the one internal/promtooltest computes, so the Go tests and the make targets share results:
# the same generated file set is checked once per machine. Failures are never remembered.
# STORMWATCH_PROMTOOL_CACHE=off runs every invocation; STORMWATCH_PROMTOOL picks the binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${STORMWATCH_PROMTOOL:-$root/bin/promtool}
[ $# -ge 2 ] || { echo "usage: $0 DIR ARGS…" >&2; exit 2; }
dir=$1
shift
cache=${STORMWATCH_PROMTOOL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/stormwatch-tools/promtool-passed}
cacheable=false
if [ "${STORMWATCH_PROMTOOL_CACHE:-}" != off ] && [ "${2:-}" = rules ] && { [ "$1" = test ] || [ "$1" = check ]; }; then
  cacheable=true
fi
if $cacheable; then
  key=$({ "$bin" --version 2>&1 | head -n 1; echo "$*"
          (cd "$dir" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum); } | sha256sum | cut -d' ' -f1)
  if [ -f "$cache/$key" ]; then
    cat "$cache/$key"
    echo "promtool.sh: passed before on the same inputs (key ${key:0:12})"
    exit 0
  fi
fi
out=$(cd "$dir" && "$bin" "$@" 2>&1) || { printf '%s\n' "$out"; exit 1; }
printf '%s\n' "$out"
if $cacheable; then
  mkdir -p "$cache"
  tmp=$(mktemp "$cache/.tmp-XXXXXX")
  printf '%s\n' "$out" >"$tmp" && mv "$tmp" "$cache/$key"
fi
