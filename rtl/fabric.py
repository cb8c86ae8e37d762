"""The whole network: one router per node, wired as the incomplete hypercube."""

from amaranth.hdl import Cat, ClockSignal, Instance, Module, ResetSignal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .. import deadlock, topology
from ..spec import as_spec
from .configuration import Configuration, configuration_layout
from .message import inject_layout, message_layout
from .router import REFUSED_COUNT_WIDTH, Router, router_signature

__all__ = ["Fabric", "fabric_signature", "link_ends", "place_router"]


def fabric_signature(n, payload_width=32, ports=1, reconfigurable=False):
    """The signature of :class:`Fabric` ``(n, payload_width, ports=ports)``: its ports, which
    are also the ports of the top module that :func:`ihcube.generate.fabric_verilog` writes.
    With ``ports > 1`` each node's ``inject`` and ``eject`` are arrays of ``ports``. A
    ``reconfigurable`` fabric's has the configuration interface too (:class:`Fabric`,
    Members)."""
    per_node = (n,) if ports == 1 else (n, ports)
    members = {
        "inject":        In(stream.Signature(inject_layout(n, payload_width))).array(*per_node),
        "eject":         Out(stream.Signature(message_layout(n, payload_width))).array(*per_node),
        "refused":       Out(1).array(n),
        "refused_count": Out(REFUSED_COUNT_WIDTH).array(n),
    }
    if reconfigurable:
        members.update({
            "config":          In(stream.Signature(configuration_layout(n))),
            "config_refused":  Out(1),
            "idle":            Out(1),
            "active_nodes":    Out(n.bit_length()),
            "mask":            Out(topology.address_bits(n)),
            "logical_address": Out(topology.address_bits(n)).array(n),
            "active":          Out(1).array(n),
        })
    return wiring.Signature(members)


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
    config : ``In(stream.Signature(configuration_layout(n)))``
        A reconfigurable fabric's only (``docs/reconfiguration-hardware.md``), as the members
        below: a configuration to load, ``active_nodes`` and ``mask``. ``config.ready`` is
        ``idle``: the configuration is taken in a cycle in which the fabric is idle, and
        holds from the next cycle, if :func:`ihcube.topology.configuration_fits` says it
        fits; otherwise it is taken and refused. After reset: ``n`` active nodes, mask 0
        (the fixed fabric of ``n`` nodes).
    config_refused : ``Out(1)``
        The last configuration taken did not fit and was refused (the one before holds).
    idle : ``Out(1)``
        No message is in any buffer or relay of the fabric and no PE offers one (a
        combinational function of the ``inject`` valid bits).
    active_nodes, mask : ``Out(n.bit_length())``, ``Out(address_bits(n))``
        The configuration that holds.
    logical_address, active : ``Out(address_bits(n)).array(n)``, ``Out(1).array(n)``
        Each physical router's logical address, ``node XOR mask``, and whether it is below
        ``active_nodes`` (an inactive router refuses every injection).

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
        super().__init__(fabric_signature(n, spec.payload_width, spec.ports,
                                          reconfigurable=spec.reconfigurable))

    spec          = property(lambda self: self._spec)
    n             = property(lambda self: self._n)
    payload_width = property(lambda self: self._spec.payload_width)
    depth         = property(lambda self: self._spec.depth)
    order         = property(lambda self: self._spec.order)
    ports         = property(lambda self: self._spec.ports)
    link_stages   = property(lambda self: self._spec.stages.link)
    switch_stages = property(lambda self: self._spec.stages.switch)
    eject_stages  = property(lambda self: self._spec.stages.eject)
    reconfigurable = property(lambda self: self._spec.reconfigurable)

    #: A reconfigurable fabric takes a configuration only while idle; the negative control's
    #: variant clears it, and loads in any cycle.
    drain_before_load = True

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
        if self.reconfigurable:
            self._elaborate_configuration(m, ports)
        return m

    def _elaborate_configuration(self, m, routers):
        """The :class:`Configuration` of a reconfigurable fabric, fed by every router's
        ``idle`` and read by every router."""
        configuration = m.submodules.configuration = Configuration(
            self._n, drain_before_load=self.drain_before_load)
        wiring.connect(m, wiring.flipped(self.config), configuration.config)
        m.d.comb += [
            configuration.routers_idle.eq(Cat(*(router.idle for router in routers))),
            self.idle.eq(configuration.idle),
            self.config_refused.eq(configuration.config_refused),
            self.active_nodes.eq(configuration.active_nodes),
            self.mask.eq(configuration.mask),
        ]
        for node, router in enumerate(routers):
            m.d.comb += [
                router.active_nodes.eq(configuration.active_nodes),
                router.mask.eq(configuration.mask),
                self.logical_address[node].eq(router.logical_address),
                self.active[node].eq(router.active),
            ]

    def _place_router(self, m, node):
        """Add the router of ``node`` to ``m``; return the interface to wire it by."""
        if self._router_modules is None:
            return place_router(m, node, self.routers[node])
        return place_router(m, node, module=self._router_modules[node],
                            signature=router_signature(self._n, node, self.payload_width,
                                                       ports=self.ports,
                                                       reconfigurable=self.reconfigurable))
