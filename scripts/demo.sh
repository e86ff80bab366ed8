#!/usr/bin/env bash
# From a fresh clone to the main demo running, with one command:
#   ./scripts/demo.sh
# Installs libzmq3-dev if missing, builds, and runs the keep-alive demo: a
# named worker LoopThread runs tasks submitted from the main thread, then
# stops cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
swift build --product keepalive
exec .build/debug/keepalive "$@"
