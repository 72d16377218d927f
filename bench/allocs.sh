#!/usr/bin/env bash
# Allocations per request of the HTTPXOverhead rows, by goroutine, from an exact allocation profile
# (-test.memprofilerate 1) of N requests: the calling goroutine (the RoundTrip), net/http's
# connection goroutines (readLoop, writeLoop) and the server's. Unlike allocs/op it leaves out the
# background scrape, whose allocations land on however many requests a loaded machine fits
# between two scrapes.
#
#   (cd /tmp/before/bench && go test -c -o /tmp/before.test .) && go test -c -o /tmp/after.test .
#   bench/allocs.sh /tmp/before.test /tmp/after.test 5000
set -euo pipefail
before=${1:?usage: allocs.sh BEFORE_TEST_BINARY AFTER_TEST_BINARY [N]}
after=${2:?usage: allocs.sh BEFORE_TEST_BINARY AFTER_TEST_BINARY [N]}
n=${3:-5000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # binary profile focus
	go tool pprof -top -alloc_objects -focus "$3" "$1" "$2" 2>/dev/null |
		awk -v n="$n" '/^Showing nodes accounting for/ {gsub(",", "", $5); printf "%.1f", $5 / n}'
}
echo "| row | binary | RoundTrip goroutine | connection goroutines | server | total |"
echo "|---|---|---:|---:|---:|---:|"
for label in before after; do
	bin=$before
	[ "$label" = after ] && bin=$after
	for row in plain httpx httpx_default failsafehttp; do
		prof=$tmp/$label-$row.out
		(cd "$here" && "$bin" -test.run '^$' -test.bench "HTTPXOverhead\$/$row\$" -test.benchtime "${n}x" -test.cpu 1 \
			-test.memprofile "$prof" -test.memprofilerate 1 >/dev/null)
		c=$(count "$bin" "$prof" 'bench\.roundTrip$')
		l=$(count "$bin" "$prof" 'persistConn\)\.(readLoop|writeLoop)$')
		s=$(count "$bin" "$prof" 'conn\)\.serve$')
		echo "| $row | $label | $c | $l | $s | $(awk -v a="$c" -v b="$l" -v c="$s" 'BEGIN{printf "%.1f", a + b + c}') |"
	done
done
