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


MODE = WormholeMode()
