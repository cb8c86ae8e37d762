"""The flit: what crosses a link, one per cycle, in wormhole switching (``docs/wormhole.md``)."""

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import head_fields, header_bits
from ..topology import address_bits
from .message import Kind

__all__ = ["flit_layout", "header_layout", "routing_layout", "link_signature", "inject_signature",
           "eject_signature"]


def flit_layout(flit_width):
    """A flit: ``flit_width`` bits of ``payload`` and the ``head`` and ``tail`` marks (a
    one-flit message is both). A head flit's payload starts with :func:`routing_layout`."""
    return data.StructLayout({
        "payload": unsigned(flit_width),
        "head":    unsigned(1),
        "tail":    unsigned(1),
    })


def routing_layout(n, flit_width):
    """The fields a router reads at the low end of a head flit's payload: ``dest`` and
    ``kind``, where :func:`ihcube.params.head_fields` puts them (``src`` between them when
    the whole header fits in a flit, after them when it does not)."""
    fields = head_fields(n, flit_width)
    return data.FlexibleLayout(fields.kind_bit + 1, {
        "dest": data.Field(unsigned(address_bits(n)), 0),
        "kind": data.Field(Kind, fields.kind_bit),
    })


def header_layout(n):
    """The whole header at the low end of a head flit's payload, when it fits in one flit
    (:func:`ihcube.params.header_bits` wide).

    ``dest`` is the destination of a unicast and the travel vector of a broadcast (Katseff,
    Algorithm 6), which has no destination; ``src`` is stamped by the router at injection.
    """
    addr = unsigned(address_bits(n))
    layout = data.StructLayout({"dest": addr, "src": addr, "kind": Kind})
    assert layout.size == header_bits(n)
    return layout


def link_signature(n, flit_width, vcs):
    """One direction of a link, from the sender's side.

    ``valid``, ``vc`` and ``flit``: a flit on virtual channel ``vc`` (``0 .. vcs - 1`` the
    unicast channels, ``vcs`` the broadcast channel). ``ready``: bit ``v`` says the buffer of
    channel ``v`` at the far end has room in this cycle, a flip-flop there; the sender offers a
    flit on ``v`` only then, and it is taken. ``idle``: the far end's broadcast buffer is empty
    in this cycle (a flip-flop), so a whole message fits in it.
    """
    return wiring.Signature({
        "valid": Out(1),
        "vc":    Out(range(vcs + 1)),
        "flit":  Out(flit_layout(flit_width)),
        "ready": In(vcs + 1),
        "idle":  In(1),
    })


def inject_signature(flit_width):
    """What the PE injects: a stream of ``flit_width``-bit flits, every ``flits`` of them one
    message whose first is the head (the router marks head and tail)."""
    return stream.Signature(unsigned(flit_width))


def eject_signature(flit_width):
    """What the PE receives: a stream of flits (:func:`flit_layout`), each message's flits
    together, head first, tail last."""
    return stream.Signature(flit_layout(flit_width))
