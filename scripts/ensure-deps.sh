#!/usr/bin/env bash
# Makes sure what RunLoopKit needs is on this machine: the Swift toolchain and
# libzmq's header and library (Debian/Ubuntu: libzmq3-dev) in the default paths.
# Installs libzmq3-dev with apt-get when it is missing and we are allowed to;
# otherwise says exactly what to run. Sourced by demo.sh and test.sh.
set -euo pipefail

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
if ! command -v swift >/dev/null 2>&1; then
    echo "error: no Swift toolchain on PATH. Install Swift 6.2 or later (https://www.swift.org/install/linux/) and re-run." >&2
    exit 1
fi

# The build finds zmq.h on the default include path (Package.swift says why
# not through pkg-config); RLK_ZMQ_INCLUDE names another directory to accept.
zmq_header_found() {
    local dir
    for dir in ${RLK_ZMQ_INCLUDE:-} /usr/include /usr/local/include; do
        [ -f "$dir/zmq.h" ] && return 0
    done
    return 1
}
if ! zmq_header_found; then
    echo "libzmq3-dev (libzmq's header zmq.h and libzmq.so) is missing." >&2
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: no apt-get here. Install libzmq's development files (zmq.h, libzmq.so) with your package manager, then re-run." >&2
        exit 1
    fi
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo"
    else
        echo "error: installing libzmq3-dev needs root. Run: sudo apt-get update && sudo apt-get install -y libzmq3-dev" >&2
        exit 1
    fi
    echo "installing it: ${SUDO:+sudo }apt-get install -y libzmq3-dev" >&2
    if ! { $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y libzmq3-dev; } >&2; then
        echo "error: apt-get could not install libzmq3-dev. Check the network and apt sources, then run: apt-get install -y libzmq3-dev" >&2
        exit 1
    fi
fi

# The tests run foreign peers written in Python (Tests/ForeignPeers), with
# its standard library only.
if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 is missing (the tests' foreign peers need it)." >&2
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y python3 >&2
    else
        echo "error: install python3 (Debian: sudo apt-get install -y python3), then re-run." >&2
        exit 1
    fi
fi
