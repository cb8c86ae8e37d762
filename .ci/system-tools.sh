#!/bin/sh
# Install the system programs the tests use when they are missing: the simulators Icarus
# Verilog and Verilator, and yosys-abc (in Debian's yosys package) for the formal checks'
# abc engine (PDR proofs and ABC's BMC; the Yosys from PyPI has no yosys-abc program).
missing=""
command -v iverilog  >/dev/null 2>&1 || missing="$missing iverilog"
command -v verilator >/dev/null 2>&1 || missing="$missing verilator"
command -v yosys-abc >/dev/null 2>&1 || missing="$missing yosys"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing$missing with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$missing \
        >/dev/null && exit 0
    echo "error: apt-get could not install$missing" >&2
    exit 1
fi
echo "error:$missing not found; install them (Debian/Ubuntu: sudo apt-get install -y$missing)" >&2
exit 1
