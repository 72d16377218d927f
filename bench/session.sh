#!/usr/bin/env bash
# One interleaved benchmark session: the bench module of an earlier checkout ("before") and of
# this one ("after") are built once and run in alternating order, round after round, so each pair
# is measured seconds apart on the same machine. Tabulate the output with ./tabulate.
#
#   git worktree add /tmp/before <commit>
#   bench/session.sh /tmp/before raw 7
#   cd bench && go run ./tabulate -dir ../raw -match 'Breaker'
#
# CALLS (a -bench pattern) replaces the call-path benchmarks, SCRAPES='' skips the scrapes and
# BENCHTIME sets the call paths' -benchtime (default 200ms):
#
#   CALLS='BreakerClosedSuccess|HTTPXOverhead$' SCRAPES= bench/session.sh /tmp/before raw 7
set -euo pipefail
before=${1:?usage: session.sh BEFORE_CHECKOUT [OUT_DIR] [ROUNDS]}
out=${2:-raw}
rounds=${3:-7}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$before/bench" && go test -c -o "$bin/before.test" ./)
(cd "$here" && go test -c -o "$bin/after.test" ./)

calls=${CALLS:-'BreakerClosedSuccess|Bulkhead|Pipeline|RetryFirstAttemptSuccess|RetryLogLine|HTTPXOverhead$'}
scrapes=${SCRAPES-Scrape}
benchtime=${BENCHTIME:-200ms}
one() { # label round
	local dir=$before/bench
	[ "$1" = after ] && dir=$here
	(cd "$dir" &&
		"$bin/$1.test" -test.run '^$' -test.bench "$calls" -test.benchmem -test.cpu 1,2 -test.benchtime "$benchtime" &&
		if [ -n "$scrapes" ]; then
			"$bin/$1.test" -test.run '^$' -test.bench "$scrapes" -test.benchmem -test.cpu 2 -test.benchtime 3x
		fi) >"$out/$2-$1.txt"
}
for r in $(seq -w "$rounds"); do
	if [ $((10#$r % 2)) = 1 ]; then one before "$r"; one after "$r"; else one after "$r"; one before "$r"; fi
	echo "round $r of $rounds done" >&2
done
