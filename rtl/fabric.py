"""The whole network: one router per node, wired as the incomplete hypercube."""

from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .. import deadlock, topology
from ..spec import as_spec
from .message import inject_layout, message_layout
from .router import REFUSED_COUNT_WIDTH, Router, router_signature

__all__ = ["Fabric", "fabric_signature", "link_ends", "place_router"]


def fabric_signature(n, payload_width=32, ports=1):
    """The signature of :class:`Fabric` ``(n, payload_width, ports=ports)``: its ports, which
    are also the ports of the top module that :func:`ihcube.generate.fabric_verilog` writes.
    With ``ports > 1`` each node's ``inject`` and ``eject`` are arrays of ``ports``."""
    per_node = (n,) if ports == 1 else (n, ports)
    return wiring.Signature({
        "inject":        In(stream.Signature(inject_layout(n, payload_width))).array(*per_node),
        "eject":         Out(stream.Signature(message_layout(n, payload_width))).array(*per_node),
        "refused":       Out(1).array(n),
        "refused_count": Out(REFUSED_COUNT_WIDTH).array(n),
    })


def link_ends(n, node):
    """Where each link port of ``node``'s router is wired: for its ``j``-th link, the far node
    and the index of the same link among the far node's ports.

    Link ``j`` of ``node`` is dimension ``dims[j]`` of :func:`ihcube.topology.links`; its far
    end is :func:`ihcube.topology.neighbor`, where the link has the same dimension. Both the
    :class:`Fabric` and the Verilog top module of :mod:`ihcube.generate` wire by this.
    """
    ends = []
    for dim in topology.links(n, node):
        far = topology.neighbor(node, dim)
        ends.append((far, topology.links(n, far).index(dim)))
    return ends


def place_router(m, node, router=None, *, module=None, signature=None):
    """Add the router of ``node`` to ``m``; return the interface to wire it by.

    With ``module`` None that is the component ``router`` itself; otherwise an instance of the
    Verilog module named ``module``, tied to a stand-in with ``signature``'s members (the
    fabrics that :mod:`ihcube.generate` checks against their written top modules).
    """
    if module is None:
        m.submodules[f"router{node}"] = router
        return router
    stand_in = signature.create(path=(f"router{node}",))
    ports = {"i_clk": ClockSignal(), "i_rst": ResetSignal()}
    for path, member, value in signature.flatten(stand_in):
        prefix = "o_" if member.flow == Out else "i_"
        ports[prefix + "__".join(str(part) for part in path)] = value
    m.submodules[f"router{node}"] = Instance(module, **ports)
    return stand_in


class Fabric(wiring.Component):
    """An ``n``-node incomplete hypercube of :class:`Router` s.

    Link ``i`` of node ``a`` is wired to link ``i`` of node ``a XOR 2**i`` in both
    directions, for every link that :func:`ihcube.topology.link_exists`. Each node's PE
    port is brought out.

    Parameters
    ----------
    spec : FabricSpec
        The fabric (:class:`ihcube.spec.FabricSpec`, packet switching), within the hardware's
        limits (:meth:`~ihcube.spec.FabricSpec.check_hardware`). The keyword form
        ``Fabric(n, payload_width=32, depth=1, order="msb", ports=1, link_stages=0,
        switch_stages=0, eject_stages=0)`` makes the spec (:meth:`FabricSpec.of
        <ihcube.spec.FabricSpec.of>`). Extra PE ports add sources and sinks to the channel
        dependency graph, no edge between channels, so the deadlock check holds for any
        count (``docs/ports.md``). With ``router_modules`` the register stages only say
        what those modules were built with (:func:`ihcube.generate.fabric_verilog` builds
        them).
    router : callable
        Builds the router of one node, as ``router(spec, node, strap=True)``; the tests pass
        broken variants here.
    router_modules : dict or None
        If given, maps each node to the name of a Verilog module that implements its
        (strapped) router, and the fabric instantiates those modules instead of elaborating
        the routers inline. :func:`ihcube.generate.fabric_verilog` writes such a top module
        as text (:func:`ihcube.generate.top_verilog`, one router module per router class); the
        tests prove the two equivalent.
    routing : callable or None
        The unicast routing the routers implement, as ``routing(n, node, dest)`` (see
        :mod:`ihcube.deadlock`); :func:`ihcube.topology.route_step` in ``order`` if None. Its
        channel dependency graph, broadcasts included, is checked at construction, which
        raises ``ValueError`` naming a cycle if there is one. The tests pass deadlock-prone
        variants here.

    Members
    -------
    inject : ``In(stream.Signature(inject_layout(n, payload_width))).array(n)``
        Each node's injection port (``.array(n, ports)`` with ``ports > 1``).
    eject : ``Out(stream.Signature(message_layout(n, payload_width))).array(n)``
        Each node's delivery port (``.array(n, ports)`` with ``ports > 1``).
    refused : ``Out(1).array(n)``
        Each node's sticky flag for a refused injection.
    refused_count : ``Out(REFUSED_COUNT_WIDTH).array(n)``
        Each node's count of refused injections.

    Attributes
    ----------
    routers : list of :class:`Router`, or None
        The router of each node, by node number; None when ``router_modules`` is given.
    """

    def __init__(self, spec, *args, router=Router, router_modules=None, routing=None,
                 **keywords):
        spec = self._spec = as_spec(spec, *args, **keywords).check_hardware()
        if not spec.packet:
            raise ValueError(f"Fabric is the packet fabric; a {spec.mode} spec's fabric is its "
                             f"mode's (ihcube.modes)")
        n = self._n = spec.nodes
        # A cycle of channel dependencies can deadlock the fabric: refuse to build it.
        deadlock.check_deadlock_free(n, spec.order, routing)
        self._router_modules = router_modules
        if router_modules is None:
            self.routers = [router(spec, node, strap=True) for node in range(n)]
        else:
            # The routers are Verilog modules, built by whoever named them.
            self.routers = None
        super().__init__(fabric_signature(n, spec.payload_width, spec.ports))

    spec          = property(lambda self: self._spec)
    n             = property(lambda self: self._n)
    payload_width = property(lambda self: self._spec.payload_width)
    depth         = property(lambda self: self._spec.depth)
    order         = property(lambda self: self._spec.order)
    ports         = property(lambda self: self._spec.ports)
    link_stages   = property(lambda self: self._spec.stages.link)
    switch_stages = property(lambda self: self._spec.stages.switch)
    eject_stages  = property(lambda self: self._spec.stages.eject)

    def injects(self, node):
        """The injection ports of ``node``, as a list (one with ``ports=1``)."""
        return [self.inject[node]] if self.ports == 1 else list(self.inject[node])

    def ejects(self, node):
        """The eject ports of ``node``, as a list (one with ``ports=1``)."""
        return [self.eject[node]] if self.ports == 1 else list(self.eject[node])

    def elaborate(self, platform):
        m = Module()
        ports = [self._place_router(m, node) for node in range(self._n)]
        for node, port in enumerate(ports):
            m.d.comb += port.address.eq(node)
            if self.ports == 1:
                wiring.connect(m, wiring.flipped(self.inject[node]), port.inject)
                wiring.connect(m, port.eject, wiring.flipped(self.eject[node]))
            else:
                for p in range(self.ports):
                    wiring.connect(m, wiring.flipped(self.inject[node][p]), port.inject[p])
                    wiring.connect(m, port.eject[p], wiring.flipped(self.eject[node][p]))
            m.d.comb += [
                self.refused[node].eq(port.refused),
                self.refused_count[node].eq(port.refused_count),
            ]
            for j, (far, far_j) in enumerate(link_ends(self._n, node)):
                wiring.connect(m, port.links_out[j], ports[far].links_in[far_j])
        return m

    def _place_router(self, m, node):
        """Add the router of ``node`` to ``m``; return the interface to wire it by."""
        if self._router_modules is None:
            return place_router(m, node, self.routers[node])
        return place_router(m, node, module=self._router_modules[node],
                            signature=router_signature(self._n, node, self.payload_width,
                                                       ports=self.ports))
