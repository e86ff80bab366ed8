#!/usr/bin/env bash
# Runs a test command with a time limit, so that a hung suite fails with a
# diagnosis instead of running until CI gives up (sourced by test.sh and
# asan.sh):
#   run_with_watchdog LABEL COMMAND...
# The limit is RLK_TEST_TIME_LIMIT seconds (default 1500: the slowest run,
# under a sanitizer, takes about 5 minutes here). When it passes, the
# watchdog prints the tests that started and did not end, then every
# process under the command (its threads' names, states and kernel wait
# channels, and their stacks from gdb when gdb is installed), then kills
# them all and returns 124. docs/contributing.md, "A hung test run".

run_with_watchdog() {
    local label=$1
    shift
    local limit=${RLK_TEST_TIME_LIMIT:-1500}
    local log
    log=$(mktemp "/tmp/rlk-test-log-XXXXXX")
    # The output is copied to a file for the list of unended tests.
    "$@" > >(tee "$log") 2>&1 &
    local pid=$!
    local waited=0 status
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$waited" -ge "$limit" ]; then
            echo "error: $label did not end within $limit s (RLK_TEST_TIME_LIMIT); what was running:" >&2
            local tree
            tree=$(watchdog_tree "$pid")
            watchdog_report "$log" $tree >&2
            kill -TERM $tree 2>/dev/null || true
            sleep 5
            kill -KILL $tree 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            rm -f "$log"
            return 124
        fi
        sleep 1
        waited=$((waited + 1))
    done
    wait "$pid" && status=0 || status=$?
    rm -f "$log"
    return "$status"
}

# `root` and every process under it.
watchdog_tree() {
    local pids=$1 frontier=$1 next
    while [ -n "$frontier" ]; do
        next=$(ps -eo pid=,ppid= | awk -v parents=" $frontier " 'index(parents, " " $2 " ") { print $1 }' | tr '\n' ' ')
        pids="$pids $next"
        frontier=$(echo $next)
    done
    echo $pids
}

# The tests that started and did not end (from Swift Testing's output in
# `log`), and each of the processes given.
watchdog_report() {
    local log=$1
    shift
    echo "== tests started and not ended"
    python3 - "$log" <<'EOF' || true
import re, sys
started, ended = [], set()
for line in open(sys.argv[1], errors="replace"):
    found = re.search(r'Test "(.*)" started\.', line) or re.search(r'Test (\S+\(.*\)) started\.', line)
    if found and "Test case passing" not in line:
        started.append(found.group(1))
        continue
    found = re.search(r'Test "(.*)" (passed|failed|skipped)', line) or re.search(r'Test (\S+\(.*\)) (passed|failed|skipped)', line)
    if found:
        ended.add(found.group(1))
for name in started:
    if name not in ended:
        print("  " + name)
EOF
    for pid in "$@"; do
        [ -d "/proc/$pid" ] || continue
        echo "== process $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
        for task in /proc/"$pid"/task/*; do
            local tid=${task##*/}
            local state
            state=$(awk '{ print $3 }' "$task/stat" 2>/dev/null)
            echo "   thread $tid $(cat "$task/comm" 2>/dev/null): state $state, waiting in $(cat "$task/wchan" 2>/dev/null)"
        done
        if command -v gdb >/dev/null 2>&1; then
            timeout 120 gdb -p "$pid" -batch -nx -ex "set pagination off" -ex "thread apply all bt 30" 2>/dev/null \
                | grep -E "^(Thread|#)" | cut -c1-240 || true
        fi
    done
}
