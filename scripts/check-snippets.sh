#!/usr/bin/env bash
# Type-checks every Swift block of the manual (the DocC articles and
# README.md) against RunLoopKit's public API (scripts/check-snippets.py says
# how), then runs every example that states its output, in the context its
# article names, and compares (scripts/run-snippets.py):
#   ./scripts/check-snippets.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
if ! command -v python3 >/dev/null 2>&1; then
    echo "error: python3 is needed for scripts/check-snippets.py (Debian: apt-get install -y python3)" >&2
    exit 1
fi
python3 scripts/check-snippets.py "$@"
python3 scripts/run-snippets.py
