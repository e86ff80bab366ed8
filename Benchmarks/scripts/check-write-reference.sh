#!/usr/bin/env bash
# Checks `rlk-bench --write-reference` on a scratch document: a short run
# (the idle loop, one quick pass) replaces the block of its placement and
# nothing else, a second run replaces it again rather than adding one, and a
# document without the placement's markers is refused before anything runs.
# About half a minute; prints what failed and exits 1, or OK.
#
#   Benchmarks/scripts/check-write-reference.sh
set -euo pipefail

BENCHMARKS_DIR="$(cd "$(dirname "$0")/.." && pwd)"
command -v swift >/dev/null 2>&1 || { echo "$(basename "$0"): needs swift (export PATH=/opt/swift/usr/bin:\$PATH)" >&2; exit 2; }
(cd "$BENCHMARKS_DIR" && swift build -c release --product rlk-bench >&2)
BENCH="$(cd "$BENCHMARKS_DIR" && swift build -c release --show-bin-path)/rlk-bench"
WORK="$(mktemp -d /tmp/rlk-write-reference-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

fail() { echo "check-write-reference: $*" >&2; exit 1; }

# Text around the blocks, an old block for each placement, and no newline
# at the end: all of it must survive but the one block.
printf '%s\n' \
    '# A document' '' 'Text before.' '' \
    '<!-- rlk-bench results: cross -->' 'old cross results' '<!-- end -->' '' \
    'Text between, with a marker-like line: <!-- end --> inside.' '' \
    '<!-- rlk-bench results: same -->' 'old same results' 'more old lines' '<!-- end -->' '' \
    > "$WORK/doc.md"
printf '%s' 'The last line, without a newline.' >> "$WORK/doc.md"
cp "$WORK/doc.md" "$WORK/before.md"
# In a checkout of its own, with one more tracked file: the block names the
# commit, and the tree as clean while only the document itself changed.
echo one > "$WORK/other.txt"
git -C "$WORK" init -q
git -C "$WORK" add doc.md other.txt
git -C "$WORK" -c user.name=check -c user.email=check@localhost commit -q -m scratch

# The document with the same block's body taken out.
outside_same() {
    awk '/^<!-- rlk-bench results: same -->$/ { print; skip = 1; next }
         skip && /^<!-- end -->$/ { skip = 0 }
         !skip { print }' "$1"
}

run() {
    "$BENCH" --quick --passes 1 --filter idle --placement same --write-reference "$WORK/doc.md" \
        > "$WORK/run.out" 2> "$WORK/run.err" || { cat "$WORK/run.err" >&2; fail "rlk-bench failed"; }
}

for round in 1 2; do
    run
    cmp -s <(outside_same "$WORK/before.md") <(outside_same "$WORK/doc.md") \
        || { diff <(outside_same "$WORK/before.md") <(outside_same "$WORK/doc.md") >&2 || true; fail "round $round changed text outside the same block"; }
    [ "$(grep -c '^<!-- rlk-bench results: same -->$' "$WORK/doc.md")" = 1 ] || fail "round $round: the start marker is not there once"
    [ "$(grep -c '^| `idle-wakeups` |' "$WORK/doc.md")" = 1 ] || fail "round $round: the idle-wakeups row is not there once"
    grep -q '^Written by `rlk-bench --write-reference` on .* UTC from a quick run' "$WORK/doc.md" || fail "round $round: no date line"
    commit="$(git -C "$WORK" rev-parse --short HEAD)"
    if [ "$round" = 1 ]; then
        grep -q "commit \`$commit\` (a clean tree)" "$WORK/doc.md" || fail "round 1: no commit, or the tree not clean"
        echo two > "$WORK/other.txt"
    else
        grep -q "commit \`$commit\` with uncommitted changes to \`other.txt\`\." "$WORK/doc.md" \
            || fail "round 2: the changed file is not named"
    fi
    grep -q '^Machine: ' "$WORK/doc.md" || fail "round $round: no machine line"
    grep -q 'judged targets met' "$WORK/doc.md" || fail "round $round: no count of targets met"
    if grep -q 'old same results' "$WORK/doc.md"; then fail "round $round: the old block is still there"; fi
    [ "$(tail -c 33 "$WORK/doc.md")" = 'The last line, without a newline.' ] || fail "round $round: the document's end changed"
done

# No block for the placement: refused at once, the document untouched.
sed 's/results: cross/results: elsewhere/' "$WORK/doc.md" > "$WORK/kept.md"
cp "$WORK/kept.md" "$WORK/kept-before.md"
start=$SECONDS
status=0
"$BENCH" --quick --filter idle --placement cross --write-reference "$WORK/kept.md" >/dev/null 2> "$WORK/refused.err" || status=$?
[ "$status" = 2 ] || fail "a document without a cross block: exit $status, not 2"
grep -q 'no block for --placement cross' "$WORK/refused.err" || fail "a document without a cross block: no message saying so"
cmp -s "$WORK/kept.md" "$WORK/kept-before.md" || fail "a refused run changed the document"
(( SECONDS - start < 30 )) || fail "a refused run took $((SECONDS - start)) s: it must stop before measuring"

echo "check-write-reference: OK"
