#!/usr/bin/env bash
# The public API guard: every library product's Swift API against the
# release that api/baseline.txt names (a commit: CI clones without tags).
# A break fails unless api/allowed-breaks.txt allows it, and every line
# there must be explained, with its migration, in CHANGELOG.md's next
# section (scripts/check-allowed-breaks.py). docs/contributing.md,
# "Releasing", says how a release moves the baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh

python3 scripts/check-allowed-breaks.py

baseline=$(awk '!/^#/ && NF { print $1; exit }' api/baseline.txt)
if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
    # A shallow clone may lack it: fetch the history it is in.
    git fetch --quiet --unshallow 2>/dev/null || git fetch --quiet origin "$baseline"
fi
echo "== the public API against $(awk '!/^#/ && NF { print $2, $3; exit }' api/baseline.txt) ($baseline)"
# Every library product's modules (the RunLoopKit product lists Core and
# Ports beside the umbrella, whose re-export the comparison does not
# follow). The baseline's build and API files are kept per commit, so that
# a second run here costs only the current build.
RLK_API_CHECK=1 swift package diagnose-api-breaking-changes "$baseline" \
    --breakage-allowlist-path api/allowed-breaks.txt \
    --baseline-dir ".build/api-baseline/$baseline"
