"""Wormhole switching with virtual channels (SPEC section 8; ``docs/wormhole.md``).

:class:`~ihcube.rtl.WormholeRouter` and :class:`~ihcube.rtl.WormholeFabric`, the fast model
:class:`~ihcube.sim.wormhole_fast.FastWormholeModel` (one thread), the stress engine
:mod:`ihcube.verify.wormhole_stress` and the faults of
:data:`ihcube.verify.faults.WORMHOLE_FAULTS`.
"""

from .. import deadlock, topology
from . import Mode

__all__ = ["MODE"]


class WormholeMode(Mode):
    name = "wormhole"
    description = "wormhole switching"

    def router(self, spec, node, *, strap=False):
        from ..rtl import WormholeRouter
        return WormholeRouter(spec, node, strap=strap)

    def fabric(self, spec, **options):
        from ..rtl import WormholeFabric
        return WormholeFabric(spec, **options)

    def figures(self, spec):
        """The payload width, ``switching``, the flit-level options, and no buffer depth
        (``depth`` None) and one PE port."""
        wh = spec.wormhole
        return {"payload_width": spec.payload_width, "switching": self.name,
                "flits": wh.flits, "flit_width": wh.flit_width, "vcs": wh.vcs,
                "vc_depth": wh.vc_depth, "depth": None, "ports": 1}

    def router_signature(self, spec, node):
        from ..rtl.wormhole_router import wormhole_router_signature
        return wormhole_router_signature(spec.nodes, node, spec.wormhole)

    def fabric_signature(self, spec):
        from ..rtl.wormhole_fabric import wormhole_fabric_signature
        return wormhole_fabric_signature(spec.nodes, spec.wormhole)

    def check_deadlock(self, spec):
        deadlock.check_wormhole_deadlock_free(spec.nodes, spec.wormhole.vcs, spec.order)

    def router_modules(self, spec, top=None):
        """One module per link set, ``<top>_router_x<mask>``: a strapped wormhole router
        merges the onward links of its link set (:func:`ihcube.topology.link_set_onward_links`)."""
        masks = [topology.exists_mask(spec.nodes, node) for node in range(spec.nodes)]
        top = spec.name if top is None else top
        return [f"{top}_router_x{mask:x}" for mask in masks]

    def header(self, spec, version):
        n, top, wormhole = spec.nodes, spec.name, spec.wormhole
        return (f"/* {top}: an incomplete-hypercube wormhole fabric of {n} nodes, written by "
                f"ihcube {version}.\n"
                f" * Parameters: nodes {n}, wormhole switching, {wormhole.flits} flits of "
                f"{wormhole.flit_width} bits per message (payload {spec.payload_width} bits), "
                f"{wormhole.vcs} unicast virtual channels of {wormhole.vc_depth} flits and one "
                f"broadcast channel of {wormhole.flits} flits per link, routing order "
                f"{spec.order}.\n"
                f" * Top module: {top}, the only one marked top. Flits and ports: "
                f"docs/wormhole.md.\n */\n")

    @property
    def lint_waivers(self):
        from ..verify.lint import WAIVERS, WORMHOLE_WAIVERS
        return (WAIVERS, WORMHOLE_WAIVERS)

    def model(self, spec, threads=1):
        from ..params import check_model_threads
        from ..sim.wormhole_fast import FastWormholeModel
        check_model_threads(threads, self.name)
        return FastWormholeModel(spec)

    @property
    def stress(self):
        from ..verify import wormhole_stress
        return wormhole_stress

    @property
    def faults(self):
        from ..verify.faults import WORMHOLE_FAULTS
        return WORMHOLE_FAULTS

    unit = "flits"

    def traffic(self, spec, pattern, rate, seed, threads=1):
        """The :class:`~ihcube.sim.wormhole_fast.FastWormholeModel` fed by a
        :class:`~ihcube.sim.wormhole_traffic.WormholeTrafficSource`: a message is a worm of
        ``flits`` flits, its latency runs to the tail's delivery."""
        from ..sim.wormhole_traffic import WormholeTrafficSource
        return WormholeTrafficSource(self.model(spec, threads), pattern, rate, seed)

    def flits(self, spec):
        return spec.wormhole.flits

    def injection_limit(self, spec):
        """One flit a cycle: a message every ``flits`` cycles."""
        return 1.0 / spec.wormhole.flits

    def buffer_depth(self, spec):
        """Flits per unicast virtual-channel buffer."""
        return spec.wormhole.vc_depth

    def buffers(self, spec):
        wormhole = spec.wormhole
        return f"{wormhole.flits}-flit worms, {wormhole.vcs} VCs x {wormhole.vc_depth}"

    def record(self, spec):
        """Nothing more: the records give the flits, and the fits their fastest latencies."""
        return {}

    def results_suffix(self, spec):
        """``_wormhole`` at the default message length, virtual channels and their depth,
        else with them (``_wormhole_l20_v1_q2``); the flit width changes no cycle."""
        from ..params import WORMHOLE_DEFAULTS
        wormhole = spec.wormhole
        if all(getattr(wormhole, key) == WORMHOLE_DEFAULTS[key]
               for key in ("flits", "vcs", "vc_depth")):
            return "_wormhole"
        return f"_wormhole_l{wormhole.flits}_v{wormhole.vcs}_q{wormhole.vc_depth}"


MODE = WormholeMode()
