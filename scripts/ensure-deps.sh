#!/usr/bin/env bash
# Makes sure what RunLoopKit needs is on this machine: the Swift toolchain and
# libzmq's headers (Debian/Ubuntu: libzmq3-dev, found through pkg-config).
# Installs libzmq3-dev with apt-get when it is missing and we are allowed to;
# otherwise says exactly what to run. Sourced by demo.sh and test.sh.
set -euo pipefail

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
if ! command -v swift >/dev/null 2>&1; then
    echo "error: no Swift toolchain on PATH. Install Swift 6.0 or later (https://www.swift.org/install/linux/) and re-run." >&2
    exit 1
fi

if ! { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libzmq; }; then
    echo "libzmq3-dev (libzmq's headers, found through pkg-config) is missing." >&2
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: no apt-get here. Install libzmq's development files (headers, libzmq.pc) and pkg-config with your package manager, then re-run." >&2
        exit 1
    fi
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo"
    else
        echo "error: installing libzmq3-dev needs root. Run: sudo apt-get update && sudo apt-get install -y libzmq3-dev pkg-config" >&2
        exit 1
    fi
    echo "installing it: ${SUDO:+sudo }apt-get install -y libzmq3-dev pkg-config" >&2
    if ! { $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y libzmq3-dev pkg-config; } >&2; then
        echo "error: apt-get could not install libzmq3-dev. Check the network and apt sources, then run: apt-get install -y libzmq3-dev pkg-config" >&2
        exit 1
    fi
fi
