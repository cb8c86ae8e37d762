"""The whole network: one router per node, wired as the incomplete hypercube."""

from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .. import deadlock, topology
from ..params import check_fabric_depth, check_fabric_payload_width
from .message import inject_layout, message_layout
from .router import REFUSED_COUNT_WIDTH, Router, router_signature

__all__ = ["Fabric", "fabric_signature", "link_ends"]


def fabric_signature(n, payload_width=32):
    """The signature of :class:`Fabric` ``(n, payload_width)``: its ports, which are also the
    ports of the top module that :func:`ihcube.generate.fabric_verilog` writes."""
    return wiring.Signature({
        "inject":        In(stream.Signature(inject_layout(n, payload_width))).array(n),
        "eject":         Out(stream.Signature(message_layout(n, payload_width))).array(n),
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


class Fabric(wiring.Component):
    """An ``n``-node incomplete hypercube of :class:`Router` s.

    Link ``i`` of node ``a`` is wired to link ``i`` of node ``a XOR 2**i`` in both
    directions, for every link that :func:`ihcube.topology.link_exists`. Each node's PE
    port is brought out.

    Parameters
    ----------
    n : int
        Number of nodes, 1 to :data:`ihcube.params.MAX_FABRIC_NODES`.
    payload_width : int
        Payload bits per message, 1 to :data:`ihcube.params.MAX_FABRIC_PAYLOAD_WIDTH`.
    depth : int
        Messages per router input buffer, 1 to :data:`ihcube.params.MAX_FABRIC_DEPTH`.
    order : ``"msb"`` or ``"lsb"``
        Routing order.
    router : callable
        Builds the router of one node, as
        ``router(n, node, payload_width, depth, order, strap=True)``; the tests pass broken
        variants here.
    router_modules : dict or None
        If given, maps each node to the name of a Verilog module that implements its
        (strapped) router, and the fabric instantiates those modules instead of elaborating
        the routers inline. :func:`ihcube.generate.fabric_verilog` writes such a top module
        as text (:func:`ihcube.generate.top_verilog`, one router module per link set); the
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
        Each node's injection port.
    eject : ``Out(stream.Signature(message_layout(n, payload_width))).array(n)``
        Each node's delivery port.
    refused : ``Out(1).array(n)``
        Each node's sticky flag for a refused injection.
    refused_count : ``Out(REFUSED_COUNT_WIDTH).array(n)``
        Each node's count of refused injections.

    Attributes
    ----------
    routers : list of :class:`Router`, or None
        The router of each node, by node number; None when ``router_modules`` is given.
    """

    def __init__(self, n, payload_width=32, depth=1, order=topology.MSB_FIRST, router=Router,
                 router_modules=None, routing=None):
        n = self._n = topology.check_fabric_node_count(n)
        payload_width = self._payload_width = check_fabric_payload_width(payload_width)
        depth = self._depth = check_fabric_depth(depth)
        self._order = topology.check_routing_order(order)
        # A cycle of channel dependencies can deadlock the fabric: refuse to build it.
        deadlock.check_deadlock_free(n, order, routing)
        self._router_modules = router_modules
        if router_modules is None:
            self.routers = [router(n, node, payload_width, depth, order, strap=True)
                            for node in range(n)]
        else:
            # The routers are Verilog modules, built by whoever named them.
            self.routers = None
        super().__init__(fabric_signature(n, payload_width))

    n             = property(lambda self: self._n)
    payload_width = property(lambda self: self._payload_width)
    depth         = property(lambda self: self._depth)
    order         = property(lambda self: self._order)

    def elaborate(self, platform):
        m = Module()
        ports = [self._place_router(m, node) for node in range(self._n)]
        for node, port in enumerate(ports):
            m.d.comb += port.address.eq(node)
            wiring.connect(m, wiring.flipped(self.inject[node]), port.inject)
            wiring.connect(m, port.eject, wiring.flipped(self.eject[node]))
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
            router = m.submodules[f"router{node}"] = self.routers[node]
            return router
        # A stand-in with the router's members, tied to the ports of a Verilog instance.
        signature = router_signature(self._n, node, self._payload_width)
        stand_in = signature.create(path=(f"router{node}",))
        ports = {"i_clk": ClockSignal(), "i_rst": ResetSignal()}
        for path, member, value in signature.flatten(stand_in):
            prefix = "o_" if member.flow == Out else "i_"
            ports[prefix + "__".join(str(part) for part in path)] = value
        m.submodules[f"router{node}"] = Instance(self._router_modules[node], **ports)
        return stand_in
