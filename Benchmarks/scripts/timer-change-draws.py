#!/usr/bin/env python3
"""Timer changes measured in fresh processes, several kinds interleaved.

    Benchmarks/scripts/timer-change-draws.py growth rlk c c-objects
    Benchmarks/scripts/timer-change-draws.py 100000 rlk c-objects --draws 12
    Benchmarks/scripts/timer-change-draws.py growth c-objects --work 750
    Benchmarks/scripts/timer-change-draws.py growth rlk --binary /tmp/before/rlk-bench --binary .build/release/rlk-bench

Each draw runs one `rlk-bench --child measure` process per kind (and per
binary), in turn, so that the kinds share the host's stretch
(docs/performance.md, "Why draws, not batches"): `growth` is
the cost of a change at 100,000 timers over the cost at 1,000 within one
process (`timer-growth-KIND`, as the `timer-change-growth` row); a number is
the cost of one change in ns with that many timers (`timer-changes-KIND`,
as the `timer-change-N` rows). Kinds: `rlk` (the public API), `c` (the C
index heap, the rows' peer), `c-objects` (a C heap of 96-byte timer
objects, docs/performance.md, "Timers"; `--work`
gives it rounds of work on registers alone before each removal, insertion
and move, about seven instructions a round).

Prints each kind's draws and their middle mean (the mean of what is left
once the lowest and the highest fifth are set aside).
"""
import argparse
import os
import statistics
import subprocess
import sys

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", help="growth, or a number of timers (1000, 10000, 100000)")
    parser.add_argument("kinds", nargs="+", choices=["rlk", "c", "c-objects"])
    parser.add_argument("--draws", type=int, default=8, help="processes per kind and binary (default 8)")
    parser.add_argument("--placement", default="same", choices=["same", "cross", "free"])
    parser.add_argument("--changes", type=int, default=60000, help="changes a measurement, in 5 batches (a quick run's)")
    parser.add_argument("--work", type=int, default=0, help="c-objects: rounds of other work a three changes (default 0)")
    parser.add_argument("--binary", action="append", help="an rlk-bench to run (repeatable; default: build this package's)")
    args = parser.parse_args()
    if args.what != "growth" and not args.what.isdigit():
        parser.error("what: growth or a number of timers")

    binaries = args.binary
    if not binaries:
        subprocess.run(["swift", "build", "-c", "release", "--product", "rlk-bench"], cwd=PACKAGE, check=True,
                       stdout=subprocess.DEVNULL)
        binaries = [os.path.join(PACKAGE, ".build", "release", "rlk-bench")]

    def contender(kind):
        sizes = [str(args.changes), "5"] + ([str(args.work)] if kind == "c-objects" and args.work else [])
        if args.what == "growth":
            return [f"timer-growth-{kind}", args.placement, "1000", "100000"] + sizes
        return [f"timer-changes-{kind}", args.placement, args.what] + sizes

    draws = {(binary, kind): [] for binary in binaries for kind in args.kinds}
    for _ in range(args.draws):
        for binary in binaries:
            for kind in args.kinds:
                # The parent pid: the child dies with this script. CPU -1: its main thread
                # unpinned; the contender pins its own thread as the placement says.
                command = [binary, "--child", "measure", str(os.getpid()), "-1"] + contender(kind)
                done = subprocess.run(command, capture_output=True, text=True, timeout=600)
                samples = [float(word) for word in done.stdout.split()]
                if done.returncode != 0 or not samples:
                    sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
                draws[(binary, kind)].append(statistics.median(samples))

    unit = "×" if args.what == "growth" else "ns"
    for (binary, kind), values in draws.items():
        ordered = sorted(values)
        fifth = len(ordered) // 5
        middle = ordered[fifth:len(ordered) - fifth]
        name = kind if len(binaries) == 1 else f"{binary} {kind}"
        shown = ", ".join(f"{value:.3f}" if unit == "×" else f"{value:.1f}" for value in values)
        print(f"{name}: middle mean {statistics.mean(middle):.3f} {unit} ({shown})")


if __name__ == "__main__":
    main()
