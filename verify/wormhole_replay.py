"""Replay a drawn-up traffic on the emitted Verilog of a wormhole fabric, in Icarus Verilog.

The wormhole lockstep tests (``tests/test_wormhole_model.py``) compare the models with the
RTL on a traffic drawn up front: each PE's queue of messages, every flit word of a message
offered in turn (the first from the message's cycle on, the others as soon as the one before
is taken), and a pattern of eject-port readiness. :func:`wormhole_replay` runs that traffic on
the Verilog that :func:`ihcube.generate.fabric_verilog` writes, under the testbench of the
packet fabric's replay (:func:`ihcube.verify.replay.testbench`, with the wormhole links'
handshakes: a flit on virtual channel ``vc`` is taken when bit ``vc`` of the link's ``ready``
is high), and returns the events of the Amaranth testbench of those tests. As there, the PE
inputs of a cycle are set before its handshakes are read, and reset is never asserted.
"""

from __future__ import annotations

from .. import topology
from ..generate import fabric_verilog
from ..rtl.flit import flit_layout
from ..spec import as_wormhole_spec
from .replay import run_testbench, testbench

__all__ = ["wormhole_replay"]


def wormhole_replay(spec, queues, eject_ready, wormhole=None, order=topology.MSB_FIRST,
                    router=None, folder=None):
    """Run the PE traffic ``queues`` on the emitted Verilog of the wormhole fabric ``spec``
    (or ``(n, wormhole, order)``) for ``len(eject_ready)`` cycles.

    ``queues`` holds each node's messages as ``(at, words)``: the message's flit words, the
    head first, offered from cycle ``at`` on. ``eject_ready`` (cycles x ``n``) says in which
    cycles each eject port accepts. ``router`` builds the routers (a broken one for a negative
    control), as :func:`~ihcube.generate.fabric_verilog` takes it; ``folder`` keeps the
    testbench, the stimulus and the events (a temporary folder if None).

    Returns ``(events, refused)`` in the form of the Amaranth testbench of
    ``tests/test_wormhole_model.py``: ``("inject", cycle, node)``, ``("hop", cycle, node,
    dim, vc, flit)`` and ``("eject", cycle, node, flit)`` (``flit`` the bits of
    :func:`~ihcube.rtl.flit.flit_layout`: payload, head, tail), and each node's
    ``(refused_count, refused)`` at the end.
    """
    spec = as_wormhole_spec(spec, wormhole, order)
    n, width = spec.nodes, spec.wormhole.flit_width
    links = [(node, j, dim) for node in range(n) for j, dim in enumerate(topology.links(n, node))]
    watch = []
    for k, (node, j, _) in enumerate(links):
        port = f"dut.router{node}.links_out__{j}__"
        watch += [f"      if ({port}valid && {port}ready[{port}vc])",
                  f'        $fwrite(out, "h %0d {k} %0d %h\\n", cycle, {port}vc, {port}flit);']
    finish = [f'    $fwrite(out, "r {node} %0d %0d\\n", dut.router{node}.refused_count, '
              f"dut.router{node}.refused);" for node in range(n)]
    # A message's first word waits for its cycle, the others for the word before them.
    offers = [[(at if i == 0 else 0, word) for at, words in queue for i, word in enumerate(words)]
              for queue in queues]
    bench = testbench(spec.name, [str(node) for node in range(n)], width,
                      flit_layout(width).size, len(eject_ready),
                      [len(node_offers) for node_offers in offers], watch, finish)
    lines = run_testbench(fabric_verilog(spec, router=router), bench,
                          [word for node_offers in offers for _, word in node_offers],
                          [at for node_offers in offers for at, _ in node_offers],
                          eject_ready, folder)
    events, refused = [], [(0, 0)] * n
    for line in lines:
        kind, *values = line.split()
        if kind == "i":
            events.append(("inject", int(values[0]), int(values[1])))
        elif kind == "d":
            events.append(("eject", int(values[0]), int(values[1]), int(values[2], 16)))
        elif kind == "h":
            cycle, k, vc = map(int, values[:3])
            node, _, dim = links[k]
            events.append(("hop", cycle, node, dim, vc, int(values[3], 16)))
        else:
            refused[int(values[0])] = (int(values[1]), int(values[2]))
    return events, refused
