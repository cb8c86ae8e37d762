"""The whole wormhole network: one :class:`WormholeRouter` per node (``docs/wormhole.md``)."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import deadlock, topology
from ..spec import as_wormhole_spec
from .fabric import link_ends, place_router
from .flit import eject_signature, inject_signature
from .router import REFUSED_COUNT_WIDTH
from .wormhole_router import WormholeRouter, wormhole_router_signature

__all__ = ["WormholeFabric", "wormhole_fabric_signature"]


def wormhole_fabric_signature(n, wormhole):
    """The ports of :class:`WormholeFabric` ``(n, wormhole)``, also those of the Verilog top
    module that :func:`ihcube.generate.fabric_verilog` writes for it."""
    return wiring.Signature({
        "inject":        In(inject_signature(wormhole.flit_width)).array(n),
        "eject":         Out(eject_signature(wormhole.flit_width)).array(n),
        "refused":       Out(1).array(n),
        "refused_count": Out(REFUSED_COUNT_WIDTH).array(n),
    })


class WormholeFabric(wiring.Component):
    """An ``n``-node incomplete hypercube of :class:`WormholeRouter` s, wired as
    :class:`~ihcube.rtl.Fabric` wires its routers (:func:`~ihcube.rtl.fabric.link_ends`).

    At construction the dependency graph over (link, virtual channel) pairs is checked
    (:func:`ihcube.deadlock.check_wormhole_deadlock_free`); a cyclic one raises
    ``ValueError`` naming the cycle.

    Parameters
    ----------
    spec : FabricSpec
        The fabric (:class:`ihcube.spec.FabricSpec` with :class:`~ihcube.spec.Wormhole`
        switching). The older form ``(n, wormhole, order)`` makes the spec
        (:func:`ihcube.spec.as_wormhole_spec`).
    router : callable
        Builds a node's router as ``router(spec, node, strap=True)``; the tests pass broken
        variants.
    routing, rule : optional
        The unicast routing and the virtual-channel rule that the check is run on (the
        router's if None); the tests pass deadlock-prone ones.
    router_modules : dict or None
        Verilog module names by node, instantiated instead of elaborating the routers (as
        :class:`~ihcube.rtl.Fabric` does).

    Members
    -------
    inject : ``In(inject_signature(flit_width)).array(n)``
    eject : ``Out(eject_signature(flit_width)).array(n)``
    refused : ``Out(1).array(n)``
    refused_count : ``Out(REFUSED_COUNT_WIDTH).array(n)``
    """

    def __init__(self, spec, wormhole=None, order=topology.MSB_FIRST, router=WormholeRouter,
                 routing=None, rule=None, router_modules=None):
        spec = self._spec = as_wormhole_spec(spec, wormhole, order).check_hardware()
        n = self._n = spec.nodes
        wormhole = self._wormhole = spec.wormhole
        self._order = spec.order
        deadlock.check_wormhole_deadlock_free(n, wormhole.vcs, spec.order, routing, rule)
        self._router_modules = router_modules
        self.routers = None if router_modules is not None else [
            router(spec, node, strap=True) for node in range(n)]
        super().__init__(wormhole_fabric_signature(n, wormhole))

    spec     = property(lambda self: self._spec)
    n        = property(lambda self: self._n)
    wormhole = property(lambda self: self._wormhole)
    order    = property(lambda self: self._order)

    def elaborate(self, platform):
        m = Module()
        ports = [self._place_router(m, node) for node in range(self._n)]
        for node, port in enumerate(ports):
            m.d.comb += [
                port.address.eq(node),
                self.refused[node].eq(port.refused),
                self.refused_count[node].eq(port.refused_count),
            ]
            wiring.connect(m, wiring.flipped(self.inject[node]), port.inject)
            wiring.connect(m, port.eject, wiring.flipped(self.eject[node]))
            for j, (far, far_j) in enumerate(link_ends(self._n, node)):
                wiring.connect(m, port.links_out[j], ports[far].links_in[far_j])
        return m

    def _place_router(self, m, node):
        """Add the router of ``node`` to ``m`` (:func:`~ihcube.rtl.fabric.place_router`)."""
        if self._router_modules is None:
            return place_router(m, node, self.routers[node])
        return place_router(m, node, module=self._router_modules[node],
                            signature=wormhole_router_signature(self._n, node, self._wormhole))
