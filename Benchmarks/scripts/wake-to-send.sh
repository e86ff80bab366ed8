#!/usr/bin/env bash
# Where a tcp round trip's time goes on each side, for RunLoopKit's loops
# and raw libzmq's peers in the same run (docs/performance.md, "Over tcp"):
# from the I/O thread's read of the connection to the loop's wake-up (its
# blocking wait returns), from there to the write that hands its send to
# libzmq's I/O thread, and from that write to the I/O thread's write to the
# connection. The tracepoints are recorded only for epoll_wait, poll, write,
# sendto and recvfrom, whose cost (about a microsecond each) adds a little
# to every figure, to ours and raw's alike.
#
#   Benchmarks/scripts/wake-to-send.sh                  # roundtrip-tcp, one pass
#   PLACEMENT=same Benchmarks/scripts/wake-to-send.sh
#
# Needs perf (Debian: linux-perf) and root, or a perf_event_paranoid that
# allows tracepoints.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=.build/release/rlk-bench
[ -x "$bench" ] || swift build -c release --product rlk-bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
filter='id == 1 || id == 7 || id == 44 || id == 45 || id == 232'
perf record -q -m 32M -o "$out/perf.data" \
    -e raw_syscalls:sys_enter --filter "$filter" -e raw_syscalls:sys_exit --filter "$filter" \
    "$bench" --quick --passes 1 --placement "${PLACEMENT:-cross}" --filter roundtrip-tcp \
    | grep -E '^(roundtrip-tcp|ports-behind)' || true
perf script --ns -i "$out/perf.data" -F comm,pid,tid,time,event,trace > "$out/trace.txt" 2>/dev/null
python3 scripts/wake-to-send.py "$out/trace.txt"
