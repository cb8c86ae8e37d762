"""Packet switching (the default): whole messages, one link word each (Katseff, Algorithm 3).

:class:`~ihcube.rtl.Router` and :class:`~ihcube.rtl.Fabric`, the fast model
:class:`~ihcube.sim.model.Model`, the stress engine :mod:`ihcube.verify.stress` and the
faults of :data:`ihcube.verify.faults.FAULTS`.
"""

from .. import deadlock, topology
from . import Mode

__all__ = ["MODE"]


class PacketMode(Mode):
    name = "packet"
    description = "packet switching"

    def router(self, spec, node, *, strap=False):
        from ..rtl import Router
        return Router(spec, node, strap=strap)

    def fabric(self, spec, **options):
        from ..rtl import Fabric
        return Fabric(spec, **options)

    def strapped_router(self, spec, node):
        from ..boards.strapped import StrappedRouter
        return StrappedRouter(spec, node)

    def figures(self, spec):
        """The payload width, depth, PE ports, the stages that are not 0 (none for none,
        as results files recorded before the stages existed), and ``reconfigurable`` if it
        is."""
        return {"payload_width": spec.payload_width, "depth": spec.depth, "ports": spec.ports,
                **spec.stages.keywords(),
                **({"reconfigurable": True} if spec.reconfigurable else {})}

    def router_signature(self, spec, node):
        from ..rtl.router import router_signature
        return router_signature(spec.nodes, node, spec.payload_width, ports=spec.ports,
                                reconfigurable=spec.reconfigurable)

    def fabric_signature(self, spec):
        from ..rtl.fabric import fabric_signature
        return fabric_signature(spec.nodes, spec.payload_width, spec.ports,
                                reconfigurable=spec.reconfigurable)

    def check_deadlock(self, spec):
        deadlock.check_deadlock_free(spec.nodes, spec.order)

    def router_modules(self, spec, top=None):
        """One module per :func:`ihcube.topology.router_class`: ``<top>_router_x<mask>``
        (the node's link-existence vector in hex) when its link set is one class, as every
        link set is when ``n`` is a power of two; ``<top>_router_x<mask>_c<i>`` otherwise,
        ``i`` counting the link set's classes in node order."""
        n, top = spec.nodes, spec.name if top is None else top
        classes = {}   # class -> its index within its link set
        per_mask = {}  # link set -> how many classes it has
        of_node = []
        for node in range(n):
            key = topology.router_class(n, node, spec.order)
            if key not in classes:
                classes[key] = per_mask.get(key[0], 0)
                per_mask[key[0]] = classes[key] + 1
            of_node.append(key)
        return [f"{top}_router_x{key[0]:x}" + (f"_c{classes[key]}" if per_mask[key[0]] > 1
                                               else "")
                for key in of_node]

    def header(self, spec, version):
        n, top, width, ports = spec.nodes, spec.name, spec.payload_width, spec.ports
        more, option = ("", "") if ports == 1 else (f", PE ports {ports}", f" --ports {ports}")
        if spec.stages:
            more += f", {spec.stages.description}"
        if spec.reconfigurable:
            more += (", reconfigurable (active size and logical addresses loaded at run time: "
                     "docs/reconfiguration-hardware.md)")
            option += " --reconfigurable"
        return (f"/* {top}: an incomplete-hypercube fabric of {n} nodes, written by ihcube "
                f"{version}.\n"
                f" * Parameters: nodes {n}, payload width {width} bits, buffer depth "
                f"{spec.depth}, routing order {spec.order}{more}.\n"
                f" * Top module: {top}, the only one marked top. Its ports: `ihcube ports "
                f"--nodes {n} --width {width}{option}`.\n"
                f" */\n")

    @property
    def lint_waivers(self):
        from ..verify.lint import WAIVERS
        return (WAIVERS,)

    def model(self, spec, threads=1):
        from ..sim.model import Model
        return Model(spec, threads=threads)

    @property
    def stress(self):
        from ..verify import stress
        return stress

    @property
    def faults(self):
        from ..verify.faults import FAULTS
        return FAULTS

    unit = "messages"

    def traffic(self, spec, pattern, rate, seed, threads=1):
        """The packet :class:`~ihcube.sim.model.Model` (on at most a thread a node,
        :func:`~ihcube.sim.model.threads_for`) fed by a :class:`~ihcube.sim.traffic.TrafficSource`,
        whose payloads carry the generation cycle (64 bits, whatever ``spec``'s width)."""
        from ..sim.model import threads_for
        from ..sim.traffic import TrafficSource
        model = self.model(spec.replace(payload_width=64), threads_for(spec.nodes, threads))
        return TrafficSource(model, pattern, rate, seed)

    def flits(self, spec):
        """1: a message is one link word."""
        return 1

    def injection_limit(self, spec):
        """Every other cycle at depth 1 (SPEC section 3), every cycle with deeper buffers."""
        return 0.5 if spec.depth == 1 else 1.0

    def buffer_depth(self, spec):
        """Messages per input buffer."""
        return spec.depth

    def buffers(self, spec):
        return f"depth {spec.depth}"

    def record(self, spec):
        """The register stages: ``link_stages`` always (as before the other stages existed),
        the others when not 0."""
        return {"link_stages": 0, **spec.stages.keywords()}

    def results_suffix(self, spec):
        """The stages' suffix (``_s1``, ``_s1_g1_e1``), as in the fabric's name and the stress
        campaign's file."""
        return spec.stages.suffix


MODE = PacketMode()
