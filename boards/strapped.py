"""The router of one node as a fabric builds it, alone, for its synthesis figures."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from ..rtl import Router
from ..rtl.router import router_signature

__all__ = ["StrappedRouter"]


class StrappedRouter(wiring.Component):
    """The strapped :class:`~ihcube.rtl.Router` of ``node`` (one Verilog module per link
    set, its address a port, as :class:`~ihcube.rtl.Fabric` and the generated Verilog build
    it) with its address tied to ``node``, as the fabric ties it.

    Its crossbar has the inputs of every node with the same links
    (:func:`ihcube.topology.link_set_onward_links`), so it costs what a router of the
    fabric costs; the unstrapped router of ``node`` has only those its own node can use.

    Parameters
    ----------
    n, node, payload_width, depth, ports
        As :class:`~ihcube.rtl.Router`'s.

    Members
    -------
    The unstrapped router's (:func:`~ihcube.rtl.router.router_signature` with
    ``strap=False``).
    """

    def __init__(self, n, node, payload_width=32, depth=1, *, ports=1):
        self._router = Router(n, node, payload_width, depth, strap=True, ports=ports)
        self._node = node
        super().__init__(router_signature(n, node, payload_width, strap=False, ports=ports))

    def elaborate(self, platform):
        m = Module()
        router = m.submodules.router = self._router
        m.d.comb += router.address.eq(self._node)
        for ours, theirs in zip(self.links_in, router.links_in):
            wiring.connect(m, wiring.flipped(ours), theirs)
        for ours, theirs in zip(self.links_out, router.links_out):
            wiring.connect(m, theirs, wiring.flipped(ours))
        single = router.ports == 1
        for ours, theirs in zip([self.inject] if single else self.inject, router.injects):
            wiring.connect(m, wiring.flipped(ours), theirs)
        for ours, theirs in zip([self.eject] if single else self.eject, router.ejects):
            wiring.connect(m, theirs, wiring.flipped(ours))
        m.d.comb += [
            self.refused.eq(router.refused),
            self.refused_count.eq(router.refused_count),
        ]
        return m

