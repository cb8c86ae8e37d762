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
    outputs : tuple of int or None
        The links the caller has wired to ``link`` (all of ``node``'s if None): a router
        input that can only use some links (:meth:`~ihcube.rtl.Router.outputs_of`) asks for
        those. A choice of any other link gives no ``link`` bit.
    runtime : bool
        Take the link-existence vector from the ``exists`` port instead of
        ``exists_mask(n, node)`` (a reconfigurable router's, computed from its configuration).

    Members
    -------
    address : ``In(address_bits(n))``
        This router's node number (a constant in a fabric).
    dest : ``In(address_bits(n))``
        Destination of the message.
    link : ``Out(len(outputs))``
        One-hot over ``outputs``, in increasing dimension.
    deliver : ``Out(1)``
        The message is for this node's PE.
    exists : ``In(dimensions(n))``
        With ``runtime`` only: the links that exist now, a subset of ``node``'s.
    """

    def __init__(self, n, node, order=topology.MSB_FIRST, outputs=None, runtime=False):
        n = self._n = topology.check_node_count(n)
        node = self._node = topology.check_node(n, node)
        self._order = topology.check_routing_order(order)
        self._dims = topology.links(n, node)
        self._outputs = self._dims if outputs is None else tuple(outputs)
        if not set(self._outputs) <= set(self._dims):
            raise ValueError(f"Outputs {self._outputs} are not all links of node {node} "
                             f"(n={n}): {self._dims}")
        self._runtime = bool(runtime)
        members = {
            "address": In(topology.address_bits(n)),
            "dest":    In(topology.address_bits(n)),
            "link":    Out(len(self._outputs)),
            "deliver": Out(1),
        }
        if self._runtime:
            members["exists"] = In(topology.dimensions(n))
        super().__init__(members)

    @property
    def dims(self):
        return self._dims

    @property
    def outputs(self):
        return self._outputs

    @property
    def usable(self):
        """The links the encoder may choose from: the link-existence vector of this node (the
        ``exists`` port with ``runtime``)."""
        return self.exists if self._runtime else topology.exists_mask(self._n, self._node)

    def elaborate(self, platform):
        m = Module()
        width = topology.dimensions(self._n)
        m.d.comb += self.deliver.eq(self.dest == self.address)
        if not width or not self._outputs:  # a single node, or an input for the PE only
            return m
        candidates = Signal(width)
        m.d.comb += candidates.eq((self.dest ^ self.address) & self.usable)

        # Scan so that the first bit in routing order is assigned last and wins.
        scan = range(width) if self._order == topology.MSB_FIRST else reversed(range(width))
        for dim in scan:
            with m.If(candidates[dim]):
                if dim in self._outputs:
                    m.d.comb += self.link.eq(1 << self._outputs.index(dim))
                else:  # a link not wired here, or (in a broken variant) a missing one
                    m.d.comb += self.link.eq(0)
        return m
