"""The formal check of one reconfigurable router, its configuration free:
:class:`ConfiguredRouterCheck`, proved by k-induction.

A reconfigurable :class:`~ihcube.rtl.Router` of an ``N``-router fabric
(``docs/reconfiguration-hardware.md``) takes its active node count ``active_nodes`` and
``mask`` (its logical address is ``node XOR mask``) as inputs. Here they are free inputs too,
held constant (the fabric loads a configuration only while every router is idle) and assumed
to fit (:func:`ihcube.topology.configuration_fits`): one proof covers every configuration
the router can be given. Everything :mod:`.router_check` asserts is asserted, in logical
addresses over the active nodes: what the router of logical address ``l`` of an
``active_nodes``-node fabric must do, from :mod:`ihcube.topology`, selected by the
configuration. A router whose logical address is not active must take part in nothing: no
message comes by its links (none exists in logical addresses), it sends none, and every
injection is refused.

The expectations are :class:`~.router_check.RouterCheck`'s, built once per configuration that
fits (``N`` at most 8 or so: a few dozen) with its ``n`` and ``node`` set to the
configuration's, and selected by ``active_nodes`` and ``mask``. Without register stages,
fairness bound or covers.
"""

from contextlib import contextmanager

from amaranth.hdl import Assert, Assume, Const, Mux, Signal

from ... import topology
from ...rtl import Kind, Router
from .environment import hold_constant
from .router_check import RouterCheck, _unicast_outputs

__all__ = ["ConfiguredRouterCheck"]


class ConfiguredRouterCheck(RouterCheck):
    """:class:`~.router_check.RouterCheck` of the router of ``node`` in a reconfigurable
    fabric ``spec`` (no register stages), over every configuration at once (the module
    documentation, :mod:`.configured_router_check`). ``router`` as there."""

    def __init__(self, spec, node, *, router=Router):
        if not spec.reconfigurable or spec.stages:
            raise ValueError(f"The configured router check is of a reconfigurable router "
                             f"without register stages, not {spec!r}")
        super().__init__(spec, node, router=router)
        N = self.N = spec.nodes
        self.physical = node
        self.configurations = [
            (active, mask) for active in range(1, N + 1)
            for mask in range(1 << topology.address_bits(N))
            if topology.configuration_fits(N, active, mask)]

    @contextmanager
    def _as(self, active, mask):
        """Within: the check's ``n`` and ``node`` are the configuration's."""
        self.n, self.node = active, self.physical ^ mask
        try:
            yield
        finally:
            self.n, self.node = self.N, self.physical

    def _link(self, dim):
        """Whether link ``dim`` exists in logical addresses (from an active router)."""
        return self.node < self.n and topology.link_exists(self.n, self.node, dim)

    def _selected(self, active, mask):
        return (self.router.active_nodes == active) & (self.router.mask == mask)

    def _each(self, m, active_only=True):
        """Each configuration (with ``active_only``, those where this router is active),
        inside ``m.If`` of it being the one that holds, with ``n`` and ``node`` set."""
        for active, mask in self.configurations:
            if active_only and self.physical ^ mask >= active:
                continue
            with m.If(self._selected(active, mask)), self._as(active, mask):
                yield active, mask

    # --- The environment: a configuration that fits, held ------------------------------

    def _check_missing_links(self, m):
        router = self.router
        hold_constant(m, router.active_nodes)
        hold_constant(m, router.mask)
        m.d.comb += Assume(topology.configuration_fits(
            self.N, router.active_nodes, router.mask, dims=len(router.mask)))
        for _ in self._each(m):
            super()._check_missing_links(m)
        # A router that is not active has no link in logical addresses (topology.link_exists
        # asks of the far end only: it takes the near one for a node).
        for active, mask in self.configurations:
            if self.physical ^ mask < active:
                continue
            with m.If(self._selected(active, mask)):
                for o, dim in enumerate(self._dims):
                    m.d.comb += [
                        Assume(~self._inputs[o].valid),
                        Assert(~self._outputs[o].valid,
                               f"a message is offered on link {dim} of an inactive router"),
                    ]

    def _assume_sent_by_rule(self, m):
        for _ in self._each(m):
            super()._assume_sent_by_rule(m)

    def _sent_by_rule(self, j, msg):
        # Over every physical address bit: a neighbour sends no unicast for a logical node
        # beyond the active ones' dimensions. Where the rules are values (the buffers'
        # invariants), the configuration's selects.
        if not isinstance(self.n, int):
            saved, rule = (self.n, self.node), Const(0, 1)
            for active, mask in self.configurations:
                with self._as(active, mask):
                    rule |= self._selected(active, mask) & self._sent_by_rule(j, msg)
            self.n, self.node = saved
            return rule
        dim = self._dims[j]
        if not self._link(dim):
            return Const(1, 1)
        width = topology.dimensions(self.N)
        sender = topology.neighbor(self.node, dim)
        outside = ((1 << width) - 1) & ~topology.travel_mask(self.n, sender, dim, self.order)
        left = Mux(msg.kind == Kind.BROADCAST, msg.travel, msg.dest ^ self.node)
        return (left & outside) == 0

    def _stamps(self):
        """As :meth:`RouterCheck._stamps`, with the configured values: a unicast from a link
        names an active node; an injection's ``src`` is the logical address and its travel
        vector the active nodes' full one."""
        router = self.router
        return (topology.address_bits(self.N), router.active_nodes, router.logical_address,
                topology.full_travel(router.active_nodes, dims=topology.dimensions(self.N)))

    # --- What the router must do, per configuration ---------------------------------------

    def _expect(self, m, tagged):
        # An inactive router sends nothing: expect stays 0.
        for _ in self._each(m):
            super()._expect(m, tagged)

    def _copy_checks(self, tagged, o, out, left):
        combined = None
        for active, mask in self.configurations:
            selected = self._selected(active, mask)
            if self.physical ^ mask >= active:
                checks = [(Const(0, 1), what) for _, what in
                          ((0, ", but it never entered"), (0, ", where it must not go"),
                           (0, " twice"), (0, " altered"))]
            else:
                with self._as(active, mask):
                    checks = super()._copy_checks(tagged, o, out, left)
            parts = [selected & condition for condition, _ in checks]
            combined = parts if combined is None else [a | b for a, b in zip(combined, parts)]
        return list(zip(combined, (what for _, what in checks)))

    def _check_buffers(self, m, probe, tagged, started):
        # The rules in values: the active node count and the router's logical address.
        self.n, self.node = self.router.active_nodes, self.router.logical_address
        try:
            holders = super()._check_buffers(m, probe, tagged, started)
        finally:
            self.n, self.node = self.N, self.physical
        # The buffer of a link that does not exist in logical addresses is empty, and so is
        # every buffer of a router that is not active.
        for _ in self._each(m, active_only=False):
            for j in range(self._local + 1):
                dim = self._dims[j] if j < self._local else None
                if dim is None and self.node < self.n or dim is not None and self._link(dim):
                    continue
                name = f"in{dim}" if dim is not None else "in_pe"
                m.d.comb += Assert(probe.sub(name).signal("count") == 0,
                                   f"the buffer of {self._input_name(j)} holds a message, "
                                   f"which no link or PE of this configuration brings")
        return holders

    def _right_output(self, m, dest, o):
        """As :meth:`RouterCheck._right_output`, over every address of the physical fabric
        (the environment may send anything on a link); 0 where the router is inactive: it
        offers nothing."""
        right = Signal(name=f"right{o}_configured")
        for _ in self._each(m):
            table = _unicast_outputs(self.n, self.node, self.order, self._dims)
            with m.Switch(dest):
                for d in range(1 << topology.address_bits(self.N)):
                    with m.Case(d):
                        if d >= self.n and o < self._local:
                            m.d.comb += right.eq((d ^ self.node) >> self._dims[o] & 1)
                        elif d < self.n:
                            m.d.comb += right.eq(table[d] >> o & 1)
        return right
