#!/usr/bin/env bash
# From a fresh clone to passing tests, with one command:
#   ./scripts/test.sh
# Installs libzmq3-dev if missing, builds everything (library, examples,
# tools), runs the whole suite, then runs it again under ThreadSanitizer.
# Set RLK_SKIP_TSAN=1 to skip the ThreadSanitizer run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh

# Each part is timed and printed, so that CI shows the plain run and the
# ThreadSanitizer run as steps of their own.
part_start=$SECONDS
part() {
    echo "== $1 (part done in $((SECONDS - part_start)) s)"
    part_start=$SECONDS
}

echo "== swift build --build-tests (library, examples, tools, tests)"
# One build for everything, the tests included (two cores kept busy to the
# end, rather than a second build's tail).
# No warning from the build's own set-up: libzmq's pkg-config flags used to
# make SwiftPM print "prohibited flag(s)" in every client's build.
mkdir -p .build
swift build --build-tests 2>&1 | tee .build/build-output.txt
if grep -q "prohibited flag" .build/build-output.txt; then
    echo "error: the build printed a 'prohibited flag' warning (see Package.swift, CZeroMQ)" >&2
    exit 1
fi
echo "== Foundation beside RunLoopKit: every clashing name covered by both recipes"
./scripts/foundation-clashes.sh
swift run --skip-build foundation-interop
echo "== swift test"
./scripts/check-test-suites.sh
source scripts/ensure-test-deps.sh
# A hung run fails with a list of what was running (scripts/test-watchdog.sh).
source scripts/test-watchdog.sh
# The whole suite runs at once on two cores, beside headless Chromium and
# dozens of child processes: a handshake with a live, listening peer may
# pass the 1 s connection bound (docs/contributing.md, "Bounds").
export RUNLOOPKIT_CONNECTION_BOUND=5
run_with_watchdog "the tests" swift test --skip-build
part "plain build and tests passed"
if [ "${RLK_SKIP_TSAN:-0}" != 1 ]; then
    echo "== swift test --sanitize=thread"
    # A build directory of its own, so that the plain build stays valid; the
    # programs too, because the portsniff tests run them.
    swift build --build-tests --sanitize=thread --scratch-path .build/tsan
    # Every process's report in a file of its own (scripts/sanitizer-reports.sh).
    source scripts/sanitizer-reports.sh
    reports=.build/tsan/sanitizer-reports
    export TSAN_OPTIONS="$(sanitizer_report_options "$reports")${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
    status=0
    run_with_watchdog "the tests under ThreadSanitizer" swift test --skip-build --sanitize=thread --scratch-path .build/tsan || status=$?
    print_sanitizer_reports "$reports" "WARNING: ThreadSanitizer"
    exit_if_sanitizer_run_failed ThreadSanitizer races "$status"
    part "ThreadSanitizer build and tests passed"
fi
echo "== all tests passed"
