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
:func:`replay_worms` runs requests as :class:`~ihcube.verify.harness.WormholeHarness` does
and returns its records, for the flit scoreboard (``tests/test_wormhole_router.py``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .. import topology
from ..generate import fabric_verilog
from ..rtl.flit import flit_layout
from ..spec import as_wormhole_spec
from .harness import Flit, accepts, owed_flits, worm_flits
from .replay import run_testbench, testbench

__all__ = ["wormhole_replay", "replay_worms", "Worms"]


def wormhole_replay(spec, queues, eject_ready, wormhole=None, order=topology.MSB_FIRST,
                    router=None, folder=None, quiet=None):
    """Run the PE traffic ``queues`` on the emitted Verilog of the wormhole fabric ``spec``
    (or ``(n, wormhole, order)``) for ``len(eject_ready)`` cycles.

    ``queues`` holds each node's messages as ``(at, words)``: the message's flit words, the
    head first, offered from cycle ``at`` on. ``eject_ready`` (cycles x ``n``) says in which
    cycles each eject port accepts. ``router`` builds the routers (a broken one for a negative
    control), as :func:`~ihcube.generate.fabric_verilog` takes it; ``folder`` keeps the
    testbench, the stimulus and the events (a temporary folder if None). With ``quiet``, the run
    ends early once every queue is empty and nothing has moved for ``quiet`` cycles.

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
        watch += [f"      if ({port}valid && {port}ready[{port}vc]) begin",
                  f'        $fwrite(out, "h %0d {k} %0d %h\\n", cycle, {port}vc, {port}flit);',
                  *(["        moved = 1;"] if quiet is not None else []),
                  "      end"]
    finish = [f'    $fwrite(out, "r {node} %0d %0d\\n", dut.router{node}.refused_count, '
              f"dut.router{node}.refused);" for node in range(n)]
    # A message's first word waits for its cycle, the others for the word before them.
    offers = [[(at if i == 0 else 0, word) for at, words in queue for i, word in enumerate(words)]
              for queue in queues]
    bench = testbench(spec.name, [str(node) for node in range(n)], width,
                      flit_layout(width).size, len(eject_ready),
                      [len(node_offers) for node_offers in offers], watch, finish, quiet)
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


@dataclass
class Worms:
    """What :func:`replay_worms` recorded, in the form of
    :class:`~ihcube.verify.harness.WormholeHarness` on the fabric ``spec``: ``injected``
    (``(cycle, node, request)`` when a request's head is taken), ``flits``
    (:class:`~ihcube.verify.harness.Flit` s on links and at eject ports), each node's
    ``refused_count``, and ``stalled_at``: None when every queued flit was taken and every flit
    owed delivered, else the cycle after the last handshake. ``owed`` is the harness's."""
    spec: object
    injected: list
    flits: list
    refused_count: list
    stalled_at: object

    def owed(self, request):
        """Eject flits that a request owes (:func:`~ihcube.verify.harness.owed_flits`)."""
        return owed_flits(self.spec.nodes, self.spec.wormhole, request)


def replay_worms(spec, requests, eject_ready=1.0, seed=0, cycles=4000, router=None,
                 watchdog=200):
    """Run ``(node, Request)`` pairs on the emitted Verilog of the wormhole fabric ``spec`` as
    :class:`~ihcube.verify.harness.WormholeHarness` runs them on Amaranth's simulation: each
    request as the flits of :func:`~ihcube.verify.harness.worm_flits`, each PE accepting a
    flit in a cycle with probability ``eject_ready`` (the harness's draws for ``seed``), for
    at most ``cycles`` cycles and until every queue is empty and nothing has moved for
    ``watchdog`` cycles. Returns :class:`Worms`, for
    :func:`~ihcube.verify.scoreboard.check_worms`."""
    spec = as_wormhole_spec(spec)
    n, wormhole = spec.nodes, spec.wormhole
    queues = [[] for _ in range(n)]
    for node, request in requests:
        queues[node].append(request)
    draw = random.Random(seed).random
    ready = [[accepts(eject_ready, draw) for _ in range(n)] for _ in range(cycles)]
    events, refused = wormhole_replay(
        spec, [[(request.at, worm_flits(n, wormhole, node, request)) for request in queue]
               for node, queue in enumerate(queues)], ready, router=router, quiet=watchdog)
    mask = (1 << wormhole.flit_width) - 1

    def flit(cycle, node, dim, vc, bits):
        return Flit(cycle, node, dim, vc, bits & mask, bool(bits >> wormhole.flit_width & 1),
                    bool(bits >> wormhole.flit_width + 1 & 1))

    taken = [0] * n
    injected, flits = [], []
    for kind, cycle, node, *rest in events:
        if kind == "inject":
            if taken[node] % wormhole.flits == 0:
                injected.append((cycle, node, queues[node][taken[node] // wormhole.flits]))
            taken[node] += 1
        elif kind == "hop":
            flits.append(flit(cycle, node, *rest))
        else:
            flits.append(flit(cycle, node, None, None, *rest))
    owed = sum(owed_flits(n, wormhole, request) for _, request in requests)
    done = (sum(taken) == wormhole.flits * len(requests)
            and sum(f.dim is None for f in flits) == owed)
    last = max((event[1] for event in events), default=-1)
    return Worms(spec, injected, flits, [count for count, _ in refused],
                 None if done else last + 1)
