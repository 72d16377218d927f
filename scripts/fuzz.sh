#!/usr/bin/env bash
# fuzz.sh [--list]: fuzzes every fuzz target of the repository — the main module and the
# separate modules (conformance/, bench/, any directory with a go.mod) — for FUZZTIME each
# (default 30s; any `go test -fuzztime` value: 45s, 2m, 10000x), one `go test -fuzz` run per
# target (Go fuzzes one target per invocation), then prints a summary table: target, package,
# execs, new interesting inputs, result. Exits 1 if any target failed; a failing input is written
# by Go to the package's testdata/fuzz/<target>/ (commit it: it becomes a regression seed).
#
# There is no list of targets to maintain: the targets are discovered. Every `func Fuzz…` in a
# *_test.go file is found with grep, and each package holding one is asked for its targets with
# `go test -list '^Fuzz'` (what Go will actually fuzz). The two must agree: a `func Fuzz…` that
# `go test` does not see (a build tag, a wrong signature) fails the run instead of being skipped
# silently. So a new target, or one moved to another package, is fuzzed with no edit here.
#
#   --list      discover and cross-check only; print "module package target" lines
#   FUZZ        regexp: fuzz only the targets whose name matches (default: all)
#   FUZZ_TIMEOUT  go test -timeout of each run (default: FUZZTIME + 10m; 0 disables)
#   GO          the go command (default: go)
#
# `make test` runs the seed corpora (testdata/fuzz and f.Add) as ordinary tests; this script is
# `make fuzz`, which actually mutates inputs.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
go=${GO:-go}
fuzztime=${FUZZTIME:-30s}
filter=${FUZZ:-.}
list_only=false
case "${1:-}" in
  --list) list_only=true ;;
  "") ;;
  *) echo "usage: scripts/fuzz.sh [--list]   (env: FUZZTIME, FUZZ, FUZZ_TIMEOUT, GO)" >&2; exit 2 ;;
esac

die() { echo "fuzz: $*" >&2; exit 1; }

# seconds DURATION: a Go duration made of h, m and s parts in seconds, or nothing.
seconds() {
  local d=$1 total=0
  while [[ $d =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
    case ${BASH_REMATCH[2]} in
      h) total=$((total + BASH_REMATCH[1] * 3600)) ;;
      m) total=$((total + BASH_REMATCH[1] * 60)) ;;
      s) total=$((total + BASH_REMATCH[1])) ;;
    esac
    d=${BASH_REMATCH[3]}
  done
  [[ -z $d ]] && echo "$total"
}
if [[ -n ${FUZZ_TIMEOUT:-} ]]; then
  timeout=$FUZZ_TIMEOUT
elif s=$(seconds "$fuzztime") && [[ -n $s ]]; then
  timeout="$((s + 600))s" # room for building, the baseline and minimising a failure
else
  timeout=10m # FUZZTIME as a count of executions (e.g. 10000x): go test's default
fi

# module_of DIR: the nearest directory at or above DIR (relative to the root) with a go.mod.
module_of() {
  local d=$1
  while [[ ! -f $d/go.mod ]]; do
    [[ $d == . ]] && return 1
    d=$(dirname "$d")
  done
  echo "$d"
}

# Discovery: the packages whose test files declare a fuzz target, and the names declared.
mapfile -t files < <(grep -rlE --include='*_test.go' \
  --exclude-dir=.git --exclude-dir=bin --exclude-dir=testdata --exclude-dir=vendor \
  '^func Fuzz[A-Za-z0-9_]*\(' . | sed 's|^\./||' | sort)
[[ ${#files[@]} -gt 0 ]] || die "no func Fuzz… found in any *_test.go"
declare -A declared # dir -> space-separated names from grep
for f in "${files[@]}"; do
  dir=$(dirname "$f")
  for name in $(grep -hoE '^func Fuzz[A-Za-z0-9_]*\(' "$f" | sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(/\1/'); do
    declared[$dir]+="$name "
  done
done

targets=() # "module pkg name", pkg relative to its module (./x/y)
problems=0
for dir in $(printf '%s\n' "${!declared[@]}" | sort); do
  mod=$(module_of "$dir") || die "$dir: no go.mod above it"
  if [[ $dir == "$mod" ]]; then
    rel=.
  elif [[ $mod == . ]]; then
    rel=./$dir
  else
    rel=./${dir#"$mod"/}
  fi
  listed=$(cd "$root/$mod" && "$go" test -list '^Fuzz' "$rel" 2>&1) ||
    die "go test -list in $mod for $rel failed:"$'\n'"$listed"
  listed=$(grep -E '^Fuzz[A-Za-z0-9_]*$' <<<"$listed" | sort -u)
  for name in $(tr ' ' '\n' <<<"${declared[$dir]}" | sort -u); do
    if ! grep -qx "$name" <<<"$listed"; then
      echo "fuzz: $dir declares $name but \`go test -list\` does not list it (a build tag? not func(*testing.F)?): it would never be fuzzed" >&2
      problems=$((problems + 1))
    fi
  done
  for name in $listed; do
    targets+=("$mod $rel $name")
  done
done
[[ $problems -eq 0 ]] || die "$problems fuzz target(s) not runnable by go test"

if $list_only; then
  printf '%s\n' "${targets[@]}"
  exit 0
fi

selected=()
for t in "${targets[@]}"; do
  read -r _ _ name <<<"$t"
  [[ $name =~ $filter ]] && selected+=("$t")
done
[[ ${#selected[@]} -gt 0 ]] || die "FUZZ=$filter matches none of the ${#targets[@]} targets"

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
rows=()
failed=0
start=$(date +%s)
echo "fuzz: ${#selected[@]} targets, -fuzztime $fuzztime each"
for t in "${selected[@]}"; do
  read -r mod rel name <<<"$t"
  pkg=$mod/$rel # the package's directory relative to the root, for the table
  pkg=${pkg//\/.\//\/}
  pkg=${pkg#./}
  pkg=${pkg%/.}
  log=$logs/$name.log
  echo "== $name ($pkg)"
  (cd "$root/$mod" && "$go" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -timeout "$timeout" "$rel") 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  interesting=$(grep -oE 'new interesting: [0-9]+ \(total: [0-9]+\)' "$log" | tail -1 | sed -E 's/new interesting: ([0-9]+) \(total: ([0-9]+)\)/\1 (corpus \2)/' || true)
  if [[ $status -eq 0 ]] && grep -q 'no tests to fuzz' "$log"; then
    result="FAIL: no tests to fuzz"
    status=1
  elif [[ $status -eq 0 ]]; then
    result=PASS
  else
    input=$(grep -oE 'Failing input written to [^ ]+' "$log" | tail -1 | sed 's/Failing input written to //' || true)
    result="FAIL${input:+: $pkg/$input}"
  fi
  [[ $status -eq 0 ]] || failed=$((failed + 1))
  rows+=("$name|$pkg|${execs:-0}|${interesting:--}|$result")
done

echo
echo "fuzz summary (-fuzztime $fuzztime per target, $(($(date +%s) - start))s in all)"
{
  echo "target|package|execs|new interesting|result"
  printf '%s\n' "${rows[@]}"
} | column -t -s '|'
if [[ $failed -gt 0 ]]; then
  echo "fuzz: $failed of ${#selected[@]} targets FAILED (failing inputs are in the packages' testdata/fuzz/: commit them as regression seeds)"
  exit 1
fi
echo "fuzz: all ${#selected[@]} targets passed"
