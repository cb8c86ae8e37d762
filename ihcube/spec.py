"""The fabric description: every parameter of a fabric in one checked, frozen object.

A :class:`FabricSpec` is what the hardware (:class:`ihcube.rtl.Router`,
:class:`ihcube.rtl.Fabric` and their wormhole twins), the fast models, the Verilog generator,
the stress runs, the experiments, the FPGA builds and the command line take. It is checked
once, when it is made, with the one-line messages of :mod:`ihcube.params`; it names its
file once (:attr:`FabricSpec.name`); and a new option is a field here, not a keyword threaded
through every signature (``docs/howto.md``, "Add a fabric option").

Its switching mode is its own value, :class:`Packet` (whole messages; buffer depth, PE
ports and :class:`Stages`) or :class:`Wormhole` (flits and virtual channels): an option of one
mode cannot be given to the other. What each mode provides to the shared machinery (router,
model, stress, faults, lint, formal, synthesis) is in :mod:`ihcube.modes`.

The checks here are the rules of the network (a positive node count, ports at most
``D + 1``, a flit that holds the routing fields, ...). The limits of one implementation are
checked where they hold: :meth:`FabricSpec.check_hardware` for the RTL and the generator
(:data:`~ihcube.params.MAX_FABRIC_NODES` ...), :class:`ihcube.sim.model.Model` for its
kernel's.
"""

import dataclasses
from typing import Union

from . import topology
from .axis import AXIS, NATIVE, check_axis, check_interface
from .params import (MAX_FABRIC_DEPTH, MAX_FABRIC_NODES, MAX_FABRIC_PAYLOAD_WIDTH, MAX_FLITS,
                     MAX_VCS, PACKET, WORMHOLE, WORMHOLE_DEFAULTS, check_at_most, check_depth,
                     check_fabric_depth, check_fabric_payload_width, check_integer,
                     check_payload_width, check_ports, check_positive_integer, check_switching,
                     header_bits, routing_bits)

__all__ = ["Stages", "Packet", "Wormhole", "FabricSpec", "as_spec", "as_wormhole_spec",
           "Option", "OPTIONS"]


@dataclasses.dataclass(frozen=True)
class Stages:
    """The register stages of a packet router, each 0 (the default) or 1.

    Members
    -------
    link : int
        A relay on each outgoing link, a cycle more per hop.
    switch : int
        Each output's grant registered, a cycle more per router (and a refused injection
        counted a cycle later).
    eject : int
        A relay on each eject port, a cycle more per delivery.
    """

    link: int = 0
    switch: int = 0
    eject: int = 0

    #: Each stage's keyword (:class:`ihcube.rtl.Router`'s, the command line's with dashes),
    #: the letter it adds to a fabric's name, and what it costs.
    FIELDS = {"link": ("link_stages", "s", "a cycle more per hop"),
              "switch": ("switch_stages", "g", "a cycle more per router"),
              "eject": ("eject_stages", "e", "a cycle more per delivery")}
    #: What each stage adds to the router.
    PARTS = {"link": "a relay on each outgoing link", "switch": "each router's grant registered",
             "eject": "a relay on each eject port"}

    #: The values each stage takes.
    ALLOWED = (0, 1)

    def __post_init__(self):
        for field, (keyword, _, _) in self.FIELDS.items():
            object.__setattr__(self, field, self.check(getattr(self, field), keyword))

    @classmethod
    def check(cls, value, keyword):
        """Return ``value`` if it is one of :data:`ALLOWED` for the stage ``keyword``
        (``"link_stages"``, ...), else raise ``TypeError``/``ValueError`` saying what is."""
        what = keyword.replace("_", " ").capitalize()
        choices = " or ".join(map(str, cls.ALLOWED))
        value = check_integer(value, what, choices)
        if value not in cls.ALLOWED:
            raise ValueError(f"{what} must be {choices}, not {value!r}")
        return value

    @classmethod
    def of(cls, link_stages=0, switch_stages=0, eject_stages=0):
        """The stages of the keywords ``link_stages``, ``switch_stages``, ``eject_stages``."""
        return cls(link_stages, switch_stages, eject_stages)

    def keywords(self):
        """The stages that are not 0, as the keywords of :meth:`of` (``{}`` for none)."""
        return {self.FIELDS[field][0]: value for field, value in self._items() if value}

    def _items(self):
        return ((field, getattr(self, field)) for field in self.FIELDS)

    def __bool__(self):
        return any(value for _, value in self._items())

    @property
    def suffix(self):
        """What the stages add to a fabric's name: ``_s1``, ``_s1_g1_e1``, ``""``."""
        return "".join(f"_{self.FIELDS[field][1]}{value}" for field, value in self._items()
                       if value)

    @property
    def label(self):
        """The stages in a few words: ``"1 link stage, 1 eject stage"``; ``""`` for none."""
        return ", ".join(f"{value} {field} stage{'s' if value != 1 else ''}"
                         for field, value in self._items() if value)

    @property
    def description(self):
        """The stages in words with their cost: ``"link stages 1 (a cycle more per hop)"``."""
        return ", ".join(f"{field} stages {value} ({self.FIELDS[field][2]})"
                         for field, value in self._items() if value)

    def zero_load_cycles(self, hops):
        """The cycles from the cycle a message is taken to the cycle it is delivered ``hops``
        links away, alone in the fabric: each router holds it a cycle and a switch stage
        more, each link's relay a cycle, the eject relay a cycle (``hops + 1`` without
        stages; ``3 hops + 3`` with all three)."""
        return hops * (1 + self.link + self.switch) + 1 + self.switch + self.eject


@dataclasses.dataclass(frozen=True)
class Packet:
    """Packet switching (Katseff, Algorithm 3; the default): whole messages of one link word.

    Members
    -------
    depth : int
        Messages per input buffer (1: SPEC's one-message buffer).
    ports : int
        PE injection and eject ports per node, 1 to ``D + 1`` (checked against the node
        count by :class:`FabricSpec`).
    stages : Stages
        The register stages.
    """

    depth: int = 1
    ports: int = 1
    stages: Stages = Stages()

    mode = PACKET

    def __post_init__(self):
        object.__setattr__(self, "depth", check_depth(self.depth))
        object.__setattr__(self, "ports", check_positive_integer(self.ports, "Port count"))
        if not isinstance(self.stages, Stages):
            raise TypeError(f"Stages must be a Stages, not {self.stages!r}")


@dataclasses.dataclass(frozen=True)
class Wormhole:
    """Wormhole switching with virtual channels (SPEC section 8; ``docs/wormhole.md``).

    The flit width is checked against the node count and payload width by
    :class:`FabricSpec` (a flit holds the routing fields, a message fits in its flits).

    Members
    -------
    flits : int
        ``L``, flits per message, 1 to :data:`~ihcube.params.MAX_FLITS`.
    flit_width : int
        Bits per flit.
    vcs : int
        Unicast virtual channels per link, 1 to :data:`~ihcube.params.MAX_VCS`; each link
        also has one broadcast channel.
    vc_depth : int
        Flits per unicast virtual-channel buffer.
    """

    flits: int = WORMHOLE_DEFAULTS["flits"]
    flit_width: int = WORMHOLE_DEFAULTS["flit_width"]
    vcs: int = WORMHOLE_DEFAULTS["vcs"]
    vc_depth: int = WORMHOLE_DEFAULTS["vc_depth"]

    mode = WORMHOLE

    def __post_init__(self):
        object.__setattr__(self, "flits", check_at_most(self.flits, MAX_FLITS, "Flit count"))
        object.__setattr__(self, "vcs", check_at_most(self.vcs, MAX_VCS,
                                                      "Virtual channel count"))
        object.__setattr__(self, "vc_depth", check_at_most(self.vc_depth, MAX_FABRIC_DEPTH,
                                                           "Virtual channel depth"))
        object.__setattr__(self, "flit_width",
                           check_positive_integer(self.flit_width, "Flit width"))

    def __repr__(self):
        return (f"Wormhole(flits={self.flits}, flit_width={self.flit_width}, vcs={self.vcs}, "
                f"vc_depth={self.vc_depth})")


@dataclasses.dataclass(frozen=True)
class FabricSpec:
    """An incomplete-hypercube fabric, checked: every parameter the hardware, the models and
    the commands take.

    Members
    -------
    nodes : int
        ``n``, any positive integer (the hardware's limit: :meth:`check_hardware`).
    payload_width : int
        Payload bits per message.
    order : ``"msb"`` or ``"lsb"``
        Routing order (SPEC section 2).
    switching : Packet or Wormhole
        The switching mode and its own options.
    interface : ``"native"`` or ``"axis"``
        The PE ports of the generated Verilog: valid/ready streams (``docs/ports.md``), or
        AXI4-Stream (``docs/axis.md``, :mod:`ihcube.axis`).
    reconfigurable : bool
        ``nodes`` physical routers whose active size and logical addresses are loaded at run
        time (``docs/reconfiguration-hardware.md``); packet switching with one PE port.
    """

    nodes: int
    payload_width: int = 32
    order: str = topology.MSB_FIRST
    switching: Union[Packet, Wormhole] = Packet()
    interface: str = NATIVE
    reconfigurable: bool = False

    def __post_init__(self):
        n = topology.check_node_count(self.nodes)
        object.__setattr__(self, "nodes", n)
        width = check_payload_width(self.payload_width)
        object.__setattr__(self, "payload_width", width)
        object.__setattr__(self, "order", topology.check_routing_order(self.order))
        switching = self.switching
        if isinstance(switching, Packet):
            check_ports(n, switching.ports)
        elif isinstance(switching, Wormhole):
            header, routing = header_bits(n), routing_bits(n)
            message = header + width
            if not routing <= switching.flit_width <= message:
                raise ValueError(
                    f"Flit width must be an integer from {routing} (the head flit's routing "
                    f"fields, destination and kind) to {message} (the whole message: header "
                    f"{header} + payload {width} bits) for {n} nodes, not "
                    f"{switching.flit_width!r}")
            if switching.flits * switching.flit_width < message:
                least = -(-message // switching.flit_width)
                raise ValueError(f"Flit count must be at least {least} to carry a "
                                 f"{message}-bit message in {switching.flit_width}-bit flits, "
                                 f"not {switching.flits!r}")
        else:
            raise TypeError(f"Switching must be a Packet or a Wormhole, not {switching!r}")
        if check_interface(self.interface) == AXIS:
            check_axis(self)
        if not isinstance(self.reconfigurable, bool):
            raise TypeError(f"Reconfigurable must be True or False, not "
                            f"{self.reconfigurable!r}")
        if self.reconfigurable and self.interface != NATIVE:
            raise ValueError(f"Reconfigurable (--reconfigurable) takes the native interface, "
                             f"not {self.interface!r}")
        if self.reconfigurable and n < 2:
            raise ValueError(f"Node count must be at least 2 for a reconfigurable fabric, not "
                             f"{n!r}")
        if self.reconfigurable and not (isinstance(switching, Packet) and switching.ports == 1):
            raise ValueError("Reconfigurable (--reconfigurable) takes packet switching with one "
                             "PE port, not " + (f"{switching.ports} ports"
                                                if isinstance(switching, Packet)
                                                else "wormhole switching"))

    # --- Made from the keyword forms ---------------------------------------------------

    @classmethod
    def of(cls, nodes, payload_width=32, depth=1, order=topology.MSB_FIRST, ports=1, *,
           switching=PACKET, link_stages=0, switch_stages=0, eject_stages=0, flits=None,
           flit_width=None, vcs=None, vc_depth=None, interface=NATIVE,
           reconfigurable=False):
        """The spec of the keyword forms the components, the generator and the commands
        have always taken (``Fabric(26, depth=2)``, ``fabric_name(26, switching="wormhole",
        vcs=1)``). A flit-level option with packet switching, or a packet option (depth,
        ports, stages) with wormhole switching, is an error; a flit-level option that is
        None takes its default."""
        n = topology.check_node_count(nodes)
        switching = check_switching(switching)
        flit_options = {"flits": flits, "flit_width": flit_width, "vcs": vcs,
                        "vc_depth": vc_depth}
        stages = Stages.of(link_stages, switch_stages, eject_stages)
        if switching == PACKET:
            for name, value in flit_options.items():
                if value is not None:
                    option = next(option for option in OPTIONS if option.keyword == name)
                    raise ValueError(f"{option.what} ({option.flag}) is a wormhole option, "
                                     f"not taken with "
                                     f"packet switching: give switching 'wormhole' or leave "
                                     f"it out")
            mode = Packet(depth, ports, stages)
        else:
            mode = Wormhole(**{name: WORMHOLE_DEFAULTS[name] if value is None else value
                               for name, value in flit_options.items()})
            for key, value in stages.keywords().items():
                raise ValueError(f"{key.replace('_', ' ').capitalize()} are a "
                                 f"packet-switching option, not taken with wormhole "
                                 f"switching, not {value!r}")
            check_depth(depth)
            if depth != 1:
                raise ValueError(f"Buffer depth is a packet-switching option, not taken with "
                                 f"wormhole switching (its buffers are vc_depth flits), not "
                                 f"{depth!r}")
            check_positive_integer(ports, "Port count")
            if ports != 1:
                raise ValueError(f"Port count must be 1 with wormhole switching, not "
                                 f"{ports!r}")
        return cls(n, payload_width, order, mode, NATIVE if interface is None else interface,
                   reconfigurable)

    # --- What it is --------------------------------------------------------------------

    @property
    def mode(self):
        """``"packet"`` or ``"wormhole"`` (:data:`~ihcube.params.SWITCHING_MODES`)."""
        return self.switching.mode

    @property
    def packet(self):
        """Whether the spec is packet switching."""
        return self.switching.mode == PACKET

    @property
    def depth(self):
        """Messages per input buffer (packet switching; 1 with wormhole switching)."""
        return self.switching.depth if self.packet else 1

    @property
    def ports(self):
        """PE ports per node (1 with wormhole switching)."""
        return self.switching.ports if self.packet else 1

    @property
    def stages(self):
        """The register stages (none with wormhole switching)."""
        return self.switching.stages if self.packet else Stages()

    @property
    def wormhole(self):
        """The :class:`Wormhole` options, or None with packet switching."""
        return None if self.packet else self.switching

    def replace(self, **changes):
        """This spec with ``changes`` replaced, checked again: fields of the spec, of its
        switching mode (``depth``, ``vcs``, ...) or, with packet switching, the register
        stages by their keywords (``link_stages``, ...)."""
        own = {key: changes.pop(key) for key in list(changes)
               if key in {f.name for f in dataclasses.fields(self)}}
        stages = {field: changes.pop(keyword) for field, (keyword, _, _) in Stages.FIELDS.items()
                  if keyword in changes}
        if stages:
            changes["stages"] = dataclasses.replace(self.stages, **stages)
        if changes:
            own.setdefault("switching", dataclasses.replace(self.switching, **changes))
        return dataclasses.replace(self, **own)

    def check_hardware(self):
        """Return the spec if the hardware generator builds it (at most
        :data:`~ihcube.params.MAX_FABRIC_NODES` nodes,
        :data:`~ihcube.params.MAX_FABRIC_PAYLOAD_WIDTH` payload bits,
        :data:`~ihcube.params.MAX_FABRIC_DEPTH` messages per buffer), else raise."""
        topology.check_fabric_node_count(self.nodes)
        check_fabric_payload_width(self.payload_width)
        if self.packet:
            check_fabric_depth(self.depth)
        return self

    @property
    def name(self):
        """The top module's name, which is also the file's: ``n`` and ``W``, and the depth,
        routing order, port count and register stages when they are not the defaults
        (``ihcube_n26_w32_s1_g1_e1``), and ``_reconf`` last for a reconfigurable fabric. A
        wormhole fabric's says ``wormhole``, its flit width,
        flits and virtual channels, and their depth when not the default
        (``ihcube_n26_wormhole_f32_l20_v3``)."""
        n, order = self.nodes, self.order
        if not self.packet:
            wh = self.switching
            name = f"ihcube_n{n}_wormhole_f{wh.flit_width}_l{wh.flits}_v{wh.vcs}"
            if wh.vc_depth != WORMHOLE_DEFAULTS["vc_depth"]:
                name += f"_q{wh.vc_depth}"
            name += "" if order == topology.MSB_FIRST else f"_{order}"
            return name + ("" if self.interface == NATIVE else f"_{self.interface}")
        name = f"ihcube_n{n}_w{self.payload_width}"
        if self.depth != 1:
            name += f"_d{self.depth}"
        if order != topology.MSB_FIRST:
            name += f"_{order}"
        if self.ports != 1:
            name += f"_p{self.ports}"
        return (name + self.stages.suffix + ("_reconf" if self.reconfigurable else "")
                + ("" if self.interface == NATIVE else f"_{self.interface}"))

    def keywords(self):
        """The spec as the keywords of :meth:`of` that differ from their defaults, beside
        ``nodes``: what a command line or a record shows of it."""
        keywords = {"nodes": self.nodes}
        if self.payload_width != 32:
            keywords["payload_width"] = self.payload_width
        if self.order != topology.MSB_FIRST:
            keywords["order"] = self.order
        if self.packet:
            if self.depth != 1:
                keywords["depth"] = self.depth
            if self.ports != 1:
                keywords["ports"] = self.ports
            keywords.update(self.stages.keywords())
        else:
            keywords["switching"] = WORMHOLE
            keywords.update(dataclasses.asdict(self.switching))
        if self.interface != NATIVE:
            keywords["interface"] = self.interface
        if self.reconfigurable:
            keywords["reconfigurable"] = True
        return keywords


def as_wormhole_spec(spec_or_nodes, wormhole=None, order=topology.MSB_FIRST):
    """``spec_or_nodes`` if it is a wormhole :class:`FabricSpec` (and nothing else is given),
    else the spec of the older form ``(n, wormhole, order)`` of the wormhole components and
    model, whose payload width is what the flits carry beside the header (the hardware does
    not depend on it)."""
    if isinstance(spec_or_nodes, FabricSpec):
        if wormhole is not None:
            raise TypeError(f"Give a FabricSpec alone or the parameters without one, not both: "
                            f"{spec_or_nodes!r} and {wormhole!r}")
        if spec_or_nodes.packet:
            raise ValueError(f"A wormhole component needs a wormhole spec, not "
                             f"{spec_or_nodes!r}")
        return spec_or_nodes
    if not isinstance(wormhole, Wormhole):
        raise TypeError(f"Wormhole parameters must be a Wormhole (ihcube.spec.Wormhole), not "
                        f"{wormhole!r}")
    n = topology.check_node_count(spec_or_nodes)
    header = header_bits(n)
    carried = min(wormhole.flits * wormhole.flit_width - header, MAX_FABRIC_PAYLOAD_WIDTH)
    return FabricSpec(n, max(carried, wormhole.flit_width - header, 1), order, wormhole)


def as_spec(spec_or_nodes, *args, **keywords):
    """``spec_or_nodes`` if it is a :class:`FabricSpec` (and nothing else is given), else the
    spec of the keyword form ``FabricSpec.of(spec_or_nodes, *args, **keywords)``: how the
    components keep taking ``Fabric(26, depth=2)`` beside ``Fabric(spec)``."""
    if isinstance(spec_or_nodes, FabricSpec):
        if args or keywords:
            raise TypeError(f"Give a FabricSpec alone or the parameters without one, not both: "
                            f"{spec_or_nodes!r} and {(*args, *keywords)!r}")
        return spec_or_nodes
    return FabricSpec.of(spec_or_nodes, *args, **keywords)



# --- The options, declared once -----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Option:
    """One option of a fabric as the commands take it: the keyword of :meth:`FabricSpec.of`,
    its command-line flag (and short flag), what a message calls it, and its help. The
    command line's option group (``ihcube.cli.options.add_fabric_options``) is made from
    :data:`OPTIONS`, so a new option is a field of the spec and a row there.

    Members
    -------
    keyword, flag, what, help : str
    metavar : str or None
    default : str or None
        The command line's default, as text; None leaves it to the spec (a wormhole option's
        default is :data:`~ihcube.params.WORMHOLE_DEFAULTS`'s, and not given with packet
        switching).
    kind : ``"integer"``, ``"name"``, ``"stage"`` or ``"flag"``
        How its text is read: a decimal integer, a name the spec checks, a register stage
        (0 or 1), or a flag that takes no value (True when given).
    short : str or None
    """

    keyword: str
    flag: str
    what: str
    metavar: Union[str, None]
    help: str
    default: Union[str, None]
    kind: str = "integer"
    short: Union[str, None] = None

    @property
    def dest(self):
        """The attribute of the parsed arguments: the flag's name with underscores."""
        return self.flag[2:].replace("-", "_")


_D = WORMHOLE_DEFAULTS
#: Every option of a fabric, in the order ``--help`` lists them.
OPTIONS = (
    Option("nodes", "--nodes", "Node count", "N", f"number of nodes, 1 to {MAX_FABRIC_NODES}",
           None, short="-n"),
    Option("payload_width", "--width", "Payload width", "W",
           f"payload width in bits, 1 to {MAX_FABRIC_PAYLOAD_WIDTH} (default 32)", "32",
           short="-w"),
    Option("depth", "--depth", "Buffer depth", "DEPTH",
           f"packet switching: messages per input buffer, 1 to {MAX_FABRIC_DEPTH} (default 1)",
           "1", short="-d"),
    Option("order", "--order", "Routing order", None, "routing order: msb (default) or lsb",
           topology.MSB_FIRST, kind="name"),
    Option("ports", "--ports", "Port count", "P",
           "packet switching: PE injection and eject ports per node, 1 to D + 1 (default 1)",
           "1", short="-p"),
    Option("switching", "--switching", "Switching", None,
           "packet (default: whole messages) or wormhole (flits and virtual channels, "
           "docs/wormhole.md)", PACKET, kind="name"),
    Option("flits", "--flits", "Flit count", "L",
           f"wormhole: flits per message, 1 to {MAX_FLITS} (default {_D['flits']})", None),
    Option("flit_width", "--flit-width", "Flit width", "F",
           f"wormhole: bits per flit, from the header to the message (default "
           f"{_D['flit_width']})", None),
    Option("vcs", "--vcs", "Virtual channel count", "V",
           f"wormhole: unicast virtual channels per link, 1 to {MAX_VCS} (default "
           f"{_D['vcs']}; each link also has a broadcast channel)", None),
    Option("vc_depth", "--vc-depth", "Virtual channel depth", "Q",
           f"wormhole: flits per virtual-channel buffer, 1 to {MAX_FABRIC_DEPTH} (default "
           f"{_D['vc_depth']})", None),
    *(Option(keyword, "--" + keyword.replace("_", "-"), keyword.replace("_", " ").capitalize(),
             "S", f"packet switching: 0 (default) or 1, {Stages.PARTS[field]}, {cost} "
                  f"(docs/fpga.md)", "0", kind="stage")
      for field, (keyword, _, cost) in Stages.FIELDS.items()),
    Option("interface", "--interface", "Interface", None,
           f"PE ports: {NATIVE} (default: valid/ready streams, docs/ports.md) or {AXIS} "
           f"(AXI4-Stream; with wormhole switching a transfer a flit, docs/axis.md)", NATIVE,
           kind="name"),
    Option("reconfigurable", "--reconfigurable", "Reconfigurable", None,
           "packet switching, one PE port: N physical routers whose active size and logical "
           "addresses are loaded at run time (docs/reconfiguration-hardware.md)", None,
           kind="flag"),
)
