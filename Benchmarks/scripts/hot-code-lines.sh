#!/usr/bin/env bash
# The code a tcp round trip runs, in cache lines: for each side's loop,
# ours and raw libzmq's, the distinct 64-byte lines of machine code whose
# instructions run at least once a round trip (docs/performance.md, "Over
# tcp"). A side sleeps between messages and wakes to caches the other
# threads and processes filled, so it fetches its code again at every
# message: on a shared host, each line costs far more than its
# instructions. Counted with callgrind, so it repeats exactly.
#
#   Benchmarks/scripts/hot-code-lines.sh          # a table per loop
#   TOP=30 Benchmarks/scripts/hot-code-lines.sh   # and its 30 largest functions
#   KEEP=1 …                                      # keep the callgrind.out files
#
# Runs `rlk-bench --quick --passes 1 --filter roundtrip-tcp` under
# callgrind (--dump-instr, a file a thread, children traced), collecting
# only inside the loops that carry the round trips: RunLoopKit's run loop
# passes (ours, both processes) and raw libzmq's ping and echo functions.
# A line is hot when its instructions ran at least 0.9 times the round
# trips of the run (each contender makes the same number). libzmq's I/O
# threads are the same code on both sides and are not counted.
# Takes about seven minutes on a 2-core VM, which must be otherwise idle:
# under valgrind, a child that starts slowly fails the run's set-up.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/valgrind-common.sh"
need callgrind_annotate "valgrind"
need python3 "apt-get install -y python3"

TOP="${TOP:-0}"
echo "running the tcp round trips under callgrind (about five minutes)…" >&2
RLK_BENCH_EXE="$BENCH" taskset -c "$CPU" valgrind --tool=callgrind --dump-instr=yes --dump-line=no \
    --separate-threads=yes --trace-children=yes --collect-atstart=no \
    --toggle-collect='*RunLoop*runPasses*' --toggle-collect=bench_zmq_tcp_child_serve \
    --toggle-collect=bench_zmq_tcp_link_pingpong \
    --callgrind-out-file="$WORK/cg.%p" "$BENCH" --quick --passes 1 --filter roundtrip-tcp \
    > "$WORK/run.log" 2>&1 || { tail -20 "$WORK/run.log" >&2; exit 1; }

python3 - "$WORK" "$TOP" <<'PY'
import collections, glob, re, sys
work, top = sys.argv[1], int(sys.argv[2])

def read(path):
    """Instructions run per code address, and each address's object and function."""
    names = {'ob': {}, 'fn': {}}
    counts, owner = collections.Counter(), {}
    ob = fn = None
    last, skip = 0, False
    def name(kind, text):
        m = re.match(r'\((\d+)\)(?: (.*))?', text)
        if not m: return text
        if m.group(2) is not None: names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), text)
    for line in open(path, errors='replace'):
        if line.startswith('ob='): ob = name('ob', line[3:].strip()); continue
        if line.startswith('fn='): fn = name('fn', line[3:].strip()); continue
        if line.startswith('cob='): name('ob', line[4:].strip()); continue
        if line.startswith('cfn='): name('fn', line[4:].strip()); continue
        if line.startswith('calls='): skip = True; continue
        if not line[:1] or not (line[0].isdigit() or line[0] in '+-*'): continue
        parts = line.split()
        position = parts[0]
        if position.startswith('0x'): address = int(position, 16)
        elif position[0] == '+': address = last + int(position[1:], 0)
        elif position[0] == '-': address = last - int(position[1:], 0)
        elif position == '*': address = last
        else: address = int(position, 0)
        last = address
        if skip:  # the cost line of a call: inclusive, not this address's own
            skip = False
            continue
        counts[address] += int(parts[1]) if len(parts) > 1 else 0
        owner[address] = (ob or '?', fn or '?')
    return counts, owner

def command(path):
    for line in open(path, errors='replace'):
        if line.startswith('cmd:'): return line[4:].strip()
    return ''

files = sorted(f for f in glob.glob(work + '/cg.*') if re.search(r'-\d+$', f))
threads = []
for path in files:
    counts, owner = read(path)
    if sum(counts.values()) > 0: threads.append((path, command(path), counts, owner))

def who(cmd, owner):
    if '--child zmq-tcp-peer' in cmd: return 'raw echo (%s)' % cmd.split()[-1]
    if '--child rlk-peer' in cmd:
        parts = cmd.split()
        return 'our echo (%s, %s port%s)' % (parts[-2], parts[-1], '' if parts[-1] == '1' else 's')
    if any(fn == 'bench_zmq_tcp_link_pingpong' for _, fn in owner.values()): return 'raw ping (curve, then plain)'
    return 'our ping (curve, plain, spread: in turn)'

# Round trips: raw's echo sends two frames a round trip (the routing id
# and the reply), so zmq_send's first instruction runs twice a round trip.
def round_trips():
    for path, cmd, counts, owner in threads:
        if '--child zmq-tcp-peer' not in cmd: continue
        entry = min((a for a in counts if owner[a][1] == 'zmq_send'), default=None)
        if entry is not None: return counts[entry] // 2
    sys.exit('no raw echo found in the run')
trips = round_trips()
threshold = int(trips * 0.9)
print('round trips a contender: %d; a line is hot when run >= %d times\n' % (trips, threshold))
print('%-42s %6s %6s   by object' % ('loop', 'lines', 'KiB'))
for path, cmd, counts, owner in threads:
    hot = {a for a, n in counts.items() if n >= threshold}
    lines = {}
    for a in hot: lines.setdefault(a >> 6, owner[a])
    # Other loops of a process (a child's main loop, say) run a few passes.
    if len(lines) < 100: continue
    objects = collections.Counter(ob.split('/')[-1] for ob, _ in lines.values())
    split = ', '.join('%s %d' % (o, n) for o, n in objects.most_common())
    print('%-42s %6d %6d   %s' % (who(cmd, owner), len(lines), len(lines) * 64 // 1024, split))
    if top:
        functions = collections.Counter(fn for _, fn in lines.values())
        for fn, n in functions.most_common(top): print('      %4d  %s' % (n, fn[:140]))
PY
