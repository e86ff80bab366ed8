#!/usr/bin/env bash
# Measures which type names are ambiguous in a client file that imports
# Foundation, RunLoopKit and ZeroMQ, and checks that both recipes of README's
# "Using RunLoopKit beside Foundation" (Examples/foundation-interop) cover
# exactly those names:
#   ./scripts/foundation-clashes.sh
# Run it after adding a public type to RunLoopKit or ZeroMQ, or with a new
# toolchain: Foundation's names differ between versions, so a list written by
# hand goes stale.
#
# How: every public top-level name of the modules `import RunLoopKit` brings
# (RunLoopKitCore and RunLoopKitPorts, which the umbrella re-exports, and
# FoundationEssentials, which the core re-exports) and of ZeroMQ is read from the built
# modules' symbol graphs, not from the sources, so nothing declared in an
# unusual way is missed. Each name is then used in a type position
# (`typealias Probe_X = X`) in one probe file that imports the three modules,
# and the compiler says which are "ambiguous for type lookup". Names that are
# not types (functions, variables) fail with other errors, which are ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh

# Builds ZeroMQ too; quiet unless it fails.
if ! log=$(swift build --target RunLoopKit 2>&1); then
    echo "$log" >&2
    exit 1
fi
bin=$(swift build --show-bin-path)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The search paths SwiftPM gives a client target of RunLoopKit.
flags=(-I "$bin/Modules"
       -Xcc "-fmodule-map-file=$bin/CLinuxSupport.build/module.modulemap"
       -Xcc -I -Xcc Sources/CLinuxSupport/include
       -Xcc -fmodule-map-file=Sources/CZeroMQ/module.modulemap)
target="$(uname -m)-unknown-linux-gnu"

for module in RunLoopKitCore RunLoopKitPorts ZeroMQ FoundationEssentials; do
    swift-symbolgraph-extract -module-name "$module" -target "$target" "${flags[@]}" \
        -minimum-access-level public -output-dir "$work" >/dev/null
done
# A symbol whose path has one component is declared at the top level.
names=$(cat "$work"/RunLoopKitCore.symbols.json "$work"/RunLoopKitPorts.symbols.json "$work"/ZeroMQ.symbols.json "$work"/FoundationEssentials.symbols.json |
    grep -o '"pathComponents":\["[A-Za-z_][A-Za-z0-9_]*"\]' | cut -d'"' -f4 | sort -u)

{
    printf 'import Foundation\nimport RunLoopKit\nimport ZeroMQ\n'
    for name in $names; do printf 'typealias Probe_%s = %s\n' "$name" "$name"; done
} >"$work/probe.swift"
clashes=$(swiftc -typecheck -diagnostic-style llvm "${flags[@]}" "$work/probe.swift" 2>&1 |
    sed -n "s/.*error: '\([A-Za-z0-9_]*\)' is ambiguous for type lookup.*/\1/p" | sort -u || true)

echo "$(swift --version 2>/dev/null | head -1)"
echo "names probed: $(echo "$names" | wc -w) (public top-level names of RunLoopKitCore, RunLoopKitPorts, ZeroMQ, FoundationEssentials)"
echo "ambiguous beside Foundation: $(echo $clashes)"

# A port made as the manual makes one, `try Port(transport: .inproc)`, in a
# file that imports Foundation and uses neither recipe, must be RunLoopKit's:
# Foundation's Port has no such initialiser, so it cannot be picked quietly
# (Foundation's `Port()` traps on Linux; RunLoopKit has no `Port()`).
{
    printf 'import Foundation\nimport RunLoopKit\n'
    printf 'func makePortAsTheManualDoes() throws {\n'
    printf '    let port = try Port(transport: .inproc)\n'
    printf '    let _: RunLoopKit.Port = port\n'
    printf '    let message = PortMessage(msgid: 1, components: [], sendPort: port)\n'
    printf '    let _: RunLoopKit.PortMessage = message\n'
    printf '}\n'
} >"$work/port-probe.swift"
if ! port_log=$(swiftc -typecheck -diagnostic-style llvm "${flags[@]}" "$work/port-probe.swift" 2>&1); then
    echo "try Port(transport: .inproc) or PortMessage(msgid:components:sendPort:) beside Foundation is not RunLoopKit's:" >&2
    echo "$port_log" >&2
    exit 1
fi
echo "try Port(transport: .inproc) and PortMessage(msgid:components:sendPort:) beside Foundation, with no recipe: RunLoopKit's"
# A timer made as the manual makes one, beside Foundation with no recipe,
# must fail as ambiguous, never resolve quietly to Foundation's Timer (an
# overload of RunLoopKit's with a defaulted argument would let it).
printf 'import Foundation\nimport RunLoopKit\nlet timer = try Timer(timeInterval: 1, repeats: false) { _ in }\n' >"$work/timer-probe.swift"
timer_log=$(swiftc -typecheck -diagnostic-style llvm "${flags[@]}" "$work/timer-probe.swift" 2>&1 || true)
if ! grep -q "ambiguous use of 'init(timeInterval:repeats:block:)'" <<<"$timer_log"; then
    echo "Timer(timeInterval:repeats:block:) beside Foundation is no longer ambiguous; it may quietly be Foundation's:" >&2
    echo "$timer_log" >&2
    exit 1
fi
echo "Timer(timeInterval:repeats:block:) beside Foundation, with no recipe: ambiguous, as README says"

# Each usage form of a clashing name that the manual shows, beside
# Foundation with no recipe, and the first error a user meets for it; later
# uses of what it made may add follow-on errors. ComingFromFoundation lists
# exactly these errors, so each is proven here and none is missing there.
forms=(
    'let loop: RunLoop? = nil|'"'"'RunLoop'"'"' is ambiguous for type lookup in this context'
    'let loop = RunLoop.current|ambiguous use of '"'"'current'"'"''
    'let loop = RunLoop.main|ambiguous use of '"'"'main'"'"''
    'let mode = RunLoop.Mode("com.example.tracking")|ambiguous use of '"'"'init(_:)'"'"''
    'let timer = try Timer(timeInterval: 1, repeats: false) { _ in }|ambiguous use of '"'"'init(timeInterval:repeats:block:)'"'"''
    'let timer = try Timer(fire: Date() + 2, interval: 1, repeats: true) { _ in }|ambiguous use of '"'"'init(fire:interval:repeats:block:)'"'"''
    'try Timer.scheduledTimer(withTimeInterval: 0.1, repeats: false) { _ in }|ambiguous use of '"'"'scheduledTimer(withTimeInterval:repeats:block:)'"'"''
    'let keys: Set<URLResourceKey> = []|'"'"'URLResourceKey'"'"' is ambiguous for type lookup in this context'
)
article=Sources/RunLoopKit/RunLoopKit.docc/ComingFromFoundation.md
listed=$(sed -n 's/^error: //p' "$article" | sort -u)
proven=""
status=0
for entry in "${forms[@]}"; do
    form=${entry%%|*}
    expected=${entry#*|}
    printf 'import Foundation\nimport RunLoopKit\n%s\n' "$form" >"$work/form-probe.swift"
    form_log=$(swiftc -typecheck -diagnostic-style llvm "${flags[@]}" "$work/form-probe.swift" 2>&1 || true)
    if ! grep -qF "error: $expected" <<<"$form_log"; then
        echo "\`$form\` beside Foundation no longer fails with \"$expected\":" >&2
        echo "$form_log" >&2
        status=1
    fi
    proven+="$expected"$'\n'
done
proven=$(printf '%s' "$proven" | sort -u)
if [ "$listed" != "$proven" ]; then
    echo "$article's list of errors differs from the errors proven here:" >&2
    diff <(echo "$listed") <(echo "$proven") >&2 || true
    status=1
fi
[ "$status" = 0 ] && echo "each usage form the manual shows fails beside Foundation with the error $article lists (${#forms[@]} forms)"

# Recipe 2 aliases each clashing name once; recipe 1 spells each with a
# module selector.
examples=Examples/foundation-interop
aliased=$(sed -n 's/^typealias \([A-Za-z0-9_]*\) = .*/\1/p' "$examples/RunLoopKitNames.swift" | sort -u)
if [ "$aliased" != "$clashes" ]; then
    echo "RunLoopKitNames.swift aliases: $(echo $aliased); update it, ModuleSelectors.swift and README" >&2
    status=1
fi
for name in $clashes; do
    if ! grep -Eq "(RunLoopKit|Foundation)::$name\b" "$examples/ModuleSelectors.swift"; then
        echo "ModuleSelectors.swift does not use $name through a module selector" >&2
        status=1
    fi
done
# Every page that counts the clashes names each of them.
for page in README.md Sources/RunLoopKit/RunLoopKit.docc/GettingStarted.md "$article"; do
    for name in $clashes; do
        if ! grep -q "\`$name\`" "$page"; then
            echo "$page does not name the clashing $name" >&2
            status=1
        fi
    done
done
[ "$status" = 0 ] && echo "both recipes of $examples cover every clashing name, and every page names them"
exit "$status"
