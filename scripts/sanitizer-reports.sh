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
