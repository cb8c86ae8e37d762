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
    spec, node
        As :class:`~ihcube.rtl.Router`'s (a :class:`~ihcube.spec.FabricSpec`, or its keyword
        form).

    Members
    -------
    The unstrapped router's (:func:`~ihcube.rtl.router.router_signature` with
    ``strap=False``).
    """

    def __init__(self, spec, node, *args, **keywords):
        self._router = Router(spec, node, *args, strap=True, **keywords)
        self._node = self._router.node
        spec = self._router.spec
        super().__init__(router_signature(spec.nodes, self._node, spec.payload_width,
                                          strap=False, ports=spec.ports))

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

