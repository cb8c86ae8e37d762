"""The first-set-bit route selector (Katseff, Algorithm 2, in hardware form)."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import topology

__all__ = ["RouteSelect"]


class RouteSelect(wiring.Component):
    """Choose the output of a unicast message at node ``node``.

    Combinational. A priority encoder over ``(address XOR dest) AND exists`` picks the
    first set bit in the routing order (:func:`ihcube.topology.first_set_bit`);
    ``dest == address`` delivers to the PE.

    Parameters
    ----------
    n : int
        Number of nodes.
    node : int
        A node with this router's links: the link-existence vector is ``exists_mask(n, node)``.
    order : ``"msb"`` or ``"lsb"``
        Which end of ``node XOR dest`` is scanned first.

    Members
    -------
    address : ``In(address_bits(n))``
        This router's node number (a constant in a fabric).
    dest : ``In(address_bits(n))``
        Destination of the message.
    link : ``Out(len(links(n, node)))``
        One-hot over this node's existing links, in increasing dimension.
    deliver : ``Out(1)``
        The message is for this node's PE.
    """

    def __init__(self, n, node, order=topology.MSB_FIRST):
        self._n = topology.check_node_count(n)
        self._node = topology.check_node(n, node)
        self._order = topology.check_routing_order(order)
        self._dims = topology.links(n, node)
        super().__init__({
            "address": In(topology.address_bits(n)),
            "dest":    In(topology.address_bits(n)),
            "link":    Out(len(self._dims)),
            "deliver": Out(1),
        })

    @property
    def dims(self):
        return self._dims

    @property
    def usable(self):
        """The links the encoder may choose from: the link-existence vector of this node."""
        return topology.exists_mask(self._n, self._node)

    def elaborate(self, platform):
        m = Module()
        width = topology.dimensions(self._n)
        m.d.comb += self.deliver.eq(self.dest == self.address)
        if not width:  # a single node: no link to choose
            return m
        candidates = Signal(width)
        m.d.comb += candidates.eq((self.dest ^ self.address) & self.usable)

        # Scan so that the first bit in routing order is assigned last and wins.
        scan = range(width) if self._order == topology.MSB_FIRST else reversed(range(width))
        for dim in scan:
            with m.If(candidates[dim]):
                if dim in self._dims:
                    m.d.comb += self.link.eq(1 << self._dims.index(dim))
                else:  # only where `usable` names a missing link (a broken variant)
                    m.d.comb += self.link.eq(0)
        return m
