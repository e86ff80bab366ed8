#!/usr/bin/env bash
# S-TAP-1's rate: an unstopped portsniff, --write included, loses no event
# of `pingpong --count 100000` (400,000 events in about 2 s). A throughput
# property, so it runs here, on a quiet machine, as the benchmarks do, and
# not in the test suite, whose parallel tests starve the tapped process's
# tap thread (its ring then overflows, which is a drop the account shows,
# not a lost event). The debug build, as `swift run portsniff` gives it.
# Three runs; most must lose nothing (docs/performance.md, "Targets").
#   ./scripts/check-sniffer-rate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
swift build --product portsniff >/dev/null
swift build --product pingpong >/dev/null
bin="$(swift build --show-bin-path)"
work="$(mktemp -d /tmp/rlk-sniffer-rate-XXXXXX)"
trap 'rm -rf "$work"' EXIT
clean=0
for run in 1 2 3; do
    mkdir -p "$work/runtime-$run"
    RUNLOOPKIT_RUNTIME_DIR="$work/runtime-$run" "$bin/portsniff" --write "$work/all-$run.jsonl" \
        -- "$bin/pingpong" --count 100000 >"$work/live-$run.txt" 2>"$work/summary-$run.txt"
    summary="$(grep 'owed (400000)' "$work/summary-$run.txt" || true)"
    # The header and the events; the account line at the end is not an event.
    lines="$(grep -vc '^{"account":' "$work/all-$run.jsonl")"
    echo "run $run: ${summary:-no account for pingpong}; $lines lines recorded"
    if [[ "$summary" == *"400000 received + 0 dropped"* && "$lines" == 400001 ]]; then clean=$((clean + 1)); fi
    # Two clean runs decide it: a third could not change the outcome.
    if [ "$clean" -ge 2 ]; then break; fi
done
if [ "$clean" -lt 2 ]; then
    echo "error: portsniff lost events of pingpong --count 100000 in $((3 - clean)) of 3 runs" >&2
    exit 1
fi
echo "sniffer rate: $clean of $run runs took all 400,000 events"
