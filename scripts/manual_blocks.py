"""The manual's code blocks, as check-snippets.py and run-snippets.py read them.

The manual is the DocC articles (Sources/*/*.docc/*.md) and README.md. A
block is a fenced block; a Markdown comment on the line before its fence,
which DocC does not show, says what the checks do with it:

    <!-- snippet: not compiled (a manifest) -->
    <!-- snippet: run in main.swift -->
    <!-- snippet: run on a LoopThread -->
    <!-- snippet: run on a plain thread -->
    <!-- snippet: run in main.swift, as the server of the block below -->
    <!-- snippet: run in main.swift, with the server above in another process -->
    <!-- snippet: output when run on a LoopThread -->     (before a ```text block)

run-snippets.py says what each means.
"""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANNOTATION = re.compile(r"<!--\s*snippet:\s*(.*?)\s*-->")
OUTPUT_FENCES = ("text", "output")


class Block:
    """One fenced block of an article."""

    def __init__(self, path, fence_line, language, code, annotation, lead_in):
        self.path = path                    # relative to ROOT
        self.fence_line = fence_line        # 1-based line of the opening fence
        self.line = fence_line + 1          # 1-based line of the first code line
        self.language = language
        self.code = code
        self.annotation = annotation        # the snippet comment's text, or None
        self.lead_in = lead_in              # prose lines since the previous block or heading
        self.after_heading = False          # a heading stands between this and the previous block
        stem = re.sub(r"[^A-Za-z0-9]", "_", os.path.splitext(path)[0].split("/")[-1])
        self.target = f"snippet_{stem}_{self.line}"

    @property
    def where(self):
        return f"{self.path}:{self.fence_line}"

    @property
    def skip_reason(self):
        """Why a Swift block is not compiled, or None."""
        if self.annotation and self.annotation.startswith("not compiled"):
            return self.annotation[len("not compiled"):].strip(" :(),") or "no reason given"
        first = self.code.split("\n", 1)[0].strip()
        if first.startswith("// swift-tools-version") or first == "// Package.swift":
            return "a package manifest"
        return None


def blocks_in(path):
    """Every fenced block of one Markdown file, in order."""
    rel = os.path.relpath(path, ROOT)
    lines = open(path, encoding="utf-8").read().split("\n")
    found = []
    prose = []
    heading = False
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("```"):
            language = stripped[3:].strip()
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            previous = lines[i - 1] if i > 0 else ""
            match = ANNOTATION.search(previous)
            lead_in = [p for p in prose if p.strip() and not ANNOTATION.search(p)]
            block = Block(rel, i + 1, language, "\n".join(lines[i + 1:j]),
                          match.group(1) if match else None, lead_in)
            block.after_heading = heading
            found.append(block)
            prose, heading = [], False
            i = j + 1
            continue
        if stripped.startswith("#"):
            heading = True
            prose = []
        else:
            prose.append(lines[i])
        i += 1
    return found


def manual_paths():
    paths = sorted(glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc", "*.md")))
    paths.append(os.path.join(ROOT, "README.md"))
    return paths


def prelude(code):
    """The imports a reader adds to a block that shows none."""
    imports = []
    if not re.search(r"^\s*import RunLoopKit\s*$", code, re.M):
        imports.append("import RunLoopKit")
    if "TestClock" in code and "import RunLoopKitTesting" not in code:
        imports.append("import RunLoopKitTesting")
    if re.search(r"\b(Socket|ZMQContext)\(", code) and "import ZeroMQ" not in code:
        imports.append("import ZeroMQ")
    if re.search(r"\bDispatch(Semaphore|Queue|Time)\b", code) and "import Dispatch" not in code:
        imports.append("import Dispatch")
    return "\n".join(imports) + ("\n" if imports else "")
