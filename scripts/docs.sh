#!/usr/bin/env bash
# Builds the manual, the DocC documentation of RunLoopKit and ZeroMQ, with
# every DocC warning treated as an error, then counts the public symbols
# that have no doc comment (scripts/doc-coverage.py):
#   ./scripts/docs.sh
# Exits non-zero if DocC reports any warning or error, or if a public symbol
# has no doc comment. The archives land in
# .build-docs/plugins/Swift-DocC/outputs/<Target>.doccarchive.
#
# Package.swift declares swift-docc-plugin only when RLK_DOCS is set, so that
# ordinary builds, tests and clients never fetch it. This script sets it and
# builds in a scratch path of its own, .build-docs, so that the ordinary
# .build is never resolved with the plugin. SwiftPM writes the plugin's pins
# into Package.resolved, which every scratch path shares; the script puts
# that file back as it found it, so that a later plain `swift build` does not
# check the plugin out either.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh

if ! command -v python3 >/dev/null 2>&1; then
    echo "error: python3 is needed for scripts/doc-coverage.py (Debian: apt-get install -y python3)" >&2
    exit 1
fi

export RLK_DOCS=1
SCRATCH=.build-docs
TARGETS=(RunLoopKit ZeroMQ)
PREVIEW="RLK_DOCS=1 swift package --scratch-path $SCRATCH --disable-sandbox preview-documentation --target RunLoopKit"

resolved_backup=""
if [ -f Package.resolved ]; then
    resolved_backup=$(mktemp)
    cp -p Package.resolved "$resolved_backup"
fi
restore_resolved() {
    if [ -n "$resolved_backup" ]; then
        cp -p "$resolved_backup" Package.resolved
        rm -f "$resolved_backup"
    else
        rm -f Package.resolved
    fi
}
trap restore_resolved EXIT

# One invocation per target: the plugin stops at the first target that
# fails, and each target's diagnostics are wanted. --ide-console-output
# prints each diagnostic as `path:line:column: error: message`.
mkdir -p "$SCRATCH"
failed=()
for target in "${TARGETS[@]}"; do
    echo "== DocC: $target (--warnings-as-errors)"
    log="$SCRATCH/docc-$target.log"
    if swift package --scratch-path "$SCRATCH" generate-documentation \
        --target "$target" --warnings-as-errors --ide-console-output 2>&1 | tee "$log"; then
        echo "   $SCRATCH/plugins/Swift-DocC/outputs/$target.doccarchive"
    else
        failed+=("$target")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    # The diagnostics, without the plugin's closing "The file doesn't exist"
    # error about the .doccarchive, which only says that none was written.
    echo "== DocC diagnostics (warnings count as errors)"
    for target in "${failed[@]}"; do
        grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning): ' "$SCRATCH/docc-$target.log" \
            | sed "s|^$PWD/||" || echo "$target: no diagnostic with a location; see $SCRATCH/docc-$target.log"
    done
fi

echo "== documentation coverage (scripts/doc-coverage.py)"
coverage=0
python3 scripts/doc-coverage.py --scratch-path "$SCRATCH" || coverage=$?

echo
echo "To preview the manual in a browser (http://localhost:8080/documentation/runloopkit):"
echo "  $PREVIEW"
echo "(or --target ZeroMQ)."

status=0
if [ ${#failed[@]} -gt 0 ]; then
    echo "docs: DocC reported warnings or errors for: ${failed[*]}" >&2
    status=1
fi
if [ "$coverage" -ne 0 ]; then
    echo "docs: public symbols without a doc comment (listed above), or no count (exit $coverage)" >&2
    status=1
fi
if [ "$status" -eq 0 ]; then
    echo "docs: OK"
fi
exit "$status"
