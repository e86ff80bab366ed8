#!/usr/bin/env bash
# Builds the manual, the DocC documentation of every module (RunLoopKit's
# umbrella, RunLoopKitCore, RunLoopKitPorts, RunLoopKitTesting, RunLoopKitDistributed, RunLoopKitMetrics, RunLoopKitLifecycle, RunLoopKitTracing and ZeroMQ),
# with every DocC warning treated as an error, then counts the public
# symbols that have no doc comment (scripts/doc-coverage.py):
#   ./scripts/docs.sh
# Exits non-zero if DocC reports any warning or error, or if a public symbol
# has no doc comment. Each module's archive lands in
# .build-docs/plugins/Swift-DocC/outputs/intermediates/<Target>.doccarchive,
# and all of them merged in .build-docs/plugins/Swift-DocC/outputs/RunLoopKit.doccarchive.
#
# One catalog per module, built as combined documentation (the plugin's
# --enable-experimental-combined-documentation): each module's archive is
# built with its dependencies' archives, so a catalog links to its
# dependencies' symbols and articles with absolute links
# (``/RunLoopKitCore/RunLoop``, <doc:/documentation/RunLoopKitCore/Modes>),
# never to a module that does not depend on it. The umbrella has no symbols
# of its own; its landing page links the modules.
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
# Dependencies before the modules that link to them.
TARGETS=(ZeroMQ RunLoopKitCore RunLoopKitPorts RunLoopKit RunLoopKitTesting RunLoopKitDistributed RunLoopKitMetrics RunLoopKitLifecycle RunLoopKitTracing)
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

# One invocation for all targets: combined documentation needs every
# module it links to in the same invocation. --ide-console-output prints
# each diagnostic as `path:line:column: error: message`.
mkdir -p "$SCRATCH"
target_flags=()
for target in "${TARGETS[@]}"; do target_flags+=(--target "$target"); done
echo "== DocC: ${TARGETS[*]} (combined, --warnings-as-errors)"
log="$SCRATCH/docc.log"
docc_ok=1
if swift package --scratch-path "$SCRATCH" generate-documentation --enable-experimental-combined-documentation \
    "${target_flags[@]}" --warnings-as-errors --ide-console-output 2>&1 | tee "$log"; then
    echo "   $SCRATCH/plugins/Swift-DocC/outputs/RunLoopKit.doccarchive"
else
    docc_ok=0
    # The diagnostics, without the plugin's closing errors about archives
    # that were not written.
    echo "== DocC diagnostics (warnings count as errors)"
    grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning): ' "$log" | sed "s|^$PWD/||" \
        || echo "no diagnostic with a location; see $log"
fi

echo "== documentation coverage (scripts/doc-coverage.py)"
coverage=0
python3 scripts/doc-coverage.py --scratch-path "$SCRATCH" || coverage=$?

echo
echo "To preview the manual in a browser (http://localhost:8080/documentation/runloopkit):"
echo "  $PREVIEW"
echo "(or --target RunLoopKitCore, RunLoopKitPorts, RunLoopKitTesting, RunLoopKitDistributed, RunLoopKitMetrics, RunLoopKitLifecycle, RunLoopKitTracing, ZeroMQ)."

status=0
if [ "$docc_ok" -eq 0 ]; then
    echo "docs: DocC reported warnings or errors (listed above)" >&2
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
