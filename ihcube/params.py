"""Validation of parameters, with messages a user understands.

Node-level rules (node count, node number, routing order) live in ``ihcube.topology``; this
module holds the shared check they and the hardware parameters use, and the largest fabric
the hardware generator builds (:data:`MAX_FABRIC_NODES`, :data:`MAX_FABRIC_PAYLOAD_WIDTH`,
:data:`MAX_FABRIC_DEPTH`). The fast model takes larger values (``ihcube.sim.model``).
"""

import operator

__all__ = ["check_integer", "check_positive_integer", "check_at_most", "check_payload_width",
           "check_depth",
           "MAX_FABRIC_NODES", "MAX_FABRIC_PAYLOAD_WIDTH", "MAX_FABRIC_DEPTH",
           "check_fabric_payload_width", "check_fabric_depth", "max_ports", "check_ports",
           "PACKET", "WORMHOLE", "SWITCHING_MODES", "check_switching", "check_model_threads",
           "WORMHOLE_DEFAULTS", "MAX_FLITS", "MAX_VCS", "header_bits", "routing_bits",
           "HeadFields", "head_fields", "wormhole_parameters"]

# The generator's limits, measured on 2 cores (``ihcube verilog``, one process; the most
# link sets, so the most router modules, are at n = 4095): W = 64 takes 16 s and 0.3 GB,
# W = 1024 takes 82 s and 0.45 GB, depth 16 at W = 64 takes 28 s (depth 64: 202 s, the time
# growing faster than the depth), and the corner, W = 1024 and depth 16, 5.4 min and 0.6 GB.

#: Most nodes of a fabric in hardware (Router, Fabric, the Verilog generator). The channel
#: dependency graphs are checked acyclic up to here (``make deadlock``).
MAX_FABRIC_NODES = 4096
#: Widest payload in hardware, in bits. A router module's input ports must stay under the
#: 65,536 bits that Amaranth gives one cell (13 links' worth of messages of about 5,000 bits
#: at 4,096 nodes), and the time to write the routers grows with the width.
MAX_FABRIC_PAYLOAD_WIDTH = 1024
#: Most messages per input buffer in hardware. The buffers are flip-flops: a router holds
#: ``(links + 1) * depth`` messages, so its size and the time to write it grow with depth.
MAX_FABRIC_DEPTH = 16


def check_integer(value, what, allowed):
    """Return ``value`` as an ``int`` if it is an integer of any integer type (NumPy's
    ``int64`` too: whatever ``operator.index`` takes), else raise ``TypeError`` saying that
    ``what`` must be ``allowed``; ``bool`` and non-integers (``3.0``, ``"3"``) are not taken."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be {allowed}, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be {allowed}, not {value!r}") from None


def check_positive_integer(value, what):
    """Return ``value`` as an ``int`` if it is an integer >= 1 (:func:`check_integer`), else
    raise ``TypeError``/``ValueError``."""
    value = check_integer(value, what, "a positive integer")
    if value < 1:
        raise ValueError(f"{what} must be a positive integer, not {value!r}")
    return value


def check_at_most(value, most, what):
    """Return ``value`` if it is an integer from 1 to ``most``, else raise
    ``TypeError``/``ValueError``."""
    value = check_positive_integer(value, what)
    if value > most:
        raise ValueError(f"{what} must be an integer from 1 to {most}, not {value!r}")
    return value


def check_payload_width(width):
    """Return ``width`` if it is a valid payload width in bits, else raise."""
    return check_positive_integer(width, "Payload width")


def check_depth(depth):
    """Return ``depth`` if it is a valid buffer depth in messages, else raise."""
    return check_positive_integer(depth, "Buffer depth")


def check_fabric_payload_width(width):
    """Return ``width`` if it is a payload width the hardware takes, at most
    :data:`MAX_FABRIC_PAYLOAD_WIDTH`, else raise."""
    return check_at_most(width, MAX_FABRIC_PAYLOAD_WIDTH, "Payload width")


def check_fabric_depth(depth):
    """Return ``depth`` if it is a buffer depth the hardware takes, at most
    :data:`MAX_FABRIC_DEPTH`, else raise."""
    return check_at_most(depth, MAX_FABRIC_DEPTH, "Buffer depth")


def max_ports(n):
    """The most PE ports (injection and eject) a node of an ``n``-node fabric may have:
    ``D + 1``, one per link of a node of full degree plus one."""
    from .topology import dimensions  # topology imports this module
    return dimensions(n) + 1


def check_ports(n, ports):
    """Return ``ports`` if it is a port count for every node of an ``n``-node fabric, 1 to
    :func:`max_ports`, else raise ``TypeError``/``ValueError``.

    The count is the fabric's, the same at every node (a node with fewer links has ports its
    links never feed, which its own injections use), so that the Verilog top module has the
    same ports for every node."""
    ports = check_positive_integer(ports, "Port count")
    most = max_ports(n)
    if ports > most:
        raise ValueError(f"Port count must be an integer from 1 to {most} (D + 1) for {n} "
                         f"nodes, not {ports!r}")
    return ports


# --- Switching: packet (whole messages) or wormhole (flits, virtual channels) ---------------
#
# docs/wormhole.md describes the wormhole router; these are its parameters, checked once here
# for the Python API and the command line alike.

#: Whole messages of one link word each, switched whole (Katseff, Algorithm 3; the default).
PACKET = "packet"
#: Messages of ``flits`` flits, a head reserving the path (SPEC section 8).
WORMHOLE = "wormhole"
SWITCHING_MODES = (PACKET, WORMHOLE)

#: The wormhole parameters' defaults, stated once: 20-flit messages and 3 virtual channels as
#: Tzeng and Kumar simulate them, 32-bit flits (wide enough for the head flit's routing fields
#: up to :data:`MAX_FABRIC_NODES`), and 2 flits per virtual-channel buffer (one flit per cycle
#: per channel, as a two-message buffer gives in packet mode).
WORMHOLE_DEFAULTS = {"flits": 20, "flit_width": 32, "vcs": 3, "vc_depth": 2}
#: Most flits per message: the broadcast channel's buffer holds a whole message in flip-flops.
MAX_FLITS = 64
#: Most unicast virtual channels per link.
MAX_VCS = 8

def check_switching(switching):
    """Return ``switching`` if it is one of :data:`SWITCHING_MODES`, else raise."""
    if switching not in SWITCHING_MODES:
        raise ValueError(f"Switching must be one of 'packet' or 'wormhole', not {switching!r}")
    return switching


#: The most threads a fast model runs on: a thread holds a slice of the nodes, and more
#: threads than cores only wait for each other.
MAX_MODEL_THREADS = 1024


def check_model_threads(threads, switching=PACKET):
    """Return ``threads``, the threads a fast model is asked to run on (``--threads``), if it
    is a positive integer, and 1 with wormhole ``switching`` (the wormhole model has one
    thread); else raise ``TypeError``/``ValueError``."""
    threads = check_at_most(threads, MAX_MODEL_THREADS, "Thread count")
    if threads > 1 and switching == WORMHOLE:
        raise ValueError(f"Thread count must be 1 with wormhole switching (its model runs on "
                         f"one thread), not {threads!r}")
    return threads


def header_bits(n):
    """Bits of a message's header in an ``n``-node fabric: ``dest`` (or, in a broadcast, the
    travel vector) and ``src``, ``address_bits(n)`` each, and ``kind``, one bit
    (``docs/wormhole.md``, "Message layout")."""
    from .topology import address_bits  # topology imports this module
    return 2 * address_bits(n) + 1


def routing_bits(n):
    """Bits a router reads to route a head flit: ``dest`` and ``kind``, the narrowest flit of
    an ``n``-node fabric. ``src`` is for the receiving PE, not the routers."""
    from .topology import address_bits
    return address_bits(n) + 1


class HeadFields:
    """Where a message's header lies in its flits (:func:`head_fields`).

    ``dest`` is always the low ``address_bits`` bits of the head flit. When the header fits in
    one flit it is ``dest``, ``src``, ``kind`` from the low end (``kind_bit`` is ``2 *
    address_bits``); when it does not, the routing fields come first, ``dest`` then ``kind``
    (``kind_bit`` is ``address_bits``), and ``src`` follows from bit ``address_bits + 1``,
    its high bits in the low bits of the second flit. ``src_pieces`` are the parts of ``src``
    as ``(flit, low bit in the flit, width, low bit in src)``; ``free_bits`` is how many bits
    of the head flit are above the header (the message's first payload bits).
    """

    __slots__ = ("address_bits", "kind_bit", "src_pieces", "free_bits", "flit_width")

    def __init__(self, address_bits, flit_width):
        a, width = address_bits, flit_width
        self.address_bits, self.flit_width = a, width
        if width >= 2 * a + 1:
            self.kind_bit, self.src_pieces = 2 * a, ((0, a, a, 0),)
            self.free_bits = width - (2 * a + 1)
        else:
            low = width - (a + 1)  # src bits left in the head flit
            self.kind_bit = a
            self.src_pieces = ((0, a + 1, low, 0),) if low else ()
            self.src_pieces += ((1, 0, a - low, low),)
            self.free_bits = 0

    def src_width(self, flit):
        """The bits of flit number ``flit`` (from 0) that carry ``src``."""
        return sum(width for k, _, width, _ in self.src_pieces if k == flit)

    def stamp(self, flit, word, src):
        """``word``, flit number ``flit`` of a message, with ``src`` written into its part of
        the ``src`` field (what a router does at injection)."""
        for k, low, width, at in self.src_pieces:
            if k == flit:
                mask = ((1 << width) - 1) << low
                word = word & ~mask | (src >> at << low) & mask
        return word

    def src_of(self, words):
        """The ``src`` field of a message whose first flits are ``words``."""
        return sum((words[k] >> low & (1 << width) - 1) << at
                   for k, low, width, at in self.src_pieces)


def head_fields(n, flit_width):
    """The :class:`HeadFields` of an ``n``-node fabric with ``flit_width``-bit flits."""
    from .topology import address_bits
    return HeadFields(address_bits(n), flit_width)


def wormhole_parameters(n, payload_width=32, flits=None, flit_width=None, vcs=None,
                        vc_depth=None):
    """The checked :class:`ihcube.spec.Wormhole` of an ``n``-node fabric whose messages carry
    ``payload_width`` bits; None takes the default of :data:`WORMHOLE_DEFAULTS`. A message is
    ``header_bits(n) + payload_width`` bits; a flit holds at least the routing fields
    (``routing_bits(n)``), is no wider than the message, and ``flits`` flits hold it
    (:class:`ihcube.spec.FabricSpec` checks). Raises ``TypeError``/``ValueError``."""
    from .spec import FabricSpec  # spec imports this module
    return FabricSpec.of(n, payload_width, switching=WORMHOLE, flits=flits,
                         flit_width=flit_width, vcs=vcs, vc_depth=vc_depth).wormhole
