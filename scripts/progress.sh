#!/usr/bin/env bash
# progress.sh LABEL COMMAND [ARGS…]: runs COMMAND, printing "LABEL…" first, a line every 20 s
# while it runs ("… still LABEL (40s)"), and how long it took; exits with COMMAND's status.
# Long silent steps (compiling Prometheus, a cold go build) say what they are doing.
set -uo pipefail
label=$1
shift
start=$(date +%s)
echo "$label…" >&2
( while sleep 20; do echo "… still $label ($(( $(date +%s) - start ))s)" >&2; done ) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null' EXIT
"$@"
status=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
if [ "$status" -eq 0 ]; then
  echo "done $label in $(( $(date +%s) - start ))s" >&2
fi
exit "$status"
