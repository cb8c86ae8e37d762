"""The router of one node as a fabric builds it, alone, for its synthesis figures."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from ..rtl import Router
from ..rtl.router import router_signature

__all__ = ["StrappedRouter"]


class StrappedRouter(wiring.Component):
    """The strapped :class:`~ihcube.rtl.Router` of ``node`` (one Verilog module per router
    class, its address a port, as :class:`~ihcube.rtl.Fabric` and the generated Verilog
    build it) with its address tied to ``node``, as the fabric ties it.

    It costs what a router of the fabric costs. Its crossbar is the one of the unstrapped
    router of ``node`` (one module per :func:`ihcube.topology.router_class`, whose nodes have
    the same onward links); its route selection takes the address from the strap.

    Parameters
    ----------
    n, node, payload_width, depth, ports, link_stages, switch_stages, eject_stages
        As :class:`~ihcube.rtl.Router`'s.

    Members
    -------
    The unstrapped router's (:func:`~ihcube.rtl.router.router_signature` with
    ``strap=False``).
    """

    def __init__(self, n, node, payload_width=32, depth=1, *, ports=1, **stages):
        self._router = Router(n, node, payload_width, depth, strap=True, ports=ports, **stages)
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

