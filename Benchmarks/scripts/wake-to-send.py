#!/usr/bin/env python3
"""Reads `perf script --ns -F comm,pid,tid,time,event,trace` of the
raw_syscalls tracepoints (wake-to-send.sh records them) and
prints, for each thread that waits and sends in turn (a side's loop), the
medians of a side's path through its own process (docs/performance.md,
"Over tcp"):

- read to wake: from its I/O thread's read of the connection (`recvfrom`)
  to the end of the loop's blocking wait (epoll_wait, or poll with a
  timeout);
- wake to send: from there to the write that hands its send to the I/O
  thread (libzmq's signal);
- send to write: from that write to the I/O thread's write to the
  connection (`sendto`);
- send to wait: from that write to the loop's next blocking wait.

A thread that waits in epoll_wait is a RunLoopKit loop; one that waits in
poll is raw libzmq. libzmq's I/O threads are named ZMQbg/IO/n."""
import collections
import re
import statistics
import sys

WRITE, POLL, SENDTO, RECVFROM, EPOLL_WAIT = 1, 7, 44, 45, 232
LINE = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+):\s+(.*)")


def blocking(number, args):
    if number == EPOLL_WAIT:
        timeout = int(args[3], 16)
        return timeout >= 0x80000000 or timeout > 0  # -1, or a timeout of its own
    if number == POLL:
        return int(args[2], 16) != 0
    return False


def median_us(samples):
    return statistics.median(samples) * 1e6 if samples else float("nan")


def main(path, minimum=5000):
    names, process = {}, {}
    entered = {}
    woke, sent = {}, {}
    waits = collections.Counter()
    last_read = {}            # process: when its I/O thread last read the connection
    awaiting_write = {}       # process: (when its loop sent, the loop)
    read_to_wake = collections.defaultdict(list)
    to_send = collections.defaultdict(list)
    send_to_write = collections.defaultdict(list)
    after_send = collections.defaultdict(list)
    for line in open(path):
        match = LINE.match(line)
        if not match:
            continue
        name, pid, tid, time, event, trace = match.groups()
        time = float(time)
        names[tid], process[tid] = name, pid
        is_io = name.startswith("ZMQbg/IO")
        if event.startswith("raw_syscalls:sys_enter"):
            number = int(trace.split()[1])
            args = trace.split("(", 1)[1].split(")", 1)[0].split(", ")
            if is_io:
                if number == RECVFROM:
                    last_read[pid] = time
                elif number == SENDTO and pid in awaiting_write:
                    sent_at, loop = awaiting_write.pop(pid)
                    send_to_write[loop].append(time - sent_at)
                continue
            is_blocking = blocking(number, args)
            entered[tid] = (number, is_blocking)
            if number == WRITE and int(args[2], 16) == 8 and woke.get(tid) is not None:
                to_send[tid].append(time - woke[tid])
                woke[tid] = None
                awaiting_write[pid] = (time, tid)
            if is_blocking and sent.get(tid) is not None:
                after_send[tid].append(time - sent[tid])
                sent[tid] = None
        elif tid in entered:
            number, is_blocking = entered.pop(tid)
            if is_blocking:
                woke[tid] = time
                waits[(tid, number)] += 1
                if last_read.get(pid) is not None:
                    read_to_wake[tid].append(time - last_read.pop(pid))
            if number == WRITE:
                sent[tid] = time
    print(f"{'thread':<22} {'waits in':<11} {'trips':>6} {'read to wake':>13} {'wake to send':>13}"
          f" {'send to write':>14} {'send to wait':>13}")
    for tid, samples in sorted(to_send.items(), key=lambda item: (names[item[0]], item[0])):
        if len(samples) < minimum:
            continue
        kind = "epoll_wait" if waits[(tid, EPOLL_WAIT)] > waits[(tid, POLL)] else "poll"
        print(f"{names[tid] + ' ' + tid:<22} {kind:<11} {len(samples):>6} "
              f"{median_us(read_to_wake[tid]):>10.2f} us {median_us(samples):>10.2f} us "
              f"{median_us(send_to_write[tid]):>11.2f} us {median_us(after_send[tid]):>10.2f} us")


if __name__ == "__main__":
    main(sys.argv[1])
