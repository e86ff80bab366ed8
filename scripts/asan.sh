#!/usr/bin/env bash
# The whole suite under AddressSanitizer, with LeakSanitizer checking every
# process at its exit: the test process, its exit tests' children, and the
# programs the tests run (pingpong, ipc-demo, portsniff):
#   ./scripts/asan.sh
# Builds into .build/asan (the plain build stays valid), runs the suite with
# the suppressions of scripts/lsan-suppressions.txt, and fails if a test
# failed or if any process reported an error or a leak. docs/contributing.md,
# "AddressSanitizer and leaks", says what is suppressed and why, and how the
# suite proves that a leaked port is still reported.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
# What the suite needs beyond the build (Chromium, namespace tools, pyzmq).
source scripts/ensure-test-deps.sh

scratch=.build/asan
reports="$scratch/sanitizer-reports"

echo "== swift build --sanitize=address (library, examples, tools, tests)"
# The programs too: the tap tests run them, and they must run sanitized.
swift build --build-tests --sanitize=address --scratch-path "$scratch" -j "${RLK_BUILD_JOBS:-2}"

# Every process the suite starts inherits these, exit tests' children and
# spawned programs alike: each process's report in a file of its own, read
# below (scripts/sanitizer-reports.sh). (The planted-leak proof sends its
# child's report to standard error instead, where it checks it:
# LeakSanitizerProofTests.) Options already in the environment come last,
# so they win.
source scripts/sanitizer-reports.sh
export ASAN_OPTIONS="detect_leaks=1:$(sanitizer_report_options "$reports")${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

echo "== swift test --sanitize=address"
# --disable-xctest: the package's tests are Swift Testing's; XCTest's runner
# would run none of them and then leak its own suite tree (an XCTestSuite
# and its XCTestSuiteRun hold each other) at its exit.
# A hung run fails with a list of what was running (scripts/test-watchdog.sh).
source scripts/test-watchdog.sh
status=0
# Every process is several times slower under a sanitizer: a handshake
# with a live peer may pass the 1 s connection bound (docs/ports.md).
export RUNLOOPKIT_CONNECTION_BOUND=5
run_with_watchdog "the tests under AddressSanitizer" \
    swift test --skip-build --sanitize=address --scratch-path "$scratch" --disable-xctest || status=$?

# A file holds a report, or only the suppressions a process used.
print_sanitizer_reports "$reports" "ERROR: \(AddressSanitizer\|LeakSanitizer\)"
used=$(find "$reports" -type f -exec grep -h "^ *[0-9]* *[0-9]* leak:" {} + | awk '{print $3}' | sort | uniq -c || true)
if [ -n "$used" ]; then
    echo "== suppressions used (processes, pattern)"
    echo "$used"
fi
exit_if_sanitizer_run_failed AddressSanitizer "errors or leaks" "$status"
echo "== AddressSanitizer: every test passed; no process reported an error or a leak"
