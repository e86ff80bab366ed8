#!/usr/bin/env bash
# The wire fuzzer (docs/fuzzing.md): builds Tools/wire-fuzz with libFuzzer
# and AddressSanitizer, then fuzzes the decoders for SECONDS seconds from
# the committed corpus (Tests/FuzzCorpus) and the seeds written from
# docs/wire-format.md's examples.
#
#   ./scripts/fuzz.sh 60            # a minute, as CI runs it
#   FUZZ_MERGE=1 ./scripts/fuzz.sh 600   # and merge what adds coverage into the corpus
#
# A crash, a leak, a trap (the two decoders disagreeing) or an input slower
# than 10 s fails the run; libFuzzer leaves the input in crash-*/leak-*/
# timeout-* under .build-fuzz/findings, and every finding becomes a
# regression test (add it to the corpus: the corpus test replays it).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh

seconds="${1:?usage: scripts/fuzz.sh SECONDS}"
# The recipe: name the product; --sanitize=fuzzer gives libFuzzer's main,
# and the comma-joined -Xswiftc flag gives every target coverage and ASan
# (`-sanitize=fuzzer,address` alone builds a fuzzer that does nothing).
swift build -c release --product wire-fuzz --scratch-path .build-fuzz \
    --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address
fuzzer=".build-fuzz/release/wire-fuzz"

seeds="$(mktemp -d)"
work="$(mktemp -d)"
trap 'rm -rf "$seeds" "$work"' EXIT
python3 scripts/fuzz-seeds.py "$seeds"
findings=".build-fuzz/findings"
mkdir -p "$findings"

# New inputs go to the first folder (a scratch one), never straight into
# the committed corpus. The Swift runtime's backtracer would stand in
# front of libFuzzer's own crash report.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
start=$SECONDS
set +e
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$findings/" \
    "$work" Tests/FuzzCorpus "$seeds" 2>&1 | tee "$findings/last-run.txt" | grep -v '^#[0-9]*\s*\(NEW\|REDUCE\|pulse\)'
status=${PIPESTATUS[0]}
set -e
echo "fuzzed for $((SECONDS - start)) s"
if [ "$status" -ne 0 ]; then
    echo "error: the fuzzer stopped with status $status; the input is in $findings" >&2
    exit "$status"
fi

if [ -n "${FUZZ_MERGE:-}" ]; then
    "$fuzzer" -merge=1 Tests/FuzzCorpus "$work" "$seeds"
fi
