#!/usr/bin/env python3
"""Public symbols of RunLoopKit and ZeroMQ that have no doc comment.

    python3 scripts/doc-coverage.py [--scratch-path .build-docs]
                                    [--symbol-graph-dir DIR] [--cross-check]

Prints one line per undocumented symbol, `path:line: kind name`, sorted by
path and line, then the total. Exits 0 when every public symbol has a doc
comment, 1 when some have none, 2 when it cannot count (symbol graphs
missing, or older than the sources).

Where the symbols come from: the symbol graphs that `swift package
generate-documentation` (swift-docc-plugin 1.5.0) extracts before DocC
runs, which it leaves in
<scratch>/<triple>/extracted-symbols/<package>/<Module>/<Module>*.symbols.json.
scripts/docs.sh runs the plugin first, so these cost no extra build. The
other way, `swift build --scratch-path <path> --target RunLoopKit -Xswiftc
-emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc <dir>`, works
too (pass `--symbol-graph-dir <dir>`; checked: the same count), but it
builds the targets again with other flags (in .build-docs, the next
documentation build then rebuilds them once more), and its RunLoopKit graph
also holds every symbol RunLoopKit re-exports (FoundationEssentials',
ZeroMQ's): only symbols declared under Sources/<Module>/ count for a module.

What counts: every symbol of the module whose location is a Swift file under
this package's Sources/, with public or open access. Symbols with no
location are left out: the compiler synthesized them (memberwise, Codable
and RawRepresentable initializers) or they are default implementations
inherited from another module's protocol (the graph marks those
`::SYNTHESIZED::`). A symbol is documented when it has a doc comment of its
own. The graph also hands a symbol that has none the comment of the
protocol requirement it implements (`description` gets Swift's
CustomStringConvertible text); that comment belongs to another module, DocC
does not show it, and the symbol counts as undocumented here. So does a
default implementation in a protocol extension that has no comment of its
own: the graph gives it its requirement's, which ends elsewhere in the file.

--cross-check also reads the sources themselves: every `public` or `open`
declaration, every requirement of a public protocol and every case of a
public enum whose line is not preceded by a `///` line (attributes such as
@discardableResult skipped), and prints where that list and the symbol
graphs disagree. It is a check of this script, not of the documentation.
"""

import argparse
import collections
import glob
import json
import os
import re
import sys
from urllib.parse import unquote, urlparse

MODULES = ("RunLoopKit", "RunLoopKitCore", "RunLoopKitPorts", "RunLoopKitTesting", "RunLoopKitDistributed",
           "RunLoopKitMetrics", "RunLoopKitLifecycle", "RunLoopKitTracing", "ZeroMQ")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Short kind names for the output; the rest are the graph's own, less "swift.".
KIND_NAMES = {"enum.case": "case", "func.op": "operator"}


def fail(message):
    print(f"doc-coverage: {message}", file=sys.stderr)
    sys.exit(2)


def graph_files(module, scratch, graph_dir):
    """The symbol-graph files of `module`: <Module>.symbols.json and the
    <Module>@<Other>.symbols.json files of its extensions to other modules."""
    if graph_dir:
        directories = [graph_dir]
    else:
        pattern = os.path.join(ROOT, scratch, "*", "extracted-symbols", "*", module)
        directories = sorted(
            (d for d in glob.glob(pattern) if os.path.isfile(os.path.join(d, f"{module}.symbols.json"))),
            key=lambda d: os.path.getmtime(os.path.join(d, f"{module}.symbols.json")),
        )[-1:]  # the newest, if a checkout was moved or renamed
    for directory in directories:
        main = os.path.join(directory, f"{module}.symbols.json")
        if os.path.isfile(main):
            return [main] + sorted(glob.glob(os.path.join(directory, f"{module}@*.symbols.json")))
    where = graph_dir or os.path.join(scratch, "<triple>", "extracted-symbols", "<package>", module)
    fail(f"no symbol graph for {module} in {where}. Run ./scripts/docs.sh first "
         f"(RLK_DOCS=1 swift package --scratch-path {scratch} generate-documentation --target {module}).")


def newest_source(module):
    newest = 0.0
    for directory, _, files in os.walk(os.path.join(ROOT, "Sources", module)):
        for name in files:
            if name.endswith(".swift"):
                newest = max(newest, os.path.getmtime(os.path.join(directory, name)))
    return newest


def relative_source_path(uri):
    """The path of `uri` relative to the package root when it is a file under
    Sources/, else None. Graphs made in another checkout of this package are
    matched by their path below Sources/."""
    path = os.path.normpath(unquote(urlparse(uri).path))
    root = ROOT + os.sep
    if path.startswith(root):
        relative = path[len(root):]
        return relative if relative.startswith("Sources" + os.sep) else None
    marker = os.sep + "Sources" + os.sep
    if marker in path:
        relative = "Sources" + os.sep + path.split(marker, 1)[1]
        return relative if os.path.isfile(os.path.join(ROOT, relative)) else None
    return None


def has_own_doc_comment(symbol, module, source_lines):
    """Whether the symbol's doc comment is its own: written in our module, in
    the symbol's file, and ending right above the declaration (attributes
    such as @discardableResult may stand between)."""
    doc = symbol.get("docComment")
    lines = doc.get("lines", []) if doc else []
    if not any(line.get("text", "").strip() for line in lines):
        return False
    # A comment inherited from a protocol of another module names that module
    # and has no uri.
    if doc.get("module", module) != module or doc.get("uri") != symbol["location"]["uri"]:
        return False
    # A default implementation in a protocol extension inherits the
    # requirement's comment from the same file: it ends elsewhere.
    last = max((line["range"]["end"]["line"] for line in lines if "range" in line), default=None)
    declaration = symbol["location"]["position"]["line"]
    if last is None or last >= declaration:
        return last is None
    return all(ATTRIBUTE.match(source_lines[i]) for i in range(last + 1, declaration) if i < len(source_lines))


def undocumented_symbols(module, files):
    """(path, line, kind, name) for each undocumented public symbol, and the
    number of public symbols counted."""
    seen = set()
    sources = {}
    counted = 0
    missing = []
    for file in files:
        with open(file, encoding="utf-8") as handle:
            graph = json.load(handle)
        for symbol in graph.get("symbols", []):
            precise = symbol["identifier"]["precise"]
            if precise in seen:
                continue
            seen.add(precise)
            location = symbol.get("location")
            if not location or "::SYNTHESIZED::" in precise:
                continue
            if symbol.get("accessLevel") not in ("public", "open") or symbol.get("spi"):
                continue
            path = relative_source_path(location["uri"])
            # Declared in this module's own folder: a module's graph may also
            # hold what it re-exports (RunLoopKit's, ZeroMQ's symbols).
            if path is None or not path.startswith(os.path.join("Sources", module) + os.sep):
                continue
            counted += 1
            if path not in sources:
                with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
                    sources[path] = handle.read().split("\n")
            if has_own_doc_comment(symbol, module, sources[path]):
                continue
            kind = symbol["kind"]["identifier"].removeprefix("swift.")
            missing.append((path, location["position"]["line"] + 1, KIND_NAMES.get(kind, kind),
                            ".".join(symbol["pathComponents"])))
    return counted, missing


# --- --cross-check: the same question asked of the sources -----------------

ATTRIBUTE = re.compile(r"^\s*@\w+(\(.*\))?\s*$")
TYPE_DECL = re.compile(r"\b(enum|struct|class|protocol|extension|actor)\s+[\w.]+")
PUBLIC_DECL = re.compile(r"^\s*(@\w+(\([^)]*\))?\s+)*(public|open)\s+(?!import\b)")
REQUIREMENT = re.compile(r"^\s*(static\s+)?(func|var|init|subscript|associatedtype)\b")
ENUM_CASE = re.compile(r"^\s*case\s+(\w+(\([^)]*\))?(\s*=\s*[^,]+)?\s*,?\s*)+(//.*)?$")


def strip_code(line):
    """The line without string literals and comments, for counting braces."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def is_documented_at(lines, index):
    """Whether the declaration on lines[index] is preceded by a doc comment."""
    j = index - 1
    while j >= 0 and ATTRIBUTE.match(lines[j]):
        j -= 1
    if j < 0:
        return False
    previous = lines[j].strip()
    return previous.startswith("///") or previous.endswith("*/")


def source_scan(module):
    """(path, line) of each public declaration without a preceding `///`."""
    found = []
    for directory, _, files in os.walk(os.path.join(ROOT, "Sources", module)):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            full = os.path.join(directory, name)
            path = os.path.relpath(full, ROOT)
            with open(full, encoding="utf-8") as handle:
                lines = handle.read().split("\n")
            # One frame per open brace: (type keyword or None, is public).
            frames = []
            for index, line in enumerate(lines):
                code = strip_code(line)
                stripped = code.strip()
                inner = frames[-1] if frames else (None, False)
                declaration = False
                count = 1
                if PUBLIC_DECL.match(code) and not re.match(r"^\s*(public|open)\s+extension\b", code):
                    declaration = True
                elif inner == ("protocol", True) and REQUIREMENT.match(code):
                    declaration = True
                elif inner == ("enum", True) and ENUM_CASE.match(line) and not stripped.endswith(":"):
                    declaration = True
                    names = re.sub(r"\([^)]*\)", "", stripped).rstrip(",")
                    count = names.count(",") + 1  # `case a, b` declares two
                if declaration and not is_documented_at(lines, index):
                    found.extend([(path, index + 1)] * count)
                # The first brace of a type's declaration opens the type's frame.
                type_match = TYPE_DECL.search(code)
                for char in code:
                    if char == "{":
                        if type_match:
                            frames.append((type_match.group(1), bool(PUBLIC_DECL.match(code))))
                            type_match = None
                        else:
                            frames.append((None, False))
                    elif char == "}" and frames:
                        frames.pop()
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scratch-path", default=".build-docs",
                        help="the scratch path that generate-documentation used (default .build-docs)")
    parser.add_argument("--symbol-graph-dir",
                        help="read <Module>.symbols.json from here instead (swift build -emit-symbol-graph-dir)")
    parser.add_argument("--cross-check", action="store_true",
                        help="also scan the sources for public declarations without /// and compare")
    arguments = parser.parse_args()

    total_missing = []
    summary = []
    for module in MODULES:
        files = graph_files(module, arguments.scratch_path, arguments.symbol_graph_dir)
        graph_time = min(os.path.getmtime(f) for f in files)
        if newest_source(module) > graph_time:
            fail(f"the symbol graph of {module} ({os.path.relpath(files[0], ROOT)}) is older than "
                 f"Sources/{module}: run ./scripts/docs.sh again.")
        counted, missing = undocumented_symbols(module, files)
        total_missing += missing
        summary.append(f"{module}: {len(missing)} of {counted}")

    for path, line, kind, name in sorted(total_missing):
        print(f"{path}:{line}: {kind} {name}")
    print(f"{len(total_missing)} public symbols without a doc comment ({', '.join(summary)})")

    if arguments.cross_check:
        from_graph = collections.Counter((path, line) for path, line, _, _ in total_missing)
        from_sources = collections.Counter()
        for module in MODULES:
            from_sources.update(source_scan(module))
        print(f"cross-check: the sources have {sum(from_sources.values())} public declarations "
              f"without a preceding /// line; the symbol graphs, {sum(from_graph.values())}")
        for (path, line), n in sorted((from_graph - from_sources).items()):
            print(f"  only in the symbol graphs: {path}:{line} (x{n})")
        for (path, line), n in sorted((from_sources - from_graph).items()):
            print(f"  only in the sources:       {path}:{line} (x{n})")

    return 1 if total_missing else 0


if __name__ == "__main__":
    sys.exit(main())
