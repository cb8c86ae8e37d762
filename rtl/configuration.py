"""The configuration registers of a reconfigurable fabric (``docs/reconfiguration-hardware.md``)."""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import topology

__all__ = ["Configuration", "configuration_layout"]


def configuration_layout(n):
    """What a reconfigurable fabric of ``n`` physical routers loads: the active node count
    (``n.bit_length()`` bits) and the mask of the mapping (an address)."""
    return data.StructLayout({"active_nodes": unsigned(n.bit_length()),
                              "mask": unsigned(topology.address_bits(n))})


class Configuration(wiring.Component):
    """The configuration that every router of a reconfigurable fabric of ``n`` routers reads:
    ``active_nodes`` and ``mask`` (router ``p``'s logical address is ``p XOR mask``).

    After reset it is ``n`` active nodes and mask 0, the fixed fabric. A configuration offered
    on ``config`` is taken in a cycle in which the fabric is idle (``config.ready`` is
    ``idle``: every router idle, which includes that no PE offers a message), and holds from
    the next cycle if it fits (:func:`ihcube.topology.configuration_fits`); one that does not
    fit is taken and refused, and the one before holds. A load offered while messages are in
    flight waits until they are delivered: a message never sees two configurations.

    Parameters
    ----------
    n : int
        Physical routers.
    drain_before_load : bool
        Take a configuration only while idle (the negative control's fabric clears it).

    Members
    -------
    config : ``In(stream.Signature(configuration_layout(n)))``
        The configuration to load.
    config_refused : ``Out(1)``
        The last configuration taken did not fit.
    routers_idle : ``In(n)``
        Each router's ``idle``.
    idle : ``Out(1)``
        Every router idle.
    active_nodes, mask : ``Out(n.bit_length())``, ``Out(address_bits(n))``
        The configuration that holds.
    """

    def __init__(self, n, drain_before_load=True):
        n = self._n = topology.check_fabric_node_count(n)
        self._drain_before_load = bool(drain_before_load)
        super().__init__({
            "config":         In(stream.Signature(configuration_layout(n))),
            "config_refused": Out(1),
            "routers_idle":   In(n),
            "idle":           Out(1),
            "active_nodes":   Out(n.bit_length(), init=n),
            "mask":           Out(topology.address_bits(n)),
        })

    def elaborate(self, platform):
        m = Module()
        request = self.config.payload
        m.d.comb += [
            self.idle.eq(self.routers_idle.all()),
            self.config.ready.eq(self.idle if self._drain_before_load else 1),
        ]
        fits = Signal(name="fits")
        m.d.comb += fits.eq(topology.configuration_fits(self._n, request.active_nodes,
                                                        request.mask, dims=len(self.mask)))
        with m.If(self.config.valid & self.config.ready):
            with m.If(fits):
                m.d.sync += [
                    self.active_nodes.eq(request.active_nodes),
                    self.mask.eq(request.mask),
                    self.config_refused.eq(0),
                ]
            with m.Else():
                m.d.sync += self.config_refused.eq(1)
        return m
