# Shared by instructions-per-message.sh and allocations-per-message.sh:
# builds rlk-bench in release, and makes a copy valgrind can read.
#
# Sourced, not run. Sets BENCH (the copy to run) and WORK (a temporary
# directory, removed at exit unless KEEP is set). Reads CPU (default 0):
# the whole valgrind process is pinned there with taskset, so that every
# run sees one CPU, like `rlk-bench --placement same`.

BENCHMARKS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CPU="${CPU:-0}"

need() {
    command -v "$1" >/dev/null 2>&1 || { echo "$(basename "$0"): needs $1 ($2)" >&2; exit 2; }
}
need valgrind "apt-get install -y valgrind"
need taskset "util-linux"
need strip "binutils"
need swift "export PATH=/opt/swift/usr/bin:\$PATH"

WORK="$(mktemp -d /tmp/rlk-valgrind-XXXXXX)"
if [[ -n "${KEEP:-}" ]]; then
    echo "keeping valgrind's output in $WORK" >&2
else
    trap 'rm -rf "$WORK"' EXIT
fi

echo "building rlk-bench (release)…" >&2
(cd "$BENCHMARKS_DIR" && swift build -c release --product rlk-bench >&2)
BIN_DIR="$(cd "$BENCHMARKS_DIR" && swift build -c release --show-bin-path)"

# Valgrind 3.19 (Debian 12) cannot read the DWARF 5 debug information the
# Swift toolchain writes ("unhandled dwarf2 abbrev form code 0x25", then
# "Possibly corrupted debuginfo file ... Giving up"). A copy without debug
# information runs; the symbol table stays, so callgrind_annotate still
# names functions.
BENCH="$WORK/rlk-bench"
cp "$BIN_DIR/rlk-bench" "$BENCH"
strip --strip-debug "$BENCH"

# Runs `valgrind <tool options> rlk-bench --workload NAME COUNT` on CPU $CPU;
# valgrind's report goes to $WORK/NAME.COUNT.log. Fails loudly if the
# workload does.
run_workload() {
    local name="$1" count="$2"
    shift 2
    local log="$WORK/$name.$count.log"
    if ! taskset -c "$CPU" valgrind "$@" --log-file="$log" "$BENCH" --workload "$name" "$count" 2>>"$log.stderr"; then
        echo "$(basename "$0"): workload $name $count failed:" >&2
        cat "$log.stderr" >&2
        tail -20 "$log" >&2
        exit 1
    fi
}

# (big - small) / (n_big - n_small), with `digits` decimals.
per_message() {
    awk -v a="$1" -v b="$2" -v na="$3" -v nb="$4" -v d="${5:-0}" 'BEGIN { printf "%.*f", d, (b - a) / (nb - na) }'
}

# a / b with two decimals.
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'
}
