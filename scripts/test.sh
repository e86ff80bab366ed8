#!/usr/bin/env bash
# From a fresh clone to passing tests, with one command:
#   ./scripts/test.sh
# Installs libzmq3-dev if missing, builds everything (library, examples,
# tools), runs the whole suite, then runs it again under ThreadSanitizer.
# Set RLK_SKIP_TSAN=1 to skip the ThreadSanitizer run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh

echo "== swift build (library, examples, tools)"
swift build
echo "== swift test"
swift test
if [ "${RLK_SKIP_TSAN:-0}" != 1 ]; then
    echo "== swift test --sanitize=thread"
    # A build directory of its own, so that the plain build stays valid; the
    # programs too, because the portsniff tests run them.
    swift build --sanitize=thread --scratch-path .build/tsan
    swift test --sanitize=thread --scratch-path .build/tsan
fi
echo "== all tests passed"
