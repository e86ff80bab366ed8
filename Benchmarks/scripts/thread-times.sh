#!/usr/bin/env bash
# Where a tcp round trip's time goes, thread by thread: the CPU time each
# thread of each contender runs a round trip, ours against raw libzmq's,
# read from the scheduler's switches (`perf record -e sched:sched_switch`)
# during a real run, not under valgrind (docs/performance.md, "Over tcp").
# On one CPU a round trip is the sum of these times; the times include
# the kernel's work on each thread's behalf (its system calls, the tcp
# stack, its wake-ups) and its cache misses, which instruction counts do
# not show.
#
#   Benchmarks/scripts/thread-times.sh                  # --placement same
#   PLACEMENT=cross Benchmarks/scripts/thread-times.sh
#
# Runs `rlk-bench --quick --passes 1 --filter roundtrip-tcp` (about a
# minute) under `perf record -a`, which needs root or
# kernel.perf_event_paranoid <= -1. Tracing each switch slows every
# contender alike by a few per cent. Rows, for each echo child: its loop
# (the main thread) and its libzmq I/O thread; then the ping threads.
# Round trips are counted as the echo loop's sleeps: it sleeps once a
# round trip, waiting for the next request.
set -euo pipefail
BENCHMARKS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLACEMENT="${PLACEMENT:-same}"
command -v perf >/dev/null 2>&1 || { echo "thread-times.sh: needs perf (apt-get install -y linux-perf)" >&2; exit 2; }
command -v python3 >/dev/null 2>&1 || { echo "thread-times.sh: needs python3" >&2; exit 2; }
export PATH=/opt/swift/usr/bin:$PATH

WORK="$(mktemp -d /tmp/rlk-thread-times-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
echo "building rlk-bench (release)…" >&2
(cd "$BENCHMARKS_DIR" && swift build -c release --product rlk-bench >&2)
BENCH="$(cd "$BENCHMARKS_DIR" && swift build -c release --show-bin-path)/rlk-bench"

echo "running the tcp round trips under perf (about a minute)…" >&2
perf record -q -e sched:sched_switch -a -o "$WORK/perf.data" -- \
    "$BENCH" --quick --passes 1 --placement "$PLACEMENT" --filter roundtrip-tcp > "$WORK/run.log" 2>&1 \
    || { tail -20 "$WORK/run.log" >&2; exit 1; }
grep -E '^roundtrip-tcp(-plain)? +µs' "$WORK/run.log" | awk '{print "rlk-bench said: " $1 " ours " $3 " µs, raw " $5 " µs, " $7}'
perf script -i "$WORK/perf.data" -F pid,tid,time,trace > "$WORK/switches.txt" 2>/dev/null

python3 - "$WORK/switches.txt" <<'PY'
import collections, re, sys
switch = re.compile(r'\s*(\d+)/(\d+)\s+([\d.]+):\s+prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ '
                    r'prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
ran = collections.Counter()      # seconds on a CPU, by thread
sleeps = collections.Counter()   # voluntary switches out, by thread
since, name, process, first = {}, {}, {}, {}
for line in open(sys.argv[1]):
    m = switch.match(line)
    if not m: continue
    pid, time, out, state, into = int(m.group(1)), float(m.group(3)), int(m.group(5)), m.group(6), int(m.group(8))
    process[out] = pid
    name[out], name[into] = m.group(4), m.group(7)
    first.setdefault(out, time)
    if out in since: ran[out] += time - since.pop(out)
    if state.startswith('S'): sleeps[out] += 1
    since[into] = time

threads = collections.defaultdict(list)
for tid, pid in process.items(): threads[pid].append(tid)
def io_threads(pid): return [t for t in threads[pid] if name.get(t, '').startswith('ZMQbg/IO')]
# The echo children: processes of their own with a libzmq I/O thread; ours
# also run RunLoopKit's network thread. Each contender starts its child in
# the scenario's order: CURVE, then plain text, then ours with 1,000 ports.
children = sorted((pid for pid in threads if name.get(pid) == 'exe' and io_threads(pid) and sleeps[pid] > 1000),
                  key=lambda pid: first.get(pid, 0))
ours = [pid for pid in children if any(name.get(t) == 'RunLoopKit.net' for t in threads[pid])]
raw = [pid for pid in children if pid not in ours]
labels = dict(zip(ours, ['ours, CURVE', 'ours, plain', 'ours, 1,000 ports']))
labels.update(zip(raw, ['raw, CURVE', 'raw, plain']))
print('\n%-20s %10s %12s %10s' % ('echo child', 'loop µs', 'I/O µs', 'trips'))
for pid in children:
    trips = sleeps[pid]
    io = sum(ran[t] for t in io_threads(pid))
    print('%-20s %10.1f %12.1f %10d' % (labels[pid], ran[pid] / trips * 1e6, io / trips * 1e6, trips))
trips = max(sleeps[pid] for pid in children)
pings = sorted((t for t in name if name[t] == 'bench-ping' and ran[t] > 0), key=lambda t: first.get(t, 0))
print('\n%-34s %10s' % ('ping thread', 'µs a trip'))
for label, tid in zip(['ours, CURVE', 'ours, plain', 'ours, 1,000 ports'], pings):
    print('%-34s %10.1f' % (label, ran[tid] / trips * 1e6))
main = [t for t in name if name[t] == 'rlk-bench' and t == process.get(t) and ran[t] > 0]
for tid in main:
    print('%-34s %10.1f' % ('raw, CURVE and plain (main thread)', ran[tid] / trips / 2 * 1e6))
PY
