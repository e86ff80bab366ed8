#!/usr/bin/env python3
"""Runs every example of the manual that states its output, and compares.

    python3 scripts/run-snippets.py [--list] [--only PATTERN]

An example states its output when a ```text block follows its ```swift
block with at most a short lead-in between ("It prints:", three lines at
most, no heading), or when it prints and a comment in it quotes or gives
what it prints (`print(value)   // 42`). Every such block carries, on the
line before its fence, a Markdown comment that DocC does not show, naming
the context it runs in:

    <!-- snippet: run in main.swift -->       the block is a program's main.swift
    <!-- snippet: run on a plain thread -->   its body runs on a thread of its own
                                              (neither the main thread nor a
                                              LoopThread), joined by main.swift
    <!-- snippet: run on a LoopThread -->     its body is a task performed on a
                                              started LoopThread named "snippet"

and its stated output is the ```text block after it. The same block can be
shown in another context too: a ```text block whose fence follows
`<!-- snippet: output when run on a LoopThread -->` (or any of the three,
several joined by " and ") is its output there, and the block is run there
as well. Two processes:
`<!-- snippet: run in main.swift, as the server of the block below -->`
marks a program that is started, not compared, and the next block that says
`<!-- snippet: run in main.swift, with the server above in another process -->`
runs while it does; the server must then exit by itself with status 0.

A block that states output without a run annotation fails the check, and so
does a run annotation without a stated output: no example can slip by, and
none can pass by dropping what it claims. Standard output is compared line
by line after normalising only what differs from run to run: pids, times
and durations, and paths. Each process gets a runtime directory of its own
(RUNLOOPKIT_RUNTIME_DIR), so names do not meet other programs'.

All runnable blocks are executables of one client package, in
.build/snippets-run-client, that depends on RunLoopKit by path (public API
only, as a user's package) and is built once; the runs then go one at a
time, each with a time limit, since their output depends on timing on a
2-core machine. Exits 1 and prints each mismatch at the article's line.
"""

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from manual_blocks import ROOT, OUTPUT_FENCES, blocks_in, manual_paths, prelude  # noqa: E402

CLIENT = os.path.join(ROOT, ".build", "snippets-run-client")
# The scratch path scripts/check-public-api.sh builds its client package in:
# RunLoopKit, built there once as a dependency, serves both (CI runs the
# public-API check first; a build of its own here took 70 s more).
SCRATCH = os.path.join(ROOT, ".build", "clients-build")
TIME_LIMIT = 60
CONTEXTS = {"in main.swift": "main", "on a plain thread": "plain", "on a LoopThread": "loopthread"}
RUN = re.compile(r"^run (in main\.swift|on a plain thread|on a LoopThread)(?:, (.*))?$")
CONTEXT_NAMES = r"(?:in main\.swift|on a plain thread|on a LoopThread)"
OUTPUT_WHEN = re.compile(rf"^output when run ({CONTEXT_NAMES}(?: and {CONTEXT_NAMES})*)$")
SERVER_ROLE = "as the server of the block below"
CLIENT_ROLE = "with the server above in another process"
LEAD_IN_LIMIT = 3

SUPPORT = '''import Glibc
import RunLoopKit

// What the runner's contexts need (scripts/run-snippets.py): a thread that is
// neither the main thread nor a LoopThread, and a started LoopThread.
final class SnippetBody: @unchecked Sendable {
    let body: @Sendable () throws -> Void
    init(_ body: @escaping @Sendable () throws -> Void) { self.body = body }
}

public func runOnPlainThread(_ body: @escaping @Sendable () throws -> Void) {
    let box = Unmanaged.passRetained(SnippetBody(body)).toOpaque()
    var thread = pthread_t()
    let created = pthread_create(&thread, nil, { raw in
        let body = Unmanaged<SnippetBody>.fromOpaque(raw!).takeRetainedValue().body
        do { try body() } catch { fatalError("Error raised by the example: \\(error)") }
        return nil
    }, box)
    precondition(created == 0, "pthread_create failed: \\(created)")
    pthread_join(thread, nil)
}

public func runOnLoopThread(_ body: @escaping @Sendable () throws -> Void) throws {
    let thread = LoopThread(name: "snippet")
    try thread.start()
    try thread.performAndWait(timeout: .seconds(120)) { try body() }
    thread.stop()
}
'''


class Run:
    """One block run in one context, with the output the article states."""

    def __init__(self, block, context, expected, output_block):
        self.block = block
        self.context = context
        self.expected = expected
        self.output_block = output_block
        self.server = None
        self.target = f"{block.target}_{context}"


def claims_output(code):
    """Whether a block's comments state what it prints."""
    if "print(" not in code:
        return False
    for line in code.split("\n"):
        if "//" not in line:
            continue
        before, comment = line.split("//", 1)
        if "print(" in before or '"' in comment:
            return True
    return False


def plan(blocks):
    """The runs of one file's blocks, and the errors of its annotations."""
    runs, servers, errors = [], [], []
    swift = None                # the last Swift block, and whether the next block may be its output
    server = None
    for index, block in enumerate(blocks):
        previous = blocks[index - 1] if index else None
        annotation = block.annotation or ""
        if block.language == "swift":
            swift = block
            run = RUN.match(annotation)
            block.context = CONTEXTS[run.group(1)] if run else None
            block.role = run.group(2) if run else None
            block.stated = claims_output(block.code)
            block.outputs = []
            if block.role == SERVER_ROLE:
                server = block
                servers.append(block)
            elif block.role == CLIENT_ROLE:
                if server is None:
                    errors.append(f"{block.where}: no server block above for '{annotation}'")
            elif block.role:
                errors.append(f"{block.where}: unknown run annotation '{annotation}'")
            continue
        if block.language not in OUTPUT_FENCES or swift is None:
            continue
        extra = OUTPUT_WHEN.match(annotation)
        if extra:
            swift.outputs += [(CONTEXTS[name], block) for name in extra.group(1).split(" and ")]
        elif previous is swift and not block.after_heading and len(block.lead_in) <= LEAD_IN_LIMIT \
                and not annotation.startswith("not output"):
            swift.outputs.insert(0, (swift.context, block))
            swift.stated = True
    for block in (b for b in blocks if b.language == "swift"):
        if block.role == SERVER_ROLE:
            continue
        if block.stated and not block.outputs and block.context is None or \
                any(context is None for context, _ in block.outputs):
            errors.append(f"{block.where}: states its output but has no run annotation "
                          "(<!-- snippet: run in main.swift --> or another context; see scripts/run-snippets.py)")
            continue
        if block.context and not block.outputs:
            errors.append(f"{block.where}: runs, but states no output: give it in a ```text block after it")
            continue
        for context, output_block in block.outputs:
            run = Run(block, context or block.context, output_block.code, output_block)
            if block.role == CLIENT_ROLE:
                run.server = max((s for s in servers if s.fence_line < block.fence_line), key=lambda s: s.fence_line)
            runs.append(run)
    return runs, servers, errors


def program(block, context):
    """The main.swift of a block run in a context."""
    if context == "main":
        return prelude(block.code) + block.code + "\n"
    lines = block.code.split("\n")
    imports = [line for line in lines if line.startswith("import ")]
    body = [("    " + line).rstrip() for line in lines if not line.startswith("import ")]
    runner = "runOnPlainThread(snippetBody)" if context == "plain" else "try runOnLoopThread(snippetBody)"
    return (prelude(block.code) + "\n".join(imports) + ("\n" if imports else "") + "import SnippetSupport\n\n"
            + f"// The example's body, run {context_name(context)}.\n"
            + "@Sendable func snippetBody() throws {\n" + "\n".join(body) + "\n}\n\n" + runner + "\n")


def context_name(context):
    return next(name for name, key in CONTEXTS.items() if key == context)


def write_client(targets):
    if os.path.isdir(CLIENT):
        shutil.rmtree(CLIENT)
    os.makedirs(os.path.join(CLIENT, "Sources", "SnippetSupport"))
    with open(os.path.join(CLIENT, "Sources", "SnippetSupport", "SnippetSupport.swift"), "w") as out:
        out.write(SUPPORT)
    identity = os.path.basename(ROOT)
    lines = []
    for target, text in targets.items():
        os.makedirs(os.path.join(CLIENT, "Sources", target))
        with open(os.path.join(CLIENT, "Sources", target, "main.swift"), "w", encoding="utf-8") as out:
            out.write(text)
        lines.append(f'        .executableTarget(name: "{target}", dependencies: deps),')
    with open(os.path.join(CLIENT, "Package.swift"), "w") as out:
        out.write(f'''// swift-tools-version:6.2
// Generated by scripts/run-snippets.py: the manual's runnable examples, one
// executable each, as a client of RunLoopKit (public API only).
import PackageDescription

let rlk = "{identity}"
let deps: [Target.Dependency] = [
    "SnippetSupport",
    .product(name: "RunLoopKit", package: rlk),
    .product(name: "RunLoopKitTesting", package: rlk),
    .product(name: "ZeroMQ", package: rlk),
]

let package = Package(
    name: "ManualExamples",
    dependencies: [.package(path: "{ROOT}")],
    targets: [
        .target(name: "SnippetSupport", dependencies: [.product(name: "RunLoopKit", package: rlk)]),
{chr(10).join(lines)}
    ],
    swiftLanguageModes: [.v6]
)
''')


def normalise(text):
    """The output with what differs between runs replaced: pids, times, durations, paths."""
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?", "<time>", text)
    text = re.sub(r"\b\d\d:\d\d:\d\d(\.\d+)?\b", "<time>", text)
    text = re.sub(r"(?<![\w.])\d+(\.\d+)?(e-?\d+)?\s?(ns|µs|us|ms|s|seconds?)\b", "<duration>", text)
    text = re.sub(r"\bpid[ :=]*\d+", "pid <pid>", text)
    text = re.sub(r"\bPort\(\d+/", "Port(<pid>/", text)      # a port's description starts with its pid
    text = re.sub(r"(?<![\w.)>])/(?:[^\s/:'\",()]+/)*[^\s/:'\",()]+", "<path>", text)
    lines = [line.rstrip() for line in text.strip("\n").split("\n")]
    return "\n".join(lines).strip("\n")


def start(binary, runtime):
    env = dict(os.environ, RUNLOOPKIT_RUNTIME_DIR=runtime)
    env.pop("RUNLOOPKIT_TAP", None)
    return subprocess.Popen([binary], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def execute(run, bin_path):
    """Runs one example; returns None when its output is the article's, else what went wrong."""
    runtime = tempfile.mkdtemp(prefix="rlk-snip-")
    server = None
    try:
        if run.server is not None:
            server = start(os.path.join(bin_path, f"{run.server.target}_main"), runtime)
        process = start(os.path.join(bin_path, run.target), runtime)
        try:
            out, err = process.communicate(timeout=TIME_LIMIT)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            return f"did not end within {TIME_LIMIT} s\n{out}{err}"
        problems = []
        if process.returncode != 0:
            problems.append(f"exited with status {process.returncode}\n{err.strip()}")
        if server is not None:
            try:
                server_out, server_err = server.communicate(timeout=15)
                if server.returncode != 0:
                    problems.append(f"its server exited with status {server.returncode}\n{server_err.strip()}")
            except subprocess.TimeoutExpired:
                server.kill()
                server.communicate()
                problems.append("its server did not exit within 15 s after it")
        expected, actual = normalise(run.expected), normalise(out)
        if expected != actual:
            diff = difflib.unified_diff(expected.split("\n"), actual.split("\n"),
                                        "the article", "the run", lineterm="", n=2)
            problems.append("its output differs (normalised):\n" + "\n".join(diff)
                            + (f"\nstandard error:\n{err.strip()}" if err.strip() else ""))
        return "\n".join(problems) or None
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.communicate()
        shutil.rmtree(runtime, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--list", action="store_true", help="list the runs without building")
    parser.add_argument("--only", help="run only the blocks whose article path contains this")
    args = parser.parse_args()

    runs, servers, errors = [], [], []
    for path in manual_paths():
        file_runs, file_servers, file_errors = plan(blocks_in(path))
        runs += file_runs
        servers += file_servers
        errors += file_errors
    for e in errors:
        print(f"{e}")
    if errors:
        print(f"snippets: {len(errors)} example(s) annotated wrongly or not at all", file=sys.stderr)
        return 1
    if args.only:
        runs = [r for r in runs if args.only in r.block.path]
        servers = [s for s in servers if any(r.server is s for r in runs)]
    if args.list:
        for r in runs:
            print(f"{r.block.where}: run {context_name(r.context)}, output at line {r.output_block.line}")
        return 0

    targets = {f"{s.target}_main": program(s, "main") for s in servers}
    for r in runs:
        targets[r.target] = program(r.block, r.context)
    write_client(targets)
    print(f"== the manual's examples that state their output: {len(runs)} run(s) of {len(targets)} program(s)")
    build = subprocess.run(["swift", "build", "--scratch-path", SCRATCH], cwd=CLIENT, capture_output=True, text=True)
    if build.returncode != 0:
        print(build.stdout[-6000:] + build.stderr[-3000:])
        print("snippets: the examples' client package did not build (above; "
              "its programs are in .build/snippets-run-client/Sources)", file=sys.stderr)
        return 1
    bin_path = subprocess.run(["swift", "build", "--scratch-path", SCRATCH, "--show-bin-path"], cwd=CLIENT,
                              capture_output=True, text=True, check=True).stdout.strip()
    failures = 0
    for r in runs:
        problem = execute(r, bin_path)
        label = f"{r.block.where}: run {context_name(r.context)} (output at line {r.output_block.line})"
        if problem:
            failures += 1
            print(f"{label}: error: " + problem.replace("\n", "\n    "))
        else:
            print(f"{label}: as stated")
    if failures:
        print(f"snippets: {failures} of {len(runs)} run(s) of the manual's examples do not print what it states",
              file=sys.stderr)
        return 1
    print(f"snippets: all {len(runs)} run(s) of the manual's examples print what it states")
    return 0


if __name__ == "__main__":
    sys.exit(main())
