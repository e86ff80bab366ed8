#!/usr/bin/env bash
# Builds the soak tool (Soak/, a package of its own) in release and runs it:
#   ./scripts/soak.sh 60          # what CI runs: one minute of load
#   ./scripts/soak.sh 1800        # the 30-minute soak Soak/README.md reports
#   ./scripts/soak.sh 60 --seed 7 --children 4   # more rlk-soak options after the seconds
# Exits with rlk-soak's status: 0 when every check passed (Soak/README.md
# says which), 1 on a violation, 2 on bad usage. Prints how long the build
# and the run took.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ensure-deps.sh
source scripts/ensure-deps.sh

if [ $# -lt 1 ]; then
    echo "usage: scripts/soak.sh SECONDS [rlk-soak options]" >&2
    exit 2
fi
seconds=$1
shift

build_start=$(date +%s)
(cd Soak && swift build -c release --product rlk-soak)
build_end=$(date +%s)
echo "soak.sh: build took $((build_end - build_start)) s"

status=0
Soak/.build/release/rlk-soak --seconds "$seconds" "$@" || status=$?
run_end=$(date +%s)
echo "soak.sh: rlk-soak --seconds $seconds took $((run_end - build_end)) s (exit status $status); $((run_end - build_start)) s in all"
exit "$status"
