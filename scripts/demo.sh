#!/usr/bin/env bash
# From a fresh clone to the main demo running, with one command:
#   ./scripts/demo.sh
# Installs libzmq3-dev if missing, builds, and runs the cross-process demo:
# ipc-demo starts a server process and a client process that exchange
# PortMessages through a named port, then both exit cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
swift build --product ipc-demo
exec .build/debug/ipc-demo "$@"
