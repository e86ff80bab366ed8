#!/usr/bin/env bash
# The repository stands on its own: no tracked file (generated ones that are
# committed, such as docs/scaling.svg, included) cites documents that are not
# in it. Greps the tracked files, case-sensitively, for the names of planning
# documents kept outside the repository and for a path beside it; prints each
# hit as path:line:text and fails. CHANGELOG.md's history is exempt.
#   ./scripts/check-self-contained.sh        (from any directory)
set -euo pipefail
cd "$(dirname "$0")/.."

# The names are spelled in two pieces, so that this script does not cite
# them itself and needs no exemption.
patterns=(-e "DESI""GN.md" -e "STY""LE.md" -e "SEMAN""TICS.md" -e "DEVELO""PERS.md" -e "../sha""red")
exempt=(':(exclude)CHANGELOG.md')

count=$(git ls-files -- . "${exempt[@]}" | wc -l)
# git grep, not grep over a file list: one process, the work tree's tracked
# files only, and its exit status tells a hit (0) from none (1) from an
# error (anything else), which must not pass as "none".
status=0
hits=$(git grep -n -F --no-color "${patterns[@]}" -- . "${exempt[@]}") || status=$?
if [ "$status" -eq 0 ]; then
    echo "$hits"
    echo "self-contained: the lines above cite documents outside the repository; cite docs/design.md, docs/contributing.md, docs/semantics.md or docs/performance.md instead" >&2
    exit 1
elif [ "$status" -ne 1 ]; then
    echo "self-contained: git grep failed (exit $status)" >&2
    exit "$status"
fi
echo "self-contained: OK, $count tracked files cite nothing outside the repository"
