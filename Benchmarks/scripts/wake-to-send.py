#!/usr/bin/env python3
"""Reads `perf script --ns -F comm,tid,time,event,trace` of the raw_syscalls
tracepoints (wake-to-send.sh records them) and prints, for each thread that
waits and sends in turn, the median time from the end of its blocking wait
(epoll_wait or poll with a timeout) to the start of the write that follows it
(libzmq's signal to its I/O thread: the send), and from that write to its
next blocking wait. A thread that waits in epoll_wait is a RunLoopKit loop;
one that waits in poll is raw libzmq (docs/performance.md, "Over tcp")."""
import collections
import statistics
import sys

EPOLL_WAIT, POLL, WRITE = 232, 7, 1


def blocking(number, args):
    if number == EPOLL_WAIT:
        timeout = int(args[3], 16)
        return timeout >= 0x80000000 or timeout > 0  # -1, or a timeout of its own
    if number == POLL:
        return int(args[2], 16) != 0
    return False


def main(path, minimum=5000):
    entered = {}
    woke = {}
    waits = collections.Counter()
    to_send = collections.defaultdict(list)
    after_send = collections.defaultdict(list)
    sent = {}
    names = {}
    for line in open(path):
        fields = line.split()
        if len(fields) < 5:
            continue
        name, tid, time, event = fields[0], fields[1], float(fields[2].rstrip(":")), fields[3]
        names[tid] = name
        if event.startswith("raw_syscalls:sys_enter"):
            number = int(fields[5])
            args = line.split("(", 1)[1].split(")", 1)[0].split(", ")
            is_blocking = blocking(number, args)
            entered[tid] = (number, is_blocking)
            if number == WRITE and woke.get(tid) is not None:
                to_send[tid].append(time - woke[tid])
                woke[tid] = None
            if is_blocking and sent.get(tid) is not None:
                after_send[tid].append(time - sent[tid])
                sent[tid] = None
        elif tid in entered:
            number, is_blocking = entered.pop(tid)
            if is_blocking:
                woke[tid] = time
                waits[(tid, number)] += 1
            if number == WRITE:
                sent[tid] = time
    print(f"{'thread':<24} {'waits in':<11} {'round trips':>11} {'wake to send':>13} {'send to wait':>13}")
    for tid, samples in sorted(to_send.items(), key=lambda item: names[item[0]]):
        # libzmq's own I/O threads wait and write too: not a side's loop.
        if len(samples) < minimum or names[tid].startswith("ZMQbg"):
            continue
        kind = "epoll_wait" if waits[(tid, EPOLL_WAIT)] > waits[(tid, POLL)] else "poll"
        after = after_send.get(tid) or [0]
        print(f"{names[tid] + ' ' + tid:<24} {kind:<11} {len(samples):>11} "
              f"{statistics.median(samples) * 1e6:>10.2f} us {statistics.median(after) * 1e6:>10.2f} us")


if __name__ == "__main__":
    main(sys.argv[1])
