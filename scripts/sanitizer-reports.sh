# Sourced by scripts/test.sh (ThreadSanitizer) and scripts/asan.sh
# (AddressSanitizer): every process a suite starts under a sanitizer, exit
# tests' children and spawned programs alike, writes its report to a file
# of its own (the sanitizer's log_path option, <path>.<program>.<pid>), so
# that a report is seen even from a child whose standard error a test reads
# for its own purposes, or whose failure (a race's exit status 66) is all
# its parent sees.

# Makes DIRECTORY empty and prints the options that send each process's
# report there (log_path, with the program's name in the file's).
#   export TSAN_OPTIONS="$(sanitizer_report_options .build/tsan/sanitizer-reports)..."
sanitizer_report_options() {
    rm -rf "$1"
    mkdir -p "$1"
    echo "log_path=$PWD/$1/report:log_exe_name=1"
}

# Prints every report file in DIRECTORY that holds a line matching PATTERN
# (a report, not only the suppressions a process used) and sets
# sanitizer_reports to how many did.
print_sanitizer_reports() {
    local directory=$1 pattern=$2 file
    sanitizer_reports=0
    for file in $(find "$directory" -type f | sort); do
        if grep -q "$pattern" "$file"; then
            echo "== $file"
            cat "$file"
            sanitizer_reports=$((sanitizer_reports + 1))
        fi
    done
}

# Exits when the run failed: with 1 when any process reported (the count
# print_sanitizer_reports set; WHAT names what they reported), else with
# STATUS, the suite's own, when it is not 0. SANITIZER names the run.
exit_if_sanitizer_run_failed() {
    local sanitizer=$1 what=$2 status=$3
    if [ "$sanitizer_reports" -ne 0 ]; then
        echo "error: $sanitizer_reports process(es) reported $what under $sanitizer (above)" >&2
        exit 1
    fi
    if [ "$status" -ne 0 ]; then
        echo "error: the suite failed under $sanitizer (swift test exited $status)" >&2
        exit "$status"
    fi
}
