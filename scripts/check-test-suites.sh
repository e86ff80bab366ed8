#!/usr/bin/env bash
# Every test suite carries the trait .blocksThreads, so that its tests'
# blocking waits never hold Swift's cooperative pool (docs/contributing.md,
# "Tests and the test runner's threads").
#   ./scripts/check-test-suites.sh
set -euo pipefail
cd "$(dirname "$0")/.."
missing=$(grep -rn --include='*.swift' -E '^\s*@Suite\b' Tests | grep -v '\.blocksThreads' || true)
if [ -n "$missing" ]; then
    echo "error: these suites lack the trait .blocksThreads (docs/contributing.md, \"Tests and the test runner's threads\"):" >&2
    echo "$missing" >&2
    exit 1
fi
# A test outside a suite would not get it.
loose=$(grep -rn --include='*.swift' -E '^@Test\b' Tests || true)
if [ -n "$loose" ]; then
    echo "error: these tests are outside a suite: put them in one with .blocksThreads:" >&2
    echo "$loose" >&2
    exit 1
fi
echo "every suite has .blocksThreads"
