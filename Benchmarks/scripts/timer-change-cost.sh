#!/usr/bin/env bash
# What one timer change costs through the public API, counted with
# callgrind: instructions and simulated last-level cache misses per
# invalidate + add (`FarTimers.replaceOne`: two changes) and per moved
# fire date (`FarTimers.moveOne`: one change), at 1,000 and at 100,000
# timers (docs/performance.md, "Timers").
#
#   Benchmarks/scripts/timer-change-cost.sh          # N = 30,000 changes a run
#   N=300000 Benchmarks/scripts/timer-change-cost.sh # longer: the steady state
#
# Each function is counted in a run of its own (`--toggle-collect` on it
# alone: given two such options, callgrind collected only one of the two
# functions). The last level is simulated as this host's L2: 2 MB, 16-way,
# 64-byte lines; valgrind has no hardware prefetcher, so a miss here is a
# line fetched, whether a real CPU would have streamed it or stalled.
# Under valgrind a run is about fifty times slower, so a new random fire
# date is mostly later than the one the timer was made with: most counted
# moves are moves later, about half in a real run.
set -euo pipefail
source "$(dirname "$0")/valgrind-common.sh"
N="${N:-30000}"

printf '%-22s %-10s %12s %14s\n' workload function "instr/call" "LL misses/call"
for workload in timer-change timer-change-100000; do
    for function in replaceOne moveOne; do
        out="$WORK/$workload.$function.callgrind"
        run_workload "$workload" "$N" --tool=callgrind --separate-threads=no \
            --cache-sim=yes --LL=2097152,16,64 --collect-atstart=no \
            --toggle-collect="*FarTimers*$function*" --callgrind-out-file="$out"
        # The workload alternates invalidate + add (two changes) and a move
        # (one): N / 3 calls of each.
        callgrind_annotate "$out" 2>/dev/null | awk -v w="$workload" -v f="$function" -v n="$N" '
            /PROGRAM TOTALS/ {
                for (i = 1; i <= NF; i++) gsub(",", "", $i)
                calls = n / 3
                printf "%-22s %-10s %12.0f %14.2f\n", w, f, $1 / calls, ($15 + $17) / calls
            }'
    done
done
