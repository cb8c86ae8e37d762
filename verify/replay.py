"""Replay a recorded traffic on the emitted Verilog of a packet fabric, in Icarus Verilog.

The model's lockstep tests (``tests/test_model.py``) compare the fast model with the RTL on a
traffic drawn up front: each PE's queue of requests, offered from their cycle on and taken
when the port is ready, and a pattern of eject-port readiness. :func:`replay` runs that
traffic on the Verilog that :func:`ihcube.generate.fabric_verilog` writes, under a Verilog
testbench that it generates (no Python in the simulation loop: Icarus runs a 32-node fabric's
2,000 cycles in seconds, where Amaranth's simulator takes minutes), and returns the same
events as the Amaranth testbench of those tests: every injection, every hop (a handshake on a
router's link output) and every delivery, with its cycle.

The testbench sets every PE input of a cycle, lets the design settle, records the handshakes
of the cycle, then raises the clock: the order of the Amaranth testbench, so the two record
the same events when the Verilog is the Amaranth design (``tests/test_model.py`` checks that
on small fabrics). Reset is never asserted: the registers start from their initial values, as
in Amaranth's simulator. The testbench (:func:`testbench`) and the run (:func:`run_testbench`)
serve the wormhole fabric's replay too (:mod:`ihcube.verify.wormhole_replay`).

:func:`replay_packets` runs requests as :class:`~ihcube.verify.harness.FabricHarness` does
(its eject readiness draws, its end of a run) and returns its records, for the scoreboard
(``tests/test_fabric.py``'s ``run_fabric`` uses it for its large fabrics).
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import topology
from ..generate import fabric_verilog
from ..rtl import Kind, inject_layout, message_layout
from ..spec import as_spec
from .harness import Delivery, Hop, Message, accepts

__all__ = ["replay", "replay_packets", "Packets", "testbench", "run_testbench"]

#: Icarus's language generation: Verilog-2005, so that a register's initial value is an
#: event for the ``always @*`` blocks of Yosys's output (:data:`.cocotb_runner.BUILD_ARGS`).
LANGUAGE = "-g2005"
#: The fields of a message, in the order of the events.
FIELDS = ("dest", "src", "kind", "travel", "payload")


def _port(node, p, ports):
    """The top module's name stem of PE port ``p`` of ``node``."""
    return f"{node}" if ports == 1 else f"{node}__{p}"


def testbench(top, stems, inject_width, eject_width, cycles, counts, watch, finish,
              quiet=None, idle=None, expected=None):
    """The Verilog testbench of a replay: reads ``requests.hex`` (each queue's words, queue
    after queue, and ``request_cycles.hex`` the cycle from which each is offered) and
    ``eject_ready.hex``, and writes ``events.txt``.

    ``stems`` names each queue's PE port on the top module ``top`` (``inject__<stem>__valid``
    ...); ``counts`` is the number of words in each queue. Each cycle it sets every PE input,
    waits for the design to settle, writes the injection (``i cycle queue index``) and eject
    (``d cycle queue bits``) handshakes, runs the Verilog statements ``watch`` (which record
    the links' handshakes; ``out`` is the events file, ``cycle`` the cycle), then raises the
    clock; after the last cycle it runs ``finish``. With ``quiet``, the run ends early, once
    every queue is empty and nothing has moved for ``quiet`` cycles: no PE handshake and no
    link handshake (``watch`` sets ``moved`` to 1 on one). With ``idle``, the run ends as
    :meth:`~ihcube.verify.harness.FabricHarness.run` ends one: once ``expected`` deliveries
    were made (every queue is empty if ``expected`` is None) and, since then, ``idle`` cycles
    without a PE or link handshake passed. ``ran`` holds the cycles run, for ``finish``.
    """
    queues = len(stems)
    total = max(sum(counts), 1)
    lines = [
        "`timescale 1ns/1ps",
        "module replay_tb;",
        "  reg clk = 0;",
        "  reg rst = 0;",
        f"  reg [{inject_width - 1}:0] request_bits [0:{total - 1}];",
        f"  reg [31:0] request_cycle [0:{total - 1}];",
        f"  reg [{queues - 1}:0] eject_ready [0:{cycles - 1}];",
        "  integer out, cycle;",
        "  integer ran = 0, delivered = 0;",
    ]
    if quiet is not None or idle is not None:
        lines += ["  integer still = 0;", "  reg moved;"]
    for q in range(queues):
        lines += [f"  reg iv{q} = 0;", f"  reg [{inject_width - 1}:0] ip{q} = 0;",
                  f"  reg er{q} = 0;", f"  wire ir{q}, ev{q};",
                  f"  wire [{eject_width - 1}:0] ep{q};", f"  integer head{q};"]
    connections = [".clk(clk)", ".rst(rst)"]
    for q, stem in enumerate(stems):
        connections += [f".inject__{stem}__valid(iv{q})", f".inject__{stem}__payload(ip{q})",
                        f".inject__{stem}__ready(ir{q})", f".eject__{stem}__valid(ev{q})",
                        f".eject__{stem}__payload(ep{q})", f".eject__{stem}__ready(er{q})"]
    lines.append(f"  {top} dut ({', '.join(connections)});")
    lines += ["  initial begin",
              '    $readmemh("requests.hex", request_bits);',
              '    $readmemh("request_cycles.hex", request_cycle);',
              '    $readmemh("eject_ready.hex", eject_ready);',
              '    out = $fopen("events.txt", "w");']
    start = 0
    for q, count in enumerate(counts):
        lines.append(f"    head{q} = {start};")
        start += count
    lines.append(f"    for (cycle = 0; cycle < {cycles}; cycle = cycle + 1) begin")
    start = 0
    for q, count in enumerate(counts):
        end = start + count
        lines += [f"      if (head{q} < {end} && request_cycle[head{q}] <= cycle) begin",
                  f"        iv{q} = 1; ip{q} = request_bits[head{q}];",
                  f"      end else begin iv{q} = 0; ip{q} = 0; end",
                  f"      er{q} = eject_ready[cycle][{q}];"]
        start = end
    lines.append("      #1;")
    for q in range(queues):
        lines += [f"      if (iv{q} && ir{q}) begin",
                  f'        $fwrite(out, "i %0d %0d %0d\\n", cycle, {q}, head{q});',
                  f"        head{q} = head{q} + 1;",
                  "      end",
                  f"      if (ev{q} && er{q}) begin",
                  f'        $fwrite(out, "d %0d %0d %h\\n", cycle, {q}, ep{q});',
                  "        delivered = delivered + 1;",
                  "      end"]
    if quiet is not None or idle is not None:
        handshakes = " || ".join(f"iv{q} && ir{q} || ev{q} && er{q}" for q in range(queues))
        lines.append(f"      moved = {handshakes};")
    lines += watch
    lines += ["      #1 clk = 1;", "      #1 clk = 0;", "      ran = cycle + 1;"]
    ends = [sum(counts[:q + 1]) for q in range(queues)]
    empty = " && ".join(f"head{q} == {end}" for q, end in enumerate(ends))
    if quiet is not None:
        lines += ["      still = moved ? 0 : still + 1;",
                  f"      if (still >= {quiet} && {empty}) cycle = {cycles};"]
    if idle is not None:
        done = empty if expected is None else f"delivered >= {expected}"
        lines += [f"      still = ({done}) && !moved ? still + 1 : 0;",
                  f"      if (({done}) && still >= {idle}) cycle = {cycles};"]
    lines.append("    end")
    lines += finish
    lines += ["    $fclose(out);", "    $finish;", "  end", "endmodule", ""]
    return "\n".join(lines)


def run_testbench(text, bench, words, cycles, eject_ready, folder=None):
    """Run the testbench ``bench`` (:func:`testbench`) on the fabric Verilog ``text`` in
    Icarus, the queues' ``words`` (in the memory's order) offered from their ``cycles`` on and
    the eject ports ready as ``eject_ready`` says (a row per cycle, a column per queue); return
    the lines of ``events.txt``. ``folder`` keeps the files (a temporary folder if None)."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(folder or scratch)
        work.mkdir(parents=True, exist_ok=True)
        (work / "fabric.v").write_text(text)
        (work / "replay_tb.v").write_text(bench)
        (work / "requests.hex").write_text("".join(f"{word:x}\n" for word in words) or "0\n")
        (work / "request_cycles.hex").write_text("".join(f"{at:x}\n" for at in cycles)
                                                 or "0\n")
        (work / "eject_ready.hex").write_text("".join(
            f"{int(''.join(str(int(bit)) for bit in reversed(row)), 2):x}\n"
            for row in eject_ready))
        subprocess.run(["iverilog", LANGUAGE, "-s", "replay_tb", "-o", "replay.vvp",
                        "replay_tb.v", "fabric.v"], cwd=work, check=True,
                       capture_output=True, text=True)
        subprocess.run(["vvp", "-n", "replay.vvp"], cwd=work, check=True,
                       capture_output=True, text=True)
        return (work / "events.txt").read_text().splitlines()


def _bits(layout, **fields):
    """The bits of a value of the struct ``layout`` with these ``fields`` (plain integers),
    as ``layout.const(fields)`` gives them, without building a constant for each request."""
    bits = 0
    for name, value in fields.items():
        field = layout[name]
        bits |= (value & ((1 << field.width) - 1)) << field.offset
    return bits


def replay(spec, requests, eject_ready, router=None, folder=None):
    """Run ``requests`` (``(node, Request)`` pairs in queue order) on the emitted Verilog of
    the packet fabric ``spec`` for ``len(eject_ready)`` cycles, each eject port accepting as
    ``eject_ready`` (cycles x ``n * ports``, column ``node * ports + port``) says; ``router``
    builds the routers (a broken one for a negative control), as
    :func:`~ihcube.generate.fabric_verilog` takes it.

    Returns ``(events, refused_count)`` in the form of the Amaranth testbench of
    ``tests/test_model.py``: ``("inject", cycle, node, request index)``, ``("deliver", cycle,
    node, dest, src, kind, travel, payload, port)``, ``("hop", cycle, node, dim, dest, src,
    kind, travel, payload)``, and each node's ``refused_count`` at the end. ``folder`` keeps
    the testbench, the stimulus and the events (a temporary folder if None).
    """
    events, refused_count, _, _ = _replay(as_spec(spec), requests, eject_ready, router, folder)
    return events, refused_count


def _replay(spec, requests, eject_ready, router, folder, idle=None, expected=None, text=None):
    """:func:`replay`, with the end of :func:`testbench`'s ``idle`` and ``expected`` and the
    fabric's Verilog ``text`` if given; returns the events, each node's ``refused_count`` and
    ``refused`` at the end, and the cycles run."""
    n, P, cycles = spec.nodes, spec.ports, len(eject_ready)
    layout = message_layout(n, spec.payload_width)
    fields = [(layout[name].offset, layout[name].width) for name in FIELDS]
    injected = inject_layout(n, spec.payload_width)
    inject_width = injected.size
    eject_width = layout.size
    queues = [[] for _ in range(n * P)]
    for index, (node, request) in enumerate(requests):
        queues[node * P + request.port].append((index, request))
    counts = [len(queue) for queue in queues]
    order = [entry for queue in queues for entry in queue]  # the memory's order
    links = [(node, j, dim) for node in range(n) for j, dim in enumerate(topology.links(n, node))]
    if text is None:
        text = fabric_verilog(spec, router=router)
    watch = []
    for k, (node, j, _) in enumerate(links):
        port = f"dut.router{node}.links_out__{j}__"
        watch += [f"      if ({port}valid && {port}ready) begin",
                  f'        $fwrite(out, "h %0d {k} %h\\n", cycle, {port}payload);',
                  *(["        moved = 1;"] if idle is not None else []),
                  "      end"]
    finish = [f'    $fwrite(out, "r {node} %0d %0d\\n", dut.router{node}.refused_count, '
              f"dut.router{node}.refused);" for node in range(n)]
    finish.append('    $fwrite(out, "c %0d\\n", ran);')
    bench = testbench(spec.name, [_port(q // P, q % P, P) for q in range(n * P)],
                      inject_width, eject_width, cycles, counts, watch, finish,
                      idle=idle, expected=expected)
    words = [_bits(injected, dest=r.dest, kind=Kind(r.kind).value, payload=r.payload)
             for _, r in order]
    lines = run_testbench(text, bench, words, [r.at for _, r in order], eject_ready, folder)

    def message(bits):
        return tuple(bits >> offset & ((1 << width) - 1) for offset, width in fields)

    events, refused_count, refused, ran = [], [0] * n, [False] * n, 0
    for line in lines:
        kind, *values = line.split()
        if kind == "i":
            cycle, q, position = map(int, values)
            events.append(("inject", cycle, q // P, order[position][0]))
        elif kind == "d":
            cycle, q = int(values[0]), int(values[1])
            events.append(("deliver", cycle, q // P, *message(int(values[2], 16)), q % P))
        elif kind == "h":
            cycle, k = int(values[0]), int(values[1])
            node, _, dim = links[k]
            events.append(("hop", cycle, node, dim, *message(int(values[2], 16))))
        elif kind == "r":
            node = int(values[0])
            refused_count[node], refused[node] = int(values[1]), bool(int(values[2]))
        else:
            ran = int(values[0])
    return events, refused_count, refused, ran


@dataclass
class Packets:
    """What :func:`replay_packets` recorded, in the form of
    :class:`~ihcube.verify.harness.FabricHarness` on the fabric ``spec``: ``injected``
    (``(cycle, node, request)``), ``hops`` (:class:`~ihcube.verify.harness.Hop` s),
    ``deliveries`` (:class:`~ihcube.verify.harness.Delivery` s), each node's
    ``refused_count`` and ``refused`` at the end, the ``cycles`` run, and ``stalled_at``
    (always None: the run has no watchdog)."""
    spec: object
    injected: list
    hops: list
    deliveries: list
    refused_count: list
    refused: list
    cycles: int
    stalled_at: object = None


#: The cycles of eject readiness that :func:`replay_packets` draws for its first run; a run
#: that uses them all is run again with eight times as many, up to its ``max_cycles``.
FIRST_CYCLES = 1024


def replay_packets(spec, requests, eject_ready=1.0, seed=0, max_cycles=20_000,
                   expected_deliveries=None, idle_cycles=16, router=None, text=None,
                   folder=None):
    """Run ``(node, Request)`` pairs on the emitted Verilog of the packet fabric ``spec`` as
    :class:`~ihcube.verify.harness.FabricHarness` (``eject_ready``, ``seed``) and its
    :meth:`~ihcube.verify.harness.FabricHarness.run` (``max_cycles``, ``expected_deliveries``,
    ``idle_cycles``) run them on Amaranth's simulation: each PE port offering its requests in
    order, each eject port accepting in a cycle as the harness's draws for ``seed`` say, and
    the same end. ``router`` builds the routers (a broken one for a negative control), as
    :func:`~ihcube.generate.fabric_verilog` takes it. Returns :class:`Packets`, the harness's
    records, for :func:`~ihcube.verify.scoreboard.check_run`. ``text`` is the fabric's
    Verilog if the caller has it (``fabric_verilog(spec, router=router)``). The harness's
    ``offer_until``, ``watchdog``, ``progress`` and ``read_at_end`` have no counterpart here."""
    spec = as_spec(spec)
    if text is None:
        text = fabric_verilog(spec, router=router)
    columns = spec.nodes * spec.ports
    draw = random.Random(seed).random
    ready, budget = [], min(max_cycles, FIRST_CYCLES)
    while True:
        # The harness draws a port's readiness for each cycle it runs, in port order.
        ready += [[accepts(eject_ready, draw) for _ in range(columns)]
                  for _ in range(budget - len(ready))]
        events, refused_count, refused, cycles = _replay(
            spec, requests, ready, router, folder, idle=idle_cycles,
            expected=expected_deliveries, text=text)
        if cycles < budget or budget == max_cycles:
            break
        budget = min(max_cycles, 8 * budget)
    injected, hops, deliveries = [], [], []
    for kind, cycle, node, *rest in events:
        if kind == "inject":
            injected.append((cycle, node, requests[rest[0]][1]))
        elif kind == "hop":
            dim, *fields = rest
            hops.append(Hop(cycle, node, dim, _message(*fields)))
        else:
            *fields, port = rest
            deliveries.append(Delivery(cycle, node, _message(*fields), port))
    return Packets(spec, injected, hops, deliveries, refused_count, refused, cycles)


def _message(dest, src, kind, travel, payload):
    return Message(dest=dest, src=src, kind=Kind(kind), travel=travel, payload=payload)
