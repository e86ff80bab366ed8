#!/usr/bin/env python3
"""Every unchecked site of the code is explained in docs/unsafe-sites.md.

    python3 scripts/check-unsafe-sites.py

A site is a line of a tracked Swift file under Sources/ that uses
`Unmanaged`, `unowned(unsafe)`, `@exclusivity(unchecked)` or
`_withUnsafeGuaranteedRef`, or lends a pointer's memory as inout
(`&x.pointee`: no exclusivity check), in code (comments do not count). Each needs,
on its line or in the 12 lines above it, a comment naming its entry of the
article, `// U-SOME-ID (docs/unsafe-sites.md).`, and the nearest such
comment names it. The check fails when a site has none, when a comment
names an id that the article does not define (a heading `### U-SOME-ID: …`),
when the article defines an id that no code names, and when a test the
article cites (a quoted test name, or a backquoted test function of
FramePoolTests) is not found under Tests/. Exits 1 listing each problem.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTICLE = os.path.join(ROOT, "docs", "unsafe-sites.md")
SITE = re.compile(r"\bUnmanaged\b|unowned\(unsafe\)|@exclusivity\(unchecked\)|_withUnsafeGuaranteedRef|&\w+\.pointee\)")
TAG = re.compile(r"//.*\b(U-[A-Z][A-Z-]*[A-Z])\b \(docs/unsafe-sites\.md\)")
HEADING = re.compile(r"^### (U-[A-Z][A-Z-]*[A-Z]):", re.M)
REACH = 12


def code_part(line):
    """The line without its comment, crudely (string literals kept)."""
    stripped = line.lstrip()
    if stripped.startswith("//"):
        return ""
    return line.split("//", 1)[0]


def main():
    files = subprocess.run(["git", "ls-files", "Sources"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    article = open(ARTICLE, encoding="utf-8").read()
    defined = set(HEADING.findall(article))
    problems = []
    used = {}
    sites = 0
    for path in (f for f in files if f.endswith(".swift")):
        lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
        for index, line in enumerate(lines):
            if not SITE.search(code_part(line)):
                continue
            sites += 1
            tag = None
            for j in range(index, max(-1, index - REACH - 1), -1):
                match = TAG.search(lines[j])
                if match:
                    tag = match.group(1)
                    break
            where = f"{path}:{index + 1}"
            if tag is None:
                problems.append(f"{where}: an unchecked site with no `// U-… (docs/unsafe-sites.md).` comment "
                                f"within {REACH} lines above: {line.strip()}")
            elif tag not in defined:
                problems.append(f"{where}: names {tag}, which docs/unsafe-sites.md does not define")
            else:
                used.setdefault(tag, set()).add(path)
    for tag in sorted(defined - set(used)):
        problems.append(f"docs/unsafe-sites.md: {tag} is defined but no code names it")

    # The tests the article cites must exist.
    tests = ""
    for directory, _, names in os.walk(os.path.join(ROOT, "Tests")):
        for name in names:
            if name.endswith(".swift"):
                tests += open(os.path.join(directory, name), encoding="utf-8").read()
    flat = re.sub(r"\s+", " ", article)
    cited = re.findall(r'"((?:S-[A-Z0-9]+-\d+|tap:)[^"]*)"', flat)
    for name in cited:
        if f'"{name}"' not in re.sub(r"\s+", " ", tests):
            problems.append(f'docs/unsafe-sites.md cites a test that is not in Tests/: "{name}"')
    frame_pool = flat[flat.find("### U-FRAME-POOL"):flat.find("## The message path")]
    for function in re.findall(r"`([a-z][A-Za-z]+)`", frame_pool[frame_pool.find("**Tests.**"):]):
        if f"func {function}(" not in tests:
            problems.append(f"docs/unsafe-sites.md cites a test function that is not in Tests/: {function}")

    for problem in problems:
        print(problem)
    if problems:
        print(f"unsafe sites: {len(problems)} problem(s); see docs/unsafe-sites.md", file=sys.stderr)
        return 1
    files_count = len({p for paths in used.values() for p in paths})
    print(f"unsafe sites: {sites} lines in {files_count} files, under {len(used)} entries of docs/unsafe-sites.md,"
          f" each pointed to; {len(cited)} cited tests found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
