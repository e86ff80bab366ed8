#!/usr/bin/env bash
# Every Unmanaged, unowned(unsafe), @exclusivity(unchecked) and
# _withUnsafeGuaranteedRef site is listed in docs/unsafe-sites.md, with its
# invariant and its tests, and points there: scripts/check-unsafe-sites.py.
#   ./scripts/check-unsafe-sites.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v python3 >/dev/null 2>&1; then
    echo "error: python3 is needed for scripts/check-unsafe-sites.py (Debian: apt-get install -y python3)" >&2
    exit 1
fi
python3 scripts/check-unsafe-sites.py
