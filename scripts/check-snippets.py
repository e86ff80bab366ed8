#!/usr/bin/env python3
"""Compiles every Swift code block of the manual, so that it stays true.

    python3 scripts/check-snippets.py [--list] [--keep]

Every ```swift block of the DocC articles (Sources/*/*.docc/*.md) and of
README.md becomes a main.swift of its own, in .build/snippets-client, and is
type-checked as a program of a client of RunLoopKit would be: against the
modules the root package builds, without the package's name, so that only
RunLoopKit's public API resolves. Top-level code and declarations both work
there, as they do in a program's main.swift. A block that does not import
RunLoopKit gets `import RunLoopKit` (and `import RunLoopKitTesting` when it
uses `TestClock`, `import ZeroMQ` when it makes sockets, `import Dispatch`
for Dispatch's types), the imports a reader would add.

A package manifest (a block whose first line is `// swift-tools-version…`
or `// Package.swift`) is not compiled. Other blocks that are not meant to
compile alone say so on the line before the fence, with a Markdown comment
that DocC does not show:

    <!-- snippet: not compiled (a manifest) -->

Give the reason after "not compiled". Anything else must build. Exits 1 and
prints each error at the article's own line when a block does not build.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from manual_blocks import ROOT, blocks_in, manual_paths, prelude  # noqa: E402

CLIENT = os.path.join(ROOT, ".build", "snippets-client")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--list", action="store_true", help="list the blocks and what is done with each")
    args = parser.parse_args()

    blocks = [block for path in manual_paths() for block in blocks_in(path) if block.language == "swift"]
    compiled = [b for b in blocks if b.skip_reason is None]
    skipped = [b for b in blocks if b.skip_reason is not None]
    if args.list:
        for b in blocks:
            print(f"{b.path}:{b.line}: {'skipped: ' + b.skip_reason if b.skip_reason else b.target}")

    # The modules a client sees, built by the root package.
    for target in ("RunLoopKit", "RunLoopKitTesting"):
        build = subprocess.run(["swift", "build", "--target", target], cwd=ROOT, capture_output=True, text=True)
        if build.returncode != 0:
            print(build.stdout[-4000:] + build.stderr[-4000:])
            print(f"snippets: building {target} failed", file=sys.stderr)
            return 1
    bin_path = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    # What SwiftPM gives a client target; no -package-name, so that only
    # public API resolves, as in a user's package.
    flags = ["-I", os.path.join(bin_path, "Modules"),
             "-Xcc", "-fmodule-map-file=" + os.path.join(bin_path, "CLinuxSupport.build", "module.modulemap"),
             "-Xcc", "-I", "-Xcc", os.path.join(ROOT, "Sources", "CLinuxSupport", "include"),
             "-Xcc", "-fmodule-map-file=" + os.path.join(ROOT, "Sources", "CZeroMQ", "module.modulemap"),
             "-swift-version", "6"]

    if os.path.isdir(CLIENT):
        shutil.rmtree(CLIENT)
    os.makedirs(CLIENT)
    origin = {}
    jobs = []
    for b in compiled:
        folder = os.path.join(CLIENT, b.target)
        os.makedirs(folder)
        head = prelude(b.code)
        main_swift = os.path.join(folder, "main.swift")
        with open(main_swift, "w", encoding="utf-8") as out:
            out.write(head + b.code + "\n")
        origin[b.target] = (b, head.count("\n"))
        jobs.append((b.target, ["swiftc", "-typecheck", "-diagnostic-style", "llvm", "-module-name", "Snippet",
                                *flags, main_swift]))

    print(f"== the manual's Swift blocks: {len(compiled)} to compile, {len(skipped)} marked not compiled")
    output = ""
    running = []
    failed_builds = 0
    # Two at a time: this runs on 2-core machines.
    while jobs or running:
        while jobs and len(running) < 2:
            target, command = jobs.pop(0)
            running.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        process = running.pop(0)
        text, _ = process.communicate()
        output += text
        if process.returncode != 0:
            failed_builds += 1
    errors = []
    pattern = re.compile(r"^(?P<file>/[^:]*/(?P<target>snippet_[^/]+)/main\.swift):(?P<line>\d+):(?P<col>\d+): (?P<kind>error|warning): (?P<message>.*)$")
    for raw in output.split("\n"):
        match = pattern.match(raw)
        if not match or match.group("target") not in origin:
            continue
        block, offset = origin[match.group("target")]
        line = block.line + int(match.group("line")) - 1 - offset
        text = f"{block.path}:{line}:{match.group('col')}: {match.group('kind')}: {match.group('message')}"
        if text not in errors:
            errors.append(text)
    failed = [e for e in errors if ": error: " in e]
    for e in errors:
        print(e)
    if failed_builds and not failed:
        print(output[-4000:])
        print("snippets: the build failed without an error in a block (above)", file=sys.stderr)
        return 1
    if failed:
        print(f"snippets: {len(failed)} error(s) in the manual's Swift blocks", file=sys.stderr)
        return 1
    print(f"snippets: all {len(compiled)} Swift blocks of the manual build against the public API"
          f" ({len(skipped)} marked not compiled, each with its reason)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
