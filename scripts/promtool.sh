#!/usr/bin/env bash
# Runs bin/promtool in a directory, remembering passing runs:
#
#   scripts/promtool.sh DIR ARGS…      e.g. scripts/promtool.sh out test rules stormwatch-rules.test.yaml
#
# A `test rules` or `check rules` run that passed before on the same inputs is not repeated;
# its output is printed again. The inputs are keyed twice, as internal/promtooltest keys them,
# so the Go tests and the make targets share results:
#   - by directory: promtool's version, the arguments and every file under DIR;
#   - by content: promtool's version, the subcommand and flags, and the files promtool reads
#     whatever their names — for `test rules`, each test file without its rule_files block,
#     then each rule file that block names (a plain block list of plain names; anything else
#     is keyed by directory only).
# The same generated file set is checked once per machine. Failures are never remembered.
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

# content_key ARGS…: the content key (see above) on stdout, run in DIR; fails when there is none.
content_key() {
  local sub=$1 kind=$2 flags=() files=() f r tmp
  shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --run) [ $# -ge 2 ] || return 1; flags+=("$1" "$2"); shift ;;
      -*) flags+=("$1") ;;
      *) files+=("$1") ;;
    esac
    shift
  done
  [ ${#files[@]} -gt 0 ] || return 1
  tmp=$(mktemp -d)
  {
    printf 'content\n%s\n%s %s %s\n' "$version" "$sub" "$kind" "${flags[*]+"${flags[*]}"}"
    for f in "${files[@]}"; do
      [ -f "$f" ] || { rm -rf "$tmp"; return 1; }
      if [ "$sub" != test ]; then
        sha256sum <"$f" | cut -d' ' -f1
        continue
      fi
      # The body without the rule_files block, the block's entries apart: the rules of
      # internal/promtooltest's splitRuleFiles.
      awk -v entries="$tmp/entries" -v q="'" '
        /^rule_files:/ { if ($0 != "rule_files:" || seen) bad = 1; seen = 1; inb = 1; next }
        inb && /^[ \t-]/ {
          v = $0; sub(/^[ \t]*/, "", v)
          if (substr(v, 1, 2) != "- ") { bad = 1; next }
          v = substr(v, 3)
          if (v == "" || v ~ /["*?{#, \t]/ || index(v, q) || index(v, "[")) bad = 1
          print v > entries; next
        }
        { inb = 0; print }
        END { exit bad }' "$f" >"$tmp/body" || { rm -rf "$tmp"; return 1; }
      sha256sum <"$tmp/body" | cut -d' ' -f1
      [ -f "$tmp/entries" ] || continue
      while IFS= read -r r; do
        case $r in /*) ;; *) r=$(dirname "$f")/$r ;; esac
        [ -f "$r" ] || { rm -rf "$tmp"; return 1; }
        sha256sum <"$r" | cut -d' ' -f1
      done <"$tmp/entries"
      rm -f "$tmp/entries"
    done
  } >"$tmp/key" || { rm -rf "$tmp"; return 1; }
  sha256sum <"$tmp/key" | cut -d' ' -f1
  rm -rf "$tmp"
}

keys=()
if $cacheable; then
  version=$("$bin" --version 2>&1 | head -n 1)
  keys+=("$({ echo "$version"; echo "$*"
          (cd "$dir" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum); } | sha256sum | cut -d' ' -f1)")
  if ck=$(cd "$dir" && content_key "$@"); then
    keys+=("$ck")
  fi
  for key in "${keys[@]}"; do
    if [ -f "$cache/$key" ]; then
      for other in "${keys[@]}"; do # remembered under the other key too, for the next directory
        if [ ! -f "$cache/$other" ]; then
          mkdir -p "$cache"
          tmp=$(mktemp "$cache/.tmp-XXXXXX")
          cp "$cache/$key" "$tmp" && mv "$tmp" "$cache/$other"
        fi
      done
      cat "$cache/$key"
      echo "promtool.sh: passed before on the same inputs (key ${key:0:12})"
      exit 0
    fi
  done
fi
out=$(cd "$dir" && "$bin" "$@" 2>&1) || { printf '%s\n' "$out"; exit 1; }
printf '%s\n' "$out"
if $cacheable; then
  mkdir -p "$cache"
  for key in "${keys[@]}"; do
    tmp=$(mktemp "$cache/.tmp-XXXXXX")
    printf '%s\n' "$out" >"$tmp" && mv "$tmp" "$cache/$key"
  done
fi
