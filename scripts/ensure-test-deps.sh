#!/usr/bin/env bash
# What the test suite needs beyond the build (sourced by test.sh and asan.sh):
# headless Chromium from Debian's packages, which lays out and photographs
# portsniff's timeline (SnifferTimelineTests). Installed with apt-get when
# missing and we are root (or have sudo); otherwise the suite says what to
# run, since a test that cannot run is not a test that passed.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo"
    else
        echo "error: the timeline tests need Chromium. Run: sudo apt-get update && sudo apt-get install -y chromium" >&2
        exit 1
    fi
    echo "installing Chromium for the timeline tests: ${SUDO:+sudo }apt-get install -y chromium" >&2
    { $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium; } >&2
fi

# The tests across machines make hosts of network namespaces (TCPHostsTests, PortActorSystemHostsTests):
# iproute2 (ip netns, veth, bridge) and util-linux (unshare). Installed when
# missing and we are root; without root they run over loopback and say so.
if [ "$(id -u)" -eq 0 ] && { ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; }; then
    echo "installing iproute2 and util-linux for the tests across machines" >&2
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y iproute2 util-linux; } >&2
fi

# The foreign peer over tcp (TCPForeignPeerTests) is Python with pyzmq from
# PyPI (its wheels have CURVE), in a virtual environment of the build
# directory: .build/foreign-peers. python3-venv from Debian's packages when
# `python3 -m venv` is missing (root only; otherwise the tests say what to run).
foreign_peers=.build/foreign-peers
if ! "$foreign_peers/bin/python3" -c 'import zmq, sys; sys.exit(0 if zmq.has("curve") else 1)' >/dev/null 2>&1; then
    if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
        if [ "$(id -u)" -eq 0 ]; then
            echo "installing python3-venv for the foreign tcp peer" >&2
            { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv; } >&2
        else
            echo "error: the foreign tcp peer needs python3-venv. Run: sudo apt-get update && sudo apt-get install -y python3-venv" >&2
            exit 1
        fi
    fi
    echo "installing pyzmq (PyPI) into $foreign_peers for the foreign tcp peer" >&2
    rm -rf "$foreign_peers"
    python3 -m venv "$foreign_peers" >&2
    "$foreign_peers/bin/pip" install --quiet "pyzmq==27.3.0" >&2
fi
