#!/usr/bin/env bash
# Instructions per delivered message (or performed block), RunLoopKit
# against raw libzmq (SwiftNIO for the perform rows), counted
# with valgrind's callgrind: repeatable on a noisy machine, where times are
# not (Benchmarks/README.md, "Counting instructions and allocations
# (valgrind)").
#
#   Benchmarks/scripts/instructions-per-message.sh            # N = 20,000 and 40,000
#   N=10000 Benchmarks/scripts/instructions-per-message.sh    # smaller, faster
#   ROWS="oneway roundtrip" Benchmarks/scripts/instructions-per-message.sh
#   KEEP=1 …                                                   # keep the callgrind.out files
#
# Each row runs `rlk-bench --workload <name> <count>` (one side of one
# scenario, once) under `valgrind --tool=callgrind --separate-threads=no`,
# for ours and for the raw libzmq peer, each at N and 2N messages, and
# reads the total instruction count of all threads (the `totals:` line).
# Instructions per message = (I(2N) - I(N)) / N: start-up, set-up and
# tear-down cancel. The whole valgrind process runs on one CPU (taskset;
# CPU=1 to choose another). Rows:
#   oneway     one thread sends 64 B PortMessages to a LoopThread's port
#              (throughput-inproc)  vs  raw libzmq PUSH/PULL between two threads
#   roundtrip  64 B ping-pong between two LoopThreads' ports, reply port
#              (roundtrip-inproc)   vs  raw libzmq PAIR between two threads
#   request    Port.sendRequest from a thread to a LoopThread's port
#              (request-roundtrip-inproc)  vs  raw libzmq REQ/REP
#   typed      (not in the default rows) a typed sendRequest(_:as:) round
#              trip (typed-request-inproc)  vs  the same request over raw
#              ports (the request row's workload): what the coder adds
#   fanin      4 threads send to one LoopThread's port (fanin-inproc)
#              vs  raw libzmq, 4 PUSH threads into one PULL
#   perform    one thread queues empty blocks on a LoopThread's loop with
#              RunLoop.perform (perform-throughput)
#              vs  SwiftNIO, EventLoop.execute on one event loop
#   performrt  perform round trips between two LoopThreads (perform-roundtrip)
#              vs  SwiftNIO, EventLoop.execute between two event loops
#   actorhop   an actor's call to an actor on another LoopThread and back
#              (actor-hop: two executor jobs)  vs  the same on two NIO event loops
#   churnpass  (not in the default rows) one pass of timer-churn-100000's
#              loop that fires the churn timer (an invalidate and an add
#              among 100,000 timers, the timer due again at once)
#              vs  the C timerfd + heap loop's pass doing the same
# Round-trip rows count per round trip (two messages; for performrt, two
# blocks). The oneway and
# roundtrip rows also count their raw peer served as an event loop serves a
# libzmq socket (epoll on ZMQ_FD, non-blocking receives until empty: the
# workloads oneway-raw-polled and roundtrip-raw-polled), a line below; the
# oneway row also counts the same stream sent from bytes and read in place
# (Port.send(msgid:bytes:…), Port.setInPlaceMessageHandler: oneway-in-place).
#
# Valgrind runs one thread at a time: a receiver wakes only when the
# sender blocks or its time slice ends, so one-way rows see large batches
# per wake-up (the throughput regime); round trips wake once per message
# by nature. Kernel work (system calls, wake-ups across CPUs) is not
# counted: callgrind sees user-space instructions only.
# Repeat runs agree within about 0.2 %, except raw libzmq's one-way rows
# (a few percent: its batching under valgrind varies).
# Takes about 2.5 minutes with the defaults on a 2-core VM.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/valgrind-common.sh"

N="${N:-20000}"
ROWS="${ROWS:-oneway roundtrip request fanin perform performrt actorhop}"
N2=$((2 * N))

# Instructions of all threads in one run.
instructions() {
    local name="$1" count="$2"
    local out="$WORK/callgrind.out.$name.$count"
    run_workload "$name" "$count" --tool=callgrind --separate-threads=no --callgrind-out-file="$out"
    local total
    total="$(awk '/^totals:/ { print $2 }' "$out")"
    [[ -n "$total" ]] || total="$(awk '/^summary:/ { print $2 }' "$out")"
    [[ -n "$total" ]] || { echo "no totals in $out" >&2; exit 1; }
    echo "$total"
}

declare -A unit=([oneway]="instr/msg" [fanin]="instr/msg" [roundtrip]="instr/round trip" [request]="instr/round trip" [typed]="instr/round trip"
                 [perform]="instr/block" [performrt]="instr/round trip" [actorhop]="instr/round trip" [churnpass]="instr/pass")
# Each row's workloads, ours and the peer's (rlk-bench --workload --list).
declare -A ours_workload=([oneway]="oneway" [fanin]="fanin" [roundtrip]="roundtrip" [request]="request" [typed]="request-typed"
                          [perform]="perform" [performrt]="perform-roundtrip" [actorhop]="actor-hop" [churnpass]="timer-churn-passes")
declare -A peer_workload=([oneway]="oneway-raw" [fanin]="fanin-raw" [roundtrip]="roundtrip-raw" [request]="request-raw" [typed]="request"
                          [perform]="perform-nio" [performrt]="perform-roundtrip-nio" [actorhop]="actor-hop-nio" [churnpass]="timer-churn-passes-c")
declare -A polled=([oneway]="oneway-raw-polled" [roundtrip]="roundtrip-raw-polled")
declare -A inplace=([oneway]="oneway-in-place")
declare -A peer=([oneway]="PUSH/PULL" [fanin]="4 PUSH->PULL" [roundtrip]="PAIR" [request]="REQ/REP" [typed]="untyped"
                 [perform]="NIO execute" [performrt]="NIO execute" [actorhop]="NIO actors" [churnpass]="C timer loop")

lines=()
for row in $ROWS; do
    [[ -n "${unit[$row]:-}" ]] || { echo "unknown row '$row' (oneway, roundtrip, request, typed, fanin, perform, performrt, actorhop, churnpass)" >&2; exit 2; }
    echo "callgrind: $row at $N and $N2 messages, ours and the peer (${peer[$row]})…" >&2
    ours1="$(instructions "${ours_workload[$row]}" "$N")"
    ours2="$(instructions "${ours_workload[$row]}" "$N2")"
    raw1="$(instructions "${peer_workload[$row]}" "$N")"
    raw2="$(instructions "${peer_workload[$row]}" "$N2")"
    ours="$(per_message "$ours1" "$ours2" "$N" "$N2" 0)"
    raw="$(per_message "$raw1" "$raw2" "$N" "$N2" 0)"
    lines+=("$(printf '%-10s %-17s %12s %12s  %-12s %7s×' "$row" "${unit[$row]}" "$ours" "$raw" "${peer[$row]}" "$(ratio "$ours" "$raw")")")
    echo "  ours I($N)=$ours1 I($N2)=$ours2; peer I($N)=$raw1 I($N2)=$raw2" >&2
    # The same raw peer served as an event loop serves a libzmq socket
    # (epoll on ZMQ_FD, non-blocking receives until empty), where there is one.
    if [[ -n "${polled[$row]:-}" ]]; then
        polled1="$(instructions "${polled[$row]}" "$N")"
        polled2="$(instructions "${polled[$row]}" "$N2")"
        polled_raw="$(per_message "$polled1" "$polled2" "$N" "$N2" 0)"
        lines+=("$(printf '%-10s %-17s %12s %12s  %-12s %7s×' "" "" "" "$polled_raw" "${peer[$row]}, polled" "$(ratio "$ours" "$polled_raw")")")
    fi
    # The same stream sent from bytes and read in place (no Data on either side).
    if [[ -n "${inplace[$row]:-}" ]]; then
        inplace1="$(instructions "${inplace[$row]}" "$N")"
        inplace2="$(instructions "${inplace[$row]}" "$N2")"
        ours_inplace="$(per_message "$inplace1" "$inplace2" "$N" "$N2" 0)"
        lines+=("$(printf '%-10s %-17s %12s %12s  %-12s %7s×' "  in place" "" "$ours_inplace" "$raw" "${peer[$row]}" "$(ratio "$ours_inplace" "$raw")")")
    fi
done

echo
echo "instructions per message (callgrind, all threads, user space; (I(2N) - I(N)) / N with N = $N; CPU $CPU)"
printf '%-10s %-17s %12s %12s  %-12s %8s\n' "row" "unit" "RunLoopKit" "peer" "peer is" "ratio"
for line in "${lines[@]}"; do echo "$line"; done
