#!/usr/bin/env bash
# The repository stands on its own: no tracked file (generated ones such as
# docs/scaling.svg included) cites documents that are not in it. Greps, case-
# sensitively, for the names of the planning documents kept outside the
# repository and for a path beside it; CHANGELOG.md's history is exempt.
#   ./scripts/check-self-contained.sh
set -euo pipefail
cd "$(dirname "$0")/.."

patterns=(-e 'DESIGN.md' -e 'STYLE.md' -e 'SEMANTICS.md' -e 'DEVELOPERS.md' -e '../shared')
self="scripts/check-self-contained.sh"
files=$(git ls-files | grep -v -x -e 'CHANGELOG.md' -e "$self")
count=$(echo "$files" | wc -l)
if hits=$(echo "$files" | tr '\n' '\0' | xargs -0 grep -n -F "${patterns[@]}" -- 2>/dev/null); then
    echo "$hits"
    echo "self-contained: the lines above cite documents outside the repository; cite docs/design.md, docs/contributing.md or docs/semantics.md instead" >&2
    exit 1
fi
echo "self-contained: $count tracked files cite nothing outside the repository"
