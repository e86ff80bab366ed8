#!/usr/bin/env python3
"""How much each row of `rlk-bench --quick` moves between runs.

    Benchmarks/scripts/quick-stability.py [--runs 3] [--placement cross|same] [--passes N] [--filter NAME]... [--sides] [--keep DIR]

Runs the quick benchmark RUNS times (the release build in Benchmarks/.build,
built first) and prints, per row, its ratio in each run and the spread
(largest over smallest, minus one); a row whose ratio moves by 20 % or more
is marked. The quick run must measure enough that no row does
(Benchmarks/README.md, "How it measures"). Rows without a ratio are skipped.
With --sides it also prints how far each side's centre moved (ours, then
the peer): which side moves tells a noisy peer from a noisy measurement of
ours, and a last line compares how far the sides' centres moved between
runs with what their pass levels' spread within each run predicts (that
spread over the square root of the levels' count): about equal when the
runs differ only by which draws they got, so that more passes would move
a row less; far larger when the host changed its pace between runs.
With --keep DIR each run's `rlk-bench --json` report is kept there
(run-1.json, ...), to read any row's own figures afterwards. Exits 1 when a
row moved by 20 % or more."""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
LIMIT = 0.20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--placement", default="cross")
    parser.add_argument("--filter", action="append", default=[])
    parser.add_argument("--sides", action="store_true")
    parser.add_argument("--passes", type=int, help="passes per quick run (rlk-bench --passes; its default if not given)")
    parser.add_argument("--keep", help="a directory to keep each run's JSON report in")
    args = parser.parse_args()
    subprocess.run(["swift", "build", "-c", "release", "--product", "rlk-bench"], cwd=PACKAGE, check=True,
                   stdout=subprocess.DEVNULL)
    command = [os.path.join(PACKAGE, ".build", "release", "rlk-bench"), "--quick", "--json", "--placement", args.placement]
    if args.passes:
        command += ["--passes", str(args.passes)]
    for name in args.filter:
        command += ["--filter", name]
    runs = []
    sides = []
    levels = []
    for index in range(args.runs):
        output = subprocess.run(command, cwd=PACKAGE, check=True, capture_output=True, text=True).stdout
        document = json.loads(output)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            with open(os.path.join(args.keep, f"run-{index + 1}.json"), "w") as kept:
                kept.write(output)
        runs.append({row["name"]: row["ratio"] for row in document["scenarios"]})
        sides.append({row["name"]: ((row["ours"] or {}).get("centre"), (row["peer"] or {}).get("centre"))
                      for row in document["scenarios"]})
        levels.append({row["name"]: ((row["ours"] or {}).get("levels"), (row["peer"] or {}).get("levels"))
                       for row in document["scenarios"]})
        print(f"run {index + 1}: {document['seconds']:.0f} s", file=sys.stderr)
    names = [name for name in runs[0] if all(run.get(name) for run in runs)]
    moved = []
    print(f"{'row':34} " + " ".join(f"{'run ' + str(i + 1):>9}" for i in range(args.runs)) + "   spread" +
          ("     ours     peer" if args.sides else ""))
    for name in names:
        ratios = [run[name] for run in runs]
        spread = max(ratios) / min(ratios) - 1
        mark = "  MOVED" if spread >= LIMIT else ""
        if spread >= LIMIT:
            moved.append(name)
        line = f"{name:34} " + " ".join(f"{ratio:9.3f}" for ratio in ratios) + f"   {spread * 100:5.1f} %"
        if args.sides:
            for side in (0, 1):
                values = [run[name][side] for run in sides]
                line += f"  {max(values) / min(values) * 100 - 100:5.1f} %" if all(values) else "      -"
        print(line + mark)
    if args.sides:
        print(draws_line(names, sides, levels))
    print(f"placement {args.placement}: {len(moved)} of {len(names)} rows moved by {LIMIT * 100:.0f} % or more" +
          (": " + ", ".join(moved) if moved else ""))
    sys.exit(1 if moved else 0)


def draws_line(names, sides, levels):
    """The sides' centres' movement between runs (their standard deviation
    over their mean, averaged over every side with three or more levels a
    run) against what the spread of their levels within a run predicts."""
    observed, predicted = [], []
    for name in names:
        for side in (0, 1):
            per_run = [run[name][side] for run in levels]
            centres = [run[name][side] for run in sides]
            if not all(isinstance(draws, list) and len(draws) >= 3 and min(draws) > 0 for draws in per_run):
                continue
            if not all(centres) or len(centres) < 2:
                continue
            observed.append(statistics.stdev(centres) / statistics.mean(centres))
            predicted.append(statistics.mean(statistics.stdev(draws) / statistics.mean(draws) / len(draws) ** 0.5
                                             for draws in per_run))
    if not observed:
        return "sides' centres: no side has three or more levels a run"
    return (f"sides' centres moved between runs by {statistics.mean(observed) * 100:.1f} % (their standard deviation, "
            f"the mean over {len(observed)} sides); their levels' spread within a run predicts "
            f"{statistics.mean(predicted) * 100:.1f} %")


if __name__ == "__main__":
    main()
