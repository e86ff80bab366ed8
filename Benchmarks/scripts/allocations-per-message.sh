#!/usr/bin/env bash
# Heap allocations per send and per delivered 64-byte message, counted by
# valgrind's memcheck ("total heap usage: N allocs": every malloc, calloc,
# realloc, memalign and operator new of the whole process, all threads).
# Fails (exit 1) when a count grows past its limit: a guard, not a timing.
#
#   Benchmarks/scripts/allocations-per-message.sh                 # the default limits
#   Benchmarks/scripts/allocations-per-message.sh --delivery 2    # a tighter limit
#   KEEP=1 Benchmarks/scripts/allocations-per-message.sh          # keep memcheck's logs
#
# Limits (allocations; a value is OVER when it exceeds its limit by more
# than 0.05, the slack for what libzmq's queue growth leaves in a
# difference: a chunk of 256 messages now and then; the defaults are what
# is measured today, rounded up, so that the script fails when they grow):
#   --send X        per send: Port.send of a 64 B message, nothing received (default 1:
#                   libzmq's header for the frame; the frame's buffer is the channel's)
#   --delivery X    per delivered message, the send taken out (default 0: the
#                   receiver refills the last message's Data in place once its
#                   handler let it go; a handler that keeps messages costs 2)
#   --roundtrip X   per round trip between two LoopThreads' ports (default 2:
#                   libzmq's copy of each message, as raw libzmq's own)
#   --request X     per Port.sendRequest round trip (default 3: libzmq's two,
#                   and the closure that stops the private run if the
#                   destination dies)
#   --typed X       per typed sendRequest(_:as:) round trip, an id and 64 B
#                   (default 56: the untyped request's 3, and the coder's
#                   value trees, keys and Data at each end, encode and decode)
#
# Each count runs `rlk-bench --workload <name> <count>` twice, at n and 2n,
# and takes (A(2n) - A(n)) / n, so that start-up and set-up cancel:
#   send       send-only: n sends to a port no loop receives on (the queue holds
#              2,000, so n = 800 and 1,600): the send path alone, in a stream's
#              steady state (the send channel's frame pool filled first)
#   one-way    oneway: n sends from one thread to a LoopThread's port, all
#              delivered (n = 10,000 and 20,000): send + delivery, the send
#              channel's pool filled first (a queue's worth sent with the
#              receiving loop held): left to the stream, its size followed
#              the scheduler and moved the difference by up to 0.06
#   delivery   one-way minus send
#   round trip roundtrip: ping-pong between two LoopThreads (n = 5,000 and 10,000)
#   request    request: sendRequest from a thread to a LoopThread's port
#   typed      request-typed: the same with a typed request and reply
# SEND_N, ONEWAY_N and ROUNDTRIP_N set n for each (800, 10000, 5000).
# Raw libzmq's own count is shown beside one-way (PUSH/PULL) and the round
# trip (PAIR): libzmq copies a message over 33 bytes into one malloc'd
# buffer on send (zmq_send), and receiving into a buffer allocates nothing.
# Takes about a minute.
set -euo pipefail

limit_send=1
limit_delivery=0
limit_roundtrip=2
limit_request=3
limit_typed=56
while [[ $# -gt 0 ]]; do
    case "$1" in
        --send) limit_send="$2"; shift 2 ;;
        --delivery) limit_delivery="$2"; shift 2 ;;
        --roundtrip) limit_roundtrip="$2"; shift 2 ;;
        --request) limit_request="$2"; shift 2 ;;
        --typed) limit_typed="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

source "$(dirname "${BASH_SOURCE[0]}")/valgrind-common.sh"

SEND_N="${SEND_N:-800}"
ONEWAY_N="${ONEWAY_N:-10000}"
ROUNDTRIP_N="${ROUNDTRIP_N:-5000}"
(( 2 * SEND_N < 2000 )) || { echo "SEND_N must stay below 1,000: the port's queue holds 2,000" >&2; exit 2; }

# Heap allocations of the whole process in one run.
allocations() {
    local name="$1" count="$2"
    run_workload "$name" "$count" --tool=memcheck --undef-value-errors=no --leak-check=no
    local total
    total="$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' "$WORK/$name.$count.log" | tr -d ,)"
    [[ -n "$total" ]] || { echo "no 'total heap usage' line in $WORK/$name.$count.log" >&2; exit 1; }
    echo "$total"
}

# Allocations per message of workload $1 at n = $2 and 2n, two decimals.
per() {
    local a b
    a="$(allocations "$1" "$2")"
    b="$(allocations "$1" $((2 * $2)))"
    echo "  $1: A($2)=$a A($((2 * $2)))=$b" >&2
    per_message "$a" "$b" "$2" $((2 * $2)) 2
}

echo "memcheck: send path, one-way, round trip, request, typed request; raw libzmq beside…" >&2
send="$(per send-only "$SEND_N")"
oneway="$(per oneway "$ONEWAY_N")"
oneway_raw="$(per oneway-raw "$ONEWAY_N")"
roundtrip="$(per roundtrip "$ROUNDTRIP_N")"
roundtrip_raw="$(per roundtrip-raw "$ROUNDTRIP_N")"
request="$(per request "$ROUNDTRIP_N")"
request_raw="$(per request-raw "$ROUNDTRIP_N")"
typed="$(per request-typed "$ROUNDTRIP_N")"
delivery="$(awk -v a="$oneway" -v b="$send" 'BEGIN { printf "%.2f", a - b }')"

status=0
# verdict VALUE LIMIT: "ok" or "OVER" (more than 0.05 over).
verdict() {
    if awk -v v="$1" -v l="$2" 'BEGIN { exit !(v + 0 <= l + 0.05) }'; then
        echo "ok"
    else
        echo "OVER"
    fi
}
row() {
    local what="$1" unit="$2" ours="$3" raw="$4" limit="$5"
    local result="-"
    if [[ "$limit" != "-" ]]; then
        result="$(verdict "$ours" "$limit")"
        [[ "$result" == ok ]] || status=1
    fi
    printf '%-22s %-19s %10s %12s %7s  %s\n' "$what" "$unit" "$ours" "$raw" "$limit" "$result"
}

echo
echo "heap allocations per message (memcheck, whole process; (A(2n) - A(n)) / n; CPU $CPU)"
printf '%-22s %-19s %10s %12s %7s  %s\n' "path" "unit" "RunLoopKit" "raw libzmq" "limit" "verdict"
row "send" "allocs/send" "$send" "-" "$limit_send"
row "delivery" "allocs/message" "$delivery" "-" "$limit_delivery"
row "one-way, send+deliver" "allocs/message" "$oneway" "$oneway_raw" "-"
row "round trip" "allocs/round trip" "$roundtrip" "$roundtrip_raw" "$limit_roundtrip"
row "sendRequest" "allocs/round trip" "$request" "$request_raw" "$limit_request"
row "typed sendRequest" "allocs/round trip" "$typed" "-" "$limit_typed"
echo "raw libzmq: PUSH/PULL beside one-way, PAIR beside the round trip, REQ/REP beside sendRequest"
if [[ $status -ne 0 ]]; then
    echo "allocations grew past a limit (OVER above)" >&2
fi
exit $status
