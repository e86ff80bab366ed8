#!/usr/bin/env python3
"""Looks a RunLoopKit port name up as a program in another language would,
following docs/wire-format.md ("Looking a name up") step by step, with only
Python's standard library. Like RunLoopKit, it marks a holder it is the
first to find dead, and honours RUNLOOPKIT_DEAD_HOLDER_WINDOW.

    lookup_name.py DIRECTORY NAME COUNT [STOPFILE [PROGRESSFILE OWNPID]]

Looks NAME up COUNT times in DIRECTORY (the runtime directory) as fast as it
can, and on until STOPFILE exists if one is named (or its parent exits),
and prints one line per lookup:

    <start> held <pid> <start time> <port id> <ipc path>
    <start> free
    <start> died <pid>

<start> is CLOCK_MONOTONIC in nanoseconds when the lookup began, so that a
test can compare it with when a holder was killed. The test suite runs it
(NameLookupTests) while holders are registered, released and killed.

With PROGRESSFILE, every 1,000 lookups it replaces that file's one line,

    <lookups> <held> <distinct holders other than OWNPID> <died>

so that the test can wait until this reader has seen what it asks of it,
instead of asking a fixed time for it.
"""
import fcntl
import os
import struct
import sys
import time

MAGIC = b"RLKD"
DEATH_MARK = b"DIED"
DEATH_MARK_SIZE = 12
SETTLE_SECONDS = 0.1


def window_nanoseconds():
    """How long a death mark stands: 600 s, or RUNLOOPKIT_DEAD_HOLDER_WINDOW seconds."""
    try:
        seconds = float(os.environ.get("RUNLOOPKIT_DEAD_HOLDER_WINDOW", "600"))
    except ValueError:
        seconds = 600.0
    if not 0 <= seconds < 1e9:
        seconds = 600.0
    return int(seconds * 1e9)


WINDOW = window_nanoseconds()


def decode_name_file(data):
    """(descriptor, died_at) of a name file: exactly one descriptor, then at
    most one death mark (died_at None without one); None for anything else."""
    if len(data) < 8:
        return None
    fixed = 44 if data[4] == 2 else 28
    length = fixed + struct.unpack_from("<H", data, 6)[0]
    if len(data) == length + DEATH_MARK_SIZE:
        if data[length:length + 4] != DEATH_MARK:
            return None
        descriptor = decode_descriptor(data[:length])
        died_at = struct.unpack_from("<q", data, length + 4)[0]
        return (descriptor, died_at) if descriptor else None
    descriptor = decode_descriptor(data)
    return (descriptor, None) if descriptor else None


def mark_stands(died_at):
    """A mark stands while the clock is less than the window after it (or before it)."""
    age = time.clock_gettime_ns(time.CLOCK_REALTIME) - died_at
    return -WINDOW < age < WINDOW


def decode_descriptor(data):
    """The (pid, start time, port id, path) of exactly one descriptor, or None."""
    if len(data) < 28 or data[0:4] != MAGIC:
        return None
    version, transport, path_length = data[4], data[5], struct.unpack_from("<H", data, 6)[0]
    fixed = 28 if version == 1 else 44 if version == 2 else None
    if fixed is None or len(data) != fixed + path_length:
        return None
    if transport != 1 or not 1 <= path_length <= 107:
        return None  # a name always has an ipc path
    pid, start_time, port_id = struct.unpack_from("<iQQ", data, 8)
    try:
        path = data[fixed:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if pid <= 0 or not path.startswith("/") or "\0" in path:
        return None
    return pid, start_time, port_id, path


def stat_fields(pid):
    """The fields of /proc/<pid>/stat from the third (the state) on, counted after the last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return []
    return text[text.rindex(b")") + 1:].split()


def start_time_of(pid):
    """Field 22 of /proc/<pid>/stat."""
    fields = stat_fields(pid)
    return int(fields[19]) if len(fields) > 19 else None


def is_running(pid, start_time):
    """The process that wrote a descriptor still runs: same start time, not a zombie."""
    fields = stat_fields(pid)
    return len(fields) > 19 and int(fields[19]) == start_time and fields[0] not in (b"Z", b"X")


def exclusive_holder(st):
    """The pid holding an exclusive flock on the file whose stat is st."""
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    with open("/proc/locks", "rb") as locks:
        for line in locks:
            fields = line.split()
            if len(fields) < 6 or fields[1] != b"FLOCK" or fields[3] != b"WRITE":
                continue  # "->" lines (waiters) fail here too
            place = fields[5].split(b":")
            if len(place) == 3 and int(place[0], 16) == major and int(place[1], 16) == minor \
                    and int(place[2]) == st.st_ino:
                return int(fields[4])
    return None


def open_lock_file(lock_path, mode):
    """N.lock opened with O_NOFOLLOW, or None if it is missing (the name is free)."""
    try:
        return os.open(lock_path, mode | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None


def still_names(lock_path, st):
    """Whether lock_path still names the file whose stat is st (a sweep may have removed it)."""
    try:
        now = os.lstat(lock_path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def judge_unheld(data):
    """Step 2's judgement of a file nobody holds: ('free',), ('died', pid), or ('unmarked', pid)."""
    name_file = decode_name_file(data)
    if name_file is None:
        return ("free",)
    (pid, start_time, _, _), died_at = name_file
    if is_running(pid, start_time):
        return ("free",)  # not a holder that died
    if died_at is None:
        return ("unmarked", pid)
    return ("died", pid) if mark_stands(died_at) else ("free",)


def mark(lock_path):
    """Step 2's marking, by the first reader to find the holder dead: ('free',), ('died', pid) or ('settling',)."""
    fd = open_lock_file(lock_path, os.O_RDWR)
    if fd is None:
        return ("free",)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return ("settling",)
        if not still_names(lock_path, os.fstat(fd)):
            return ("settling",)  # a sweep removed it meanwhile
        data = os.pread(fd, 4096, 0)
        answer = judge_unheld(data)
        if answer[0] != "unmarked":
            return answer
        os.pwrite(fd, DEATH_MARK + struct.pack("<q", time.clock_gettime_ns(time.CLOCK_REALTIME)), len(data))
        return ("died", answer[1])
    finally:
        os.close(fd)  # unlocks


def look_once(lock_path):
    """One pass of steps 1 to 6: ('held', descriptor), ('free',), ('died', pid) or ('settling',)."""
    fd = open_lock_file(lock_path, os.O_RDONLY)
    if fd is None:
        return ("free",)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            data = os.pread(fd, 4096, 0)  # read under the shared lock
            fcntl.flock(fd, fcntl.LOCK_UN)
            answer = judge_unheld(data)
            return mark(lock_path) if answer[0] == "unmarked" else answer
        except BlockingIOError:
            pass
        st = os.fstat(fd)
        holder = exclusive_holder(st)
        if holder is None:
            return ("settling",)
        name_file = decode_name_file(os.pread(fd, 4096, 0))
        if name_file is None or name_file[1] is not None:
            return ("settling",)  # a live holder's file has no death mark
        recorded = name_file[0]
        if recorded[0] != holder or start_time_of(holder) != recorded[1]:
            return ("settling",)
        if exclusive_holder(st) != holder or not still_names(lock_path, st):
            return ("settling",)
        return ("held", recorded)
    finally:
        os.close(fd)


def lookup(lock_path):
    """Looks until the answer settles (100 ms at most, then not found), as RunLoopKit does."""
    settle_by = None
    while True:
        answer = look_once(lock_path)
        if answer[0] != "settling":
            return answer
        now = time.monotonic()
        settle_by = settle_by or now + SETTLE_SECONDS
        if now >= settle_by:
            # What the document says of a state that does not settle (a
            # registrant stopped, or descheduled, between its lock and its
            # write): not found.
            return ("free",)
        time.sleep(0.0002)


def main():
    directory, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    stop_file = sys.argv[4] if len(sys.argv) > 4 else None
    progress_file = sys.argv[5] if len(sys.argv) > 6 else None
    own_pid = int(sys.argv[6]) if len(sys.argv) > 6 else None
    lock_path = os.path.join(directory, name + ".lock")
    lines = []
    held, died, holders = 0, 0, set()

    def report_progress():
        """One line, replaced at once (a reader never sees half of it)."""
        partial = progress_file + ".partial"
        with open(partial, "w") as out:
            out.write(f"{len(lines)} {held} {len(holders)} {died}\n")
        os.replace(partial, progress_file)

    parent = os.getppid()

    def going_on(done):
        """At least COUNT lookups; then on until the stop file exists (looked for every 1,000),
        or until the test that started it is gone (this process was handed to another parent):
        a test killed before it made the stop file must not leave a reader spinning."""
        if done < count:
            return True
        if stop_file is None or done % 1000 != 0:
            return stop_file is not None
        return not os.path.exists(stop_file) and os.getppid() == parent

    while going_on(len(lines)):
        start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        answer = lookup(lock_path)
        if answer[0] == "held":
            pid, start_time, port_id, path = answer[1]
            lines.append(f"{start} held {pid} {start_time} {port_id} {path}")
            held += 1
            if pid != own_pid:
                holders.add(pid)
        elif answer[0] == "died":
            lines.append(f"{start} died {answer[1]}")
            died += 1
        else:
            lines.append(f"{start} {answer[0]}")
        if progress_file is not None and len(lines) % 1000 == 0:
            report_progress()
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
