"""The message that crosses a link, and what the PE injects."""

from amaranth.hdl import unsigned
from amaranth.lib import data, enum

from ..params import check_payload_width
from ..topology import address_bits

__all__ = ["Kind", "message_layout", "inject_layout"]


class Kind(enum.Enum, shape=1):
    """Whether a message goes to one node or to all of them."""
    UNICAST   = 0
    BROADCAST = 1


def message_layout(n, payload_width=32):
    """The layout of a message on a link of an ``n``-node fabric.

    ``travel`` is the broadcast travel vector (Katseff, Algorithm 6), meaningful for
    broadcasts only. Addresses and the travel vector are :func:`~ihcube.topology.address_bits`
    wide. On a link a broadcast's ``dest`` (meaningless) has the bits of
    :func:`~ihcube.topology.known_dest_mask` set to the far end's
    (:func:`~ihcube.topology.relayed_dest`); on an eject port ``dest`` is the node that
    takes the message and ``travel`` is 0, whatever the kind.
    """
    check_payload_width(payload_width)
    addr = unsigned(address_bits(n))
    return data.StructLayout({
        "dest":    addr,
        "src":     addr,
        "kind":    Kind,
        "travel":  addr,
        "payload": unsigned(payload_width),
    })


def inject_layout(n, payload_width=32):
    """The layout of what a PE injects: ``dest`` is ignored for broadcasts."""
    check_payload_width(payload_width)
    return data.StructLayout({
        "dest":    unsigned(address_bits(n)),
        "kind":    Kind,
        "payload": unsigned(payload_width),
    })
