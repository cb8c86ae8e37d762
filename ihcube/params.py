"""Validation of parameters, with messages a user understands.

Node-level rules (node count, node number, routing order) live in ``ihcube.topology``; this
module holds the shared check they and the hardware parameters use, and the largest fabric
the hardware generator builds (:data:`MAX_FABRIC_NODES`, :data:`MAX_FABRIC_PAYLOAD_WIDTH`,
:data:`MAX_FABRIC_DEPTH`). The fast model takes larger values (``ihcube.sim.model``).
"""

import operator

__all__ = ["check_positive_integer", "check_at_most", "check_payload_width", "check_depth",
           "MAX_FABRIC_NODES", "MAX_FABRIC_PAYLOAD_WIDTH", "MAX_FABRIC_DEPTH",
           "check_fabric_payload_width", "check_fabric_depth", "LINK_STAGES",
           "check_link_stages", "SWITCH_STAGES", "check_switch_stages", "EJECT_STAGES",
           "check_eject_stages", "STAGE_SUFFIXES", "check_stages", "stages_suffix",
           "check_no_stages", "stages_label", "describe_stages", "zero_load_cycles", "max_ports",
           "check_ports",
           "PACKET", "WORMHOLE", "SWITCHING_MODES", "check_switching", "check_model_threads",
           "WORMHOLE_DEFAULTS",
           "MAX_FLITS", "MAX_VCS", "header_bits", "routing_bits", "HeadFields",
           "head_fields", "wormhole_parameters",
           "switching_parameters"]

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


def check_positive_integer(value, what):
    """Return ``value`` as an ``int`` if it is an integer >= 1, else raise
    ``TypeError``/``ValueError``. Any integer type is taken (NumPy's ``int64`` too: whatever
    ``operator.index`` takes); ``bool`` and non-integers (``3.0``, ``"3"``) are not."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a positive integer, not {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be a positive integer, not {value!r}") from None
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


#: Register stages a message can pass on its way out of a router onto a link
#: (:class:`ihcube.rtl.Router`'s ``link_stages``): 0 (the default, one cycle per hop) or 1.
LINK_STAGES = (0, 1)


def _check_stages(stages, allowed, what):
    """Return ``stages`` if it is an integer in ``allowed``, else raise
    ``TypeError``/``ValueError`` saying ``what`` must be one of them."""
    choices = " or ".join(map(str, allowed))
    if isinstance(stages, bool):
        raise TypeError(f"{what} must be {choices}, not {stages!r}")
    try:
        stages = operator.index(stages)
    except TypeError:
        raise TypeError(f"{what} must be {choices}, not {stages!r}") from None
    if stages not in allowed:
        raise ValueError(f"{what} must be {choices}, not {stages!r}")
    return stages


def check_link_stages(stages):
    """Return ``stages`` if it is one of :data:`LINK_STAGES`, else raise
    ``TypeError``/``ValueError``."""
    return _check_stages(stages, LINK_STAGES, "Link stages")


#: Register stages between a router's switch allocation and its crossbar
#: (:class:`ihcube.rtl.Router`'s ``switch_stages``): 0 (the default, one cycle per router) or
#: 1 (a registered grant, a cycle more per router; ``docs/fpga.md``, "Pipelined switch").
SWITCH_STAGES = (0, 1)


def check_switch_stages(stages):
    """Return ``stages`` if it is one of :data:`SWITCH_STAGES`, else raise
    ``TypeError``/``ValueError``."""
    return _check_stages(stages, SWITCH_STAGES, "Switch stages")


#: Relays on a router's eject ports (:class:`ihcube.rtl.Router`'s ``eject_stages``): 0 (the
#: default) or 1 (a relay between each eject port's crossbar and the PE, a cycle more per
#: delivery; ``docs/fpga.md``, "Every output staged").
EJECT_STAGES = (0, 1)


def check_eject_stages(stages):
    """Return ``stages`` if it is one of :data:`EJECT_STAGES`, else raise
    ``TypeError``/``ValueError``."""
    return _check_stages(stages, EJECT_STAGES, "Eject stages")


#: The register stages of a packet router, by the keyword that :class:`ihcube.rtl.Router`,
#: :class:`ihcube.rtl.Fabric`, :class:`ihcube.sim.model.Model`, the generator and the
#: commands take (``--link-stages``, ...), each with the letter it adds to a generated
#: fabric's name: ``ihcube_n26_w32_s1_g1_e1`` has all three.
STAGE_SUFFIXES = {"link_stages": "s", "switch_stages": "g", "eject_stages": "e"}


def check_stages(link_stages=0, switch_stages=0, eject_stages=0):
    """Return the checked register stages of a packet router as a dict of those that are
    not 0, in :data:`STAGE_SUFFIXES` order: the keywords to pass on (empty for the default
    router, so that whatever predates an option builds exactly as before)."""
    checked = {"link_stages": check_link_stages(link_stages),
               "switch_stages": check_switch_stages(switch_stages),
               "eject_stages": check_eject_stages(eject_stages)}
    return {key: value for key, value in checked.items() if value}


def check_no_stages(stages):
    """Raise ``ValueError`` naming the first of ``stages`` (a dict of :func:`check_stages`)
    if there is one: the stages are a packet-switching option, and wormhole switching takes
    none."""
    for key, value in stages.items():
        raise ValueError(f"{key.replace('_', ' ').capitalize()} are a packet-switching "
                         f"option, not taken with wormhole switching, not {value!r}")


def stages_suffix(stages):
    """What the stages ``stages`` (a dict of :func:`check_stages`) add to a generated
    fabric's name: ``_s1`` for a link stage, ``_s1_g1_e1`` for all three, ``""`` for none."""
    return "".join(f"_{STAGE_SUFFIXES[key]}{value}" for key, value in stages.items())


def stages_label(stages):
    """The stages ``stages`` (a dict of :func:`check_stages`) in a few words, for the lines
    the commands print and the tables' rows: ``"1 link stage, 1 eject stage"``; ``""`` for
    none."""
    return ", ".join(f"{value} {key.split('_')[0]} stage{'s' if value != 1 else ''}"
                     for key, value in stages.items())


#: What each register stage costs, in cycles, for :func:`describe_stages`.
STAGE_COSTS = {"link_stages": "a cycle more per hop", "switch_stages": "a cycle more per router",
               "eject_stages": "a cycle more per delivery"}


def describe_stages(stages):
    """The stages ``stages`` (a dict of :func:`check_stages`) in words, with what each
    costs: ``"link stages 1 (a cycle more per hop)"``; ``""`` for none."""
    return ", ".join(f"{key.replace('_', ' ')} {value} ({STAGE_COSTS[key]})"
                     for key, value in stages.items())


def zero_load_cycles(hops, link_stages=0, switch_stages=0, eject_stages=0):
    """The cycles from the cycle a message is taken to the cycle it is delivered ``hops``
    links away, alone in a packet fabric with these register stages: each router it passes
    holds it a cycle and a switch stage more, each link's relay a cycle, the eject relay a
    cycle (``hops + 1`` without stages; ``3 hops + 3`` with all three)."""
    return hops * (1 + link_stages + switch_stages) + 1 + switch_stages + eject_stages


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


def check_model_threads(threads, switching=PACKET):
    """Return ``threads``, the threads a fast model is asked to run on (``--threads``), if it
    is a positive integer, and 1 with wormhole ``switching`` (the wormhole model has one
    thread); else raise ``TypeError``/``ValueError``."""
    threads = check_positive_integer(threads, "Thread count")
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


def switching_parameters(n, payload_width=32, switching=PACKET, **flit_options):
    """Check ``switching`` and the flit-level options with it: None for packet switching
    (which takes none of them: giving one is an error), a :class:`ihcube.spec.Wormhole` for
    wormhole. ``flit_options`` are ``flits``, ``flit_width``, ``vcs`` and ``vc_depth``, None
    when not given."""
    from .spec import WORMHOLE_OPTIONS, FabricSpec
    unknown = set(flit_options) - set(WORMHOLE_OPTIONS)
    if unknown:
        raise TypeError(f"Unknown flit-level option {sorted(unknown)[0]!r}; the options are "
                        f"{', '.join(WORMHOLE_OPTIONS)}")
    return FabricSpec.of(n, payload_width, switching=switching, **flit_options).wormhole
