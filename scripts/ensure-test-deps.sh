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

# The tests across machines make hosts of network namespaces (TCPHostsTests):
# iproute2 (ip netns, veth, bridge) and util-linux (unshare). Installed when
# missing and we are root; without root they run over loopback and say so.
if [ "$(id -u)" -eq 0 ] && { ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; }; then
    echo "installing iproute2 and util-linux for the tests across machines" >&2
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y iproute2 util-linux; } >&2
fi
