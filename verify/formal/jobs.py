"""The catalogue of formal jobs: what ``ihcube formal`` runs, and the fast subset CI runs."""

from ... import topology
from ...rtl import Fabric
from ...spec import FabricSpec, Packet, Stages
from ..faults import WORMHOLE_FAULTS, faulty_router, wormhole_buffer_fault_router
from .configured_router_check import ConfiguredRouterCheck
from .fabric_check import FabricCheck
from .router_check import RouterCheck
from .runner import Job
from .wormhole_check import WormholeRouterCheck

__all__ = ["FABRIC_CHECKS", "FABRIC_PROOFS", "FABRIC_DRAINS", "DRAIN_DEPTH",
           "STAGED_FABRIC_DRAINS", "STAGED_FABRIC_PROOFS", "STAGED_FABRIC_CHECKS",
           "STAGED_ROUTER_PROOFS", "PIPELINED_ROUTER_PROOFS", "PIPELINED_FABRIC_PROOFS",
           "PIPELINED_FABRIC_DRAINS", "RECONFIGURABLE_FABRIC_PROOFS", "jobs", "fast_jobs"]


#: The payload bits of the checked routers' and fabrics' messages: enough to tell the tagged
#: message from the others.
ROUTER_PAYLOAD_WIDTH, FABRIC_PAYLOAD_WIDTH = 2, 1
#: No register stages.
NO_STAGES = Stages()


def _router(n, node, depth=1, order=topology.MSB_FIRST, stages=NO_STAGES, **options):
    """A :class:`RouterCheck` of the router of ``node`` in the fabric of these parameters."""
    spec = FabricSpec(n, ROUTER_PAYLOAD_WIDTH, order, Packet(depth, stages=stages))
    return lambda: RouterCheck(spec, node, **options)


def _configured_router(n, node, depth=1, **options):
    """A :class:`ConfiguredRouterCheck` of the router of ``node`` in the reconfigurable
    fabric of ``n`` routers: every configuration at once."""
    spec = FabricSpec(n, ROUTER_PAYLOAD_WIDTH, topology.MSB_FIRST, Packet(depth),
                      reconfigurable=True)
    return lambda: ConfiguredRouterCheck(spec, node, **options)


def _wormhole(n, node, **kwargs):
    return lambda: WormholeRouterCheck(n, node, **kwargs)


def _wormhole_fault(name):
    return WORMHOLE_FAULTS[name]


def _wormhole_buffer(fault, first=1):
    """A wormhole router whose unicast flit buffers break the ``first``-th flit, once."""
    return wormhole_buffer_fault_router(fault, first=first, once=True)


def _fabric(n, order=topology.MSB_FIRST, stages=NO_STAGES, reconfigurable=False, **options):
    """A :class:`FabricCheck` of the fabric of these parameters (buffers of one message)."""
    spec = FabricSpec(n, FABRIC_PAYLOAD_WIDTH, order, Packet(stages=stages),
                      reconfigurable=reconfigurable)
    return lambda: FabricCheck(spec, **options)


class _LoadsWithoutTheDrain(Fabric):
    """A reconfigurable fabric that takes a configuration in any cycle (the interlock
    cleared): a message in flight then sees two configurations."""
    drain_before_load = False


#: The reconfigurable fabric's safety proofs by PDR (``n``, in the fast subset): its
#: configuration port free too, so every configuration and every sequence of them at once
#: (:class:`FabricCheck`). n = 3 takes 6 s, n = 4 14 s.
RECONFIGURABLE_FABRIC_PROOFS = ((3, True), (4, False))


#: The fabric delivery BMCs: ``n: (depth, bound, tight, engine)``. ``depth`` is the BMC depth
#: in cycles; ``bound`` the cycles from taking the tagged message to its last delivery, every
#: PE always accepting; ``tight`` that the cover job also reaches a delivery that takes the
#: whole bound, so that no smaller bound holds at this depth (``neg_fabric_bound`` shows one
#: less failing for n = 3). A message is taken in cycle 1 at the earliest (the buffers are not
#: ready in cycle 0) and the bound is checked ``bound + 1`` cycles later, so it is checked only
#: for messages taken in cycles 1 to ``depth - bound - 2``. Under free injection the worst
#: delivery time grows with the congestion built up before a message is taken: 13 fails for
#: n = 4 at depth 20; for n = 5, 16 fails for a unicast from node 3 to node 4 taken in cycle 2
#: and 18 for a broadcast from node 3 taken in cycle 2 (node 4 has one link, which every
#: broadcast and every message for node 4 crosses), so n = 5 and 6 are checked for messages
#: taken in cycle 1. ABC's ``bmc3`` reaches depth 20 for n = 5 and 6, where smtbmc's time per
#: step doubled with every step (n = 6 took 7.4 min to depth 14).
FABRIC_CHECKS = {
    3: (24, 12, True, "smtbmc"),
    4: (20, 16, False, "abc bmc3"),
    5: (20, 17, False, "abc bmc3"),
    6: (20, 17, False, "abc bmc3"),
}

#: The fabric safety proofs by PDR (``n``, routing order): with every PE injecting and
#: accepting freely, for every cycle (no depth), the tagged message reaches exactly the PEs
#: it is for, once each, unchanged, and nobody else.
FABRIC_PROOFS = [(3, topology.MSB_FIRST), (4, topology.MSB_FIRST), (5, topology.MSB_FIRST),
                 (6, topology.MSB_FIRST), (5, topology.LSB_FIRST), (6, topology.LSB_FIRST)]


#: The fabric drain checks: ``n: (drain, engine)``. Every PE injects freely until a cycle the
#: environment picks, then stops for good, and always accepts; every message must have been
#: delivered ``drain`` cycles later. PDR proves it for every stopping cycle for n = 3 (a drain
#: of 6 fails); for n >= 4 PDR did not finish in 15 min, and ABC's BMC checks every stopping
#: cycle up to ``20 - drain - 2`` (one cycle less fails for n = 4, 5 and 6 at depth 20).
FABRIC_DRAINS = {3: (7, "abc pdr"), 4: (9, "abc bmc3"), 5: (14, "abc bmc3"),
                 6: (14, "abc bmc3")}
#: The depth of the drain BMCs.
DRAIN_DEPTH = 20

#: The drain checks with a relay on every link (``link_stages=1``): ``n: (drain, engine)``, as
#: :data:`FABRIC_DRAINS`, by ABC's BMC at :data:`DRAIN_DEPTH`, so for every stopping cycle up
#: to ``20 - drain - 2``. One cycle less fails for both (``neg_fabric_s1_drain``,
#: ``neg_fabric_n4_s1_drain``): 10 where 7 holds without stages for n = 3, 12 where 9 holds
#: for n = 4. PDR did not prove the 3-node one for every stopping cycle (docs/verification.md,
#: "Formal checks").
STAGED_FABRIC_DRAINS = {3: (10, "abc bmc3"), 4: (12, "abc bmc3")}

#: The fabric safety proofs by PDR with a relay on every link (``link_stages=1``):
#: ``(n, fast)``.
STAGED_FABRIC_PROOFS = [(3, False), (4, True), (5, False)]

#: The router proofs with link stages (k-induction, k = 2): ``(n, node, depth, suffix, extra
#: arguments of RouterCheck, fast)``.
STAGED_ROUTER_PROOFS = [
    (1, 0, 1, "", {}, False), (3, 0, 1, "", {}, False), (3, 0, 2, "", {}, False),
    (5, 4, 1, "", {}, True), (5, 3, 1, "", {}, False), (6, 1, 1, "", {}, False),
    (6, 1, 2, "", {}, True), (6, 1, 1, "_lsb", {"order": topology.LSB_FIRST}, False),
    (6, 2, 1, "_strap_as_3", {"strap_as": 3}, False),
]

#: Register stages of :class:`~ihcube.rtl.Router`: ``S1`` link, ``G1`` switch, ``E1`` eject.
S1, G1, E1 = Stages(link=1), Stages(switch=1), Stages(eject=1)
G1_E1, S1_G1_E1 = Stages(switch=1, eject=1), Stages(link=1, switch=1, eject=1)

#: The router proofs with a registered grant (``switch_stages=1``) and eject relays
#: (``eject_stages=1``), alone and with link stages (k-induction, k = 2): ``(stages, n, node,
#: depth, suffix, extra arguments of RouterCheck, fast)``. A job's name says its stages: ``s1``
#: link, ``g1`` switch (the registered grant), ``e1`` eject, as ``router_g1_e1_n6_node1_d1``.
PIPELINED_ROUTER_PROOFS = [
    (G1, 1, 0, 1, "", {}, False), (G1, 3, 0, 1, "", {}, False), (G1, 3, 0, 2, "", {}, False),
    (G1, 5, 4, 1, "", {}, True), (G1, 5, 3, 1, "", {}, False), (G1, 6, 1, 1, "", {}, False),
    (G1, 6, 1, 2, "", {}, False),
    (E1, 1, 0, 1, "", {}, False), (E1, 3, 0, 1, "", {}, False), (E1, 5, 4, 1, "", {}, False),
    (E1, 6, 1, 1, "", {}, False), (E1, 6, 1, 2, "", {}, False),
    (G1_E1, 6, 1, 1, "", {}, False),
    (S1_G1_E1, 3, 0, 1, "", {}, False), (S1_G1_E1, 3, 0, 2, "", {}, False),
    (S1_G1_E1, 5, 4, 1, "", {}, True), (S1_G1_E1, 5, 3, 1, "", {}, False),
    (S1_G1_E1, 6, 1, 1, "", {}, False), (S1_G1_E1, 6, 1, 2, "", {}, False),
    (S1_G1_E1, 6, 1, 1, "_lsb", {"order": topology.LSB_FIRST}, False),
    (S1_G1_E1, 6, 2, 1, "_strap_as_3", {"strap_as": 3}, False),
]


#: The fabric safety proofs by PDR with switch or eject stages, or all three: ``(stages, n)``.
PIPELINED_FABRIC_PROOFS = [(G1, 4), (E1, 4), (S1_G1_E1, 3), (S1_G1_E1, 4), (S1_G1_E1, 5)]

#: The drain checks with every stage: ``n: (drain, engine)``, as :data:`STAGED_FABRIC_DRAINS`
#: (ABC's BMC at :data:`DRAIN_DEPTH`, so for every stopping cycle up to ``20 - drain - 2``).
#: 13 where it is 10 with link stages alone and 7 without stages; 12 fails
#: (``neg_fabric_s1_g1_e1_drain``).
PIPELINED_FABRIC_DRAINS = {3: (13, "abc bmc3")}


def _stages_name(stages):
    """The stages part of a job's name: ``s1`` link, ``g1`` switch, ``e1`` eject (the
    :attr:`~ihcube.spec.Stages.suffix` of a fabric's name)."""
    return stages.suffix.lstrip("_")


#: The delivery BMCs with link stages: ``n: (depth, bound, engine)``, as
#: :data:`FABRIC_CHECKS`. For n = 3 the bound is 16 where it is 12 without stages; 15 fails
#: (``neg_fabric_s1_bound``), so no smaller bound holds at this depth. For n = 4, 18 (for
#: messages taken in cycles 1 to 4); 17 fails (``neg_fabric_n4_s1_bound``). For n = 5 (a
#: message taken in cycle 1) 21 fails at depth 24; 22 at depth 25 was not settled by ABC's
#: ``bmc3`` in 25 min, smtbmc in 10 min, or ``abc scorr; dc2; bmc3`` (8 min in frame 17 of 25;
#: docs/verification.md).
STAGED_FABRIC_CHECKS = {3: (24, 16, "abc bmc3"), 4: (24, 18, "abc bmc3")}


def jobs():
    """Every job: the router proofs, the fabric proofs, BMCs and covers, then the negative
    controls."""
    fabric = []
    for n, (drain, engine) in FABRIC_DRAINS.items():
        if engine == "abc pdr":
            fabric.append(Job(f"fabric_n{n}_drain_proof", _fabric(n, drain=drain), "prove", 0,
                              engine=engine))
        else:
            fabric.append(Job(f"fabric_n{n}_drain", _fabric(n, drain=drain), "bmc",
                              DRAIN_DEPTH, engine=engine, slow=n >= 5))
    for n, order in FABRIC_PROOFS:
        suffix = "_lsb" if order == topology.LSB_FIRST else ""
        fabric.append(Job(f"fabric_n{n}{suffix}_proof", _fabric(n, order=order,
                                                                eject_ready="free"),
                          "prove", 0, engine="abc pdr", fast=(n == 4)))
    for n, fast in STAGED_FABRIC_PROOFS:
        fabric.append(Job(f"fabric_n{n}_s1_proof", _fabric(n, eject_ready="free",
                                                           stages=S1),
                          "prove", 0, engine="abc pdr", fast=fast))
    for n, (drain, engine) in STAGED_FABRIC_DRAINS.items():
        fabric.append(Job(f"fabric_n{n}_s1_drain", _fabric(n, drain=drain, stages=S1),
                          "bmc", DRAIN_DEPTH, engine=engine, fast=n == 3, slow=n >= 4))
    for n, fast in RECONFIGURABLE_FABRIC_PROOFS:
        fabric.append(Job(f"fabric_n{n}_reconf_proof", _fabric(n, eject_ready="free",
                                                               reconfigurable=True),
                          "prove", 0, engine="abc pdr", fast=fast))
    for stages, n in PIPELINED_FABRIC_PROOFS:
        fabric.append(Job(f"fabric_n{n}_{_stages_name(stages)}_proof",
                          _fabric(n, eject_ready="free", stages=stages), "prove", 0,
                          engine="abc pdr"))
    for n, (drain, engine) in PIPELINED_FABRIC_DRAINS.items():
        fabric.append(Job(f"fabric_n{n}_s1_g1_e1_drain", _fabric(n, drain=drain,
                                                                   stages=S1_G1_E1),
                          "bmc", DRAIN_DEPTH, engine=engine))
    for n, (depth, bound, engine) in STAGED_FABRIC_CHECKS.items():
        fabric.append(Job(f"fabric_n{n}_s1_delivery", _fabric(n, bound=bound, stages=S1),
                          "bmc", depth, engine=engine, slow=n >= 4))
    for n, (depth, bound, _tight, engine) in FABRIC_CHECKS.items():
        if depth < bound + 3:
            raise ValueError(f"A bound of {bound} is never checked at depth {depth} (n={n})")
        fabric.append(Job(f"fabric_n{n}_delivery", _fabric(n, bound=bound), "bmc", depth,
                          engine=engine, slow=n >= 5))
    for n, (depth, bound, tight, _engine) in FABRIC_CHECKS.items():
        fabric.append(Job(f"fabric_n{n}_cover",
                          _fabric(n, bound=bound, covers=True, tight=tight), "cover", depth))
    return [
        # One router, any environment: nothing lost, duplicated or altered, routed by the rules.
        # The invariants are 1-inductive; k = 2 for margin.
        Job("router_n1_node0_d1", _router(1, 0), "prove", 2),
        Job("router_n2_node1_d1", _router(2, 1), "prove", 2),
        Job("router_n3_node0_d1", _router(3, 0), "prove", 2),
        Job("router_n3_node0_d2", _router(3, 0, 2), "prove", 2),
        Job("router_n3_node0_d3", _router(3, 0, 3), "prove", 2),
        Job("router_n5_node4_d1", _router(5, 4), "prove", 2, fast=True),
        Job("router_n5_node3_d1", _router(5, 3), "prove", 2),
        Job("router_n6_node1_d1", _router(6, 1), "prove", 2),
        Job("router_n6_node1_d2", _router(6, 1, 2), "prove", 2, fast=True),
        Job("router_n6_node1_d1_lsb", _router(6, 1, order=topology.LSB_FIRST), "prove", 2),
        Job("router_n6_node2_strap_as_3", _router(6, 2, strap_as=3), "prove", 2),
        # A reconfigurable router, its active node count and mask free (held, fitting):
        # every configuration at once, in logical addresses (configured_router_check.py).
        Job("router_reconf_n5_node4_d1", _configured_router(5, 4), "prove", 2, fast=True),
        Job("router_reconf_n6_node1_d1", _configured_router(6, 1), "prove", 2),
        Job("router_reconf_n6_node1_d2", _configured_router(6, 1, 2), "prove", 2),
        Job("router_reconf_n8_node3_d1", _configured_router(8, 3), "prove", 2),
        # Outputs always ready: every copy has left within depth * (k + 1) cycles. Not
        # inductive below k = bound (the round-robin pointers carry no invariant).
        Job("router_fair_n3_node0_d1", _router(3, 0, outputs_ready=True), "prove", 3),
        Job("router_fair_n6_node1_d1", _router(6, 1, outputs_ready=True), "prove", 4,
            fast=True),
        Job("router_fair_n6_node1_d2", _router(6, 1, 2, outputs_ready=True), "prove", 8),
        # The same with link stages: the tagged copies followed into the relays.
        *(Job(f"router_s1_n{n}_node{node}_d{depth}{suffix}",
              _router(n, node, depth, stages=S1, **extra), "prove", 2, fast=fast)
          for n, node, depth, suffix, extra, fast in STAGED_ROUTER_PROOFS),
        Job("router_s1_n6_node1_d1_cover", _router(6, 1, covers=True, stages=S1), "cover",
            10),
        # With a registered grant and eject relays: what each stage holds asserted, and the
        # delivered copy followed into the eject relay as a link's copy into its relay.
        *(Job(f"router_{_stages_name(stages)}_n{n}_node{node}_d{depth}{suffix}",
              _router(n, node, depth, stages=stages, **extra), "prove", 2, fast=fast)
          for stages, n, node, depth, suffix, extra, fast in PIPELINED_ROUTER_PROOFS),
        Job("router_g1_e1_n6_node1_d1_cover", _router(6, 1, covers=True, stages=G1_E1), "cover",
            12),
        Job("router_s1_g1_e1_n6_node1_d1_cover", _router(6, 1, covers=True, stages=S1_G1_E1),
            "cover", 14),
        # The scenarios happen (so no assumption rules them out).
        Job("router_n6_node1_d1_cover", _router(6, 1, covers=True), "cover", 8, fast=True),
        Job("router_n5_node4_d2_cover", _router(5, 4, 2, covers=True), "cover", 10),
        Job("router_fair_n6_node1_d1_cover", _router(6, 1, outputs_ready=True, covers=True),
            "cover", 8),
        # One wormhole router, any environment, a tagged unicast worm: no flit lost,
        # duplicated or reordered; its output channel reserved until, and released by, its
        # tail (wormhole_check.py). 2-inductive with the helper invariants.
        Job("wormhole_router_n2_node0_v1_q1", _wormhole(2, 0), "prove", 2, fast=True),
        Job("wormhole_router_n3_node1_v2_q1", _wormhole(3, 1, vcs=2), "prove", 2),
        Job("wormhole_router_n4_node0_v1_q2", _wormhole(4, 0, vc_depth=2), "prove", 2),
        Job("wormhole_router_n4_node3_v2_q2_l4", _wormhole(4, 3, flits=4, vcs=2, vc_depth=2),
            "prove", 2),
        Job("wormhole_router_n5_node4_v2_q1", _wormhole(5, 4, vcs=2), "prove", 2),
        Job("wormhole_router_n5_node1_v2_q2", _wormhole(5, 1, vcs=2, vc_depth=2), "prove", 2),
        Job("wormhole_router_n6_node1_v1_q1_lsb", _wormhole(6, 1, order=topology.LSB_FIRST),
            "prove", 2),
        Job("wormhole_router_n4_node0_v3_q2", _wormhole(4, 0, vcs=3, vc_depth=2), "prove", 2),
        Job("wormhole_router_n8_node3_v2_q2", _wormhole(8, 3, vcs=2, vc_depth=2), "prove", 2),
        Job("wormhole_router_n13_node5_v1_q1_lsb", _wormhole(13, 5, order=topology.LSB_FIRST),
            "prove", 2),
        # The scenarios happen: tagged worms pass whole from a link to the PE and to a link,
        # and from the PE to a link (so the assumptions rule none of them out).
        Job("wormhole_router_n4_node1_v2_q2_cover", _wormhole(4, 1, vcs=2, vc_depth=2,
                                                              covers=True), "cover", 12,
            fast=True),
        # Whole fabrics, bounded.
        Job("fabric_n3_delivery_fast", _fabric(3, bound=12), "bmc", 16, fast=True),
        Job("fabric_n3_drain_fast", _fabric(3, drain=FABRIC_DRAINS[3][0]), "bmc", DRAIN_DEPTH,
            engine="abc bmc3", fast=True),
        Job("fabric_n4_lsb_delivery", _fabric(4, order=topology.LSB_FIRST, bound=16), "bmc",
            20, engine="abc bmc3"),
        *fabric,
        # Negative controls: the same checks on parts broken on purpose (ihcube.verify.faults)
        # must fail.
        Job("neg_router_drop", _router(5, 4, router=faulty_router("dropping-buffer")),
            "prove", 4, expect="FAIL", fast=True),
        Job("neg_router_duplicate", _router(5, 4, router=faulty_router("duplicating-buffer")),
            "prove", 6, expect="FAIL", fast=True),
        Job("neg_router_travel", _router(6, 1, router=faulty_router("broken-travel")),
            "prove", 4, expect="FAIL", fast=True),
        Job("neg_router_known_dest", _router(6, 1, router=faulty_router(
            "known-dest-one-too-many")), "prove", 4, expect="FAIL"),
        Job("neg_router_complete_cube", _router(5, 3, router=faulty_router("complete-cube")),
            "prove", 4, expect="FAIL"),
        # The reconfigurable router's check: routers that ignore the mask, break the travel
        # vector, drop a message.
        Job("neg_router_reconf_stale_address", _configured_router(
            6, 1, router=faulty_router("stale-address")), "prove", 4, expect="FAIL"),
        Job("neg_router_reconf_travel", _configured_router(
            6, 1, router=faulty_router("broken-travel")), "prove", 4, expect="FAIL"),
        Job("neg_router_reconf_drop", _configured_router(
            5, 4, router=faulty_router("dropping-buffer")), "prove", 4, expect="FAIL",
            fast=True),
        Job("neg_router_s1_relay_duplicate", _router(5, 4, router=faulty_router(
            "duplicating-relay"), stages=S1), "prove", 6, expect="FAIL", fast=True),
        Job("neg_router_s1_relay_drop", _router(6, 1, router=faulty_router("dropping-relay"),
                                                stages=S1), "prove", 6, expect="FAIL"),
        # The eject relay alone broken, and the registered grant without its mask (a head
        # that asks again for an output whose stage holds its copy).
        Job("neg_router_e1_relay_duplicate", _router(5, 4, router=faulty_router(
            "duplicating-relay"), stages=E1), "prove", 6, expect="FAIL"),
        Job("neg_router_e1_relay_drop", _router(6, 1, router=faulty_router(
            "dropping-relay"), stages=E1), "prove", 6, expect="FAIL"),
        Job("neg_router_g1_unmasked", _router(5, 4, router=faulty_router(
            "unmasked-stage"), stages=G1), "prove", 6, expect="FAIL", fast=True),
        Job("neg_router_s1_g1_e1_unmasked", _router(6, 1, router=faulty_router(
            "unmasked-stage"), stages=S1_G1_E1), "prove", 6, expect="FAIL"),
        Job("neg_router_unfair", _router(6, 1, router=faulty_router("unfair-arbiter"),
                                         outputs_ready=True),
            "prove", 8, expect="FAIL"),
        Job("neg_router_no_hold", _router(5, 4, router=faulty_router("forgetful-arbiter")),
            "prove", 4, expect="FAIL", fast=True),
        Job("neg_fabric_drop", _fabric(3, bound=12, router=faulty_router("dropping-buffer")),
            "bmc", 16, expect="FAIL", fast=True),
        Job("neg_fabric_duplicate", _fabric(4, router=faulty_router("duplicating-buffer")),
            "bmc", 10, expect="FAIL"),
        Job("neg_fabric_duplicate_proof", _fabric(4, router=faulty_router("duplicating-buffer"),
                                                  eject_ready="free"),
            "prove", 0, expect="FAIL", engine="abc pdr", fast=True),
        Job("neg_fabric_s1_duplicate_proof", _fabric(4, router=faulty_router(
            "duplicating-buffer"), eject_ready="free", stages=S1),
            "prove", 0, expect="FAIL", engine="abc pdr", fast=True),
        # Relays alone broken (input buffers real): the staged safety proof and delivery BMC.
        Job("neg_fabric_s1_relay_duplicate_proof", _fabric(4, router=faulty_router(
            "duplicating-relay"), eject_ready="free", stages=S1),
            "prove", 0, expect="FAIL", engine="abc pdr", fast=True),
        # With switch or eject stages: a stage without its mask, an eject relay that
        # duplicates (alone), the drain bound with every stage one cycle too small.
        Job("neg_fabric_s1_g1_e1_unmasked_proof", _fabric(
            4, router=faulty_router("unmasked-stage"), eject_ready="free", stages=S1_G1_E1),
            "prove", 0, expect="FAIL", engine="abc pdr"),
        Job("neg_fabric_e1_relay_duplicate_proof", _fabric(
            4, router=faulty_router("duplicating-relay"), eject_ready="free", stages=E1),
            "prove", 0, expect="FAIL", engine="abc pdr"),
        Job("neg_fabric_s1_g1_e1_drain", _fabric(
            3, drain=PIPELINED_FABRIC_DRAINS[3][0] - 1, stages=S1_G1_E1), "bmc", DRAIN_DEPTH,
            expect="FAIL", engine="abc bmc3"),
        Job("neg_fabric_s1_relay_drop", _fabric(3, bound=STAGED_FABRIC_CHECKS[3][1],
                                                router=faulty_router("dropping-relay"),
                                                stages=S1),
            "bmc", STAGED_FABRIC_CHECKS[3][0], expect="FAIL", engine="abc bmc3"),
        Job("neg_fabric_s1_relay_stuck", _fabric(3, bound=STAGED_FABRIC_CHECKS[3][1],
                                                 router=faulty_router("stuck-relay"),
                                                 stages=S1),
            "bmc", STAGED_FABRIC_CHECKS[3][0], expect="FAIL", engine="abc bmc3"),
        Job("neg_fabric_s1_bound", _fabric(3, bound=STAGED_FABRIC_CHECKS[3][1] - 1,
                                           stages=S1),
            "bmc", STAGED_FABRIC_CHECKS[3][0], expect="FAIL", engine="abc bmc3"),
        Job("neg_fabric_n4_s1_bound", _fabric(4, bound=STAGED_FABRIC_CHECKS[4][1] - 1,
                                              stages=S1),
            "bmc", STAGED_FABRIC_CHECKS[4][0], expect="FAIL", engine="abc bmc3", slow=True),
        Job("neg_fabric_s1_drain", _fabric(3, drain=STAGED_FABRIC_DRAINS[3][0] - 1,
                                           stages=S1),
            "bmc", DRAIN_DEPTH, expect="FAIL", engine="abc bmc3"),
        Job("neg_fabric_n4_s1_drain", _fabric(4, drain=STAGED_FABRIC_DRAINS[4][0] - 1,
                                              stages=S1),
            "bmc", DRAIN_DEPTH, expect="FAIL", engine="abc bmc3", slow=True),
        Job("neg_fabric_drop_bmc3", _fabric(3, bound=12, router=faulty_router("dropping-buffer")),
            "bmc", 16, expect="FAIL", engine="abc bmc3", fast=True),
        Job("neg_fabric_travel", _fabric(3, bound=12, router=faulty_router("broken-travel")),
            "bmc", 16, expect="FAIL"),
        Job("neg_fabric_bound", _fabric(3, bound=11), "bmc", 20, expect="FAIL"),
        Job("neg_fabric_drain", _fabric(3, drain=FABRIC_DRAINS[3][0] - 1), "bmc", DRAIN_DEPTH,
            expect="FAIL", engine="abc bmc3", fast=True),
        # The reconfigurable fabric's proof on a fabric that loads with messages in flight,
        # and on routers that ignore the mask.
        Job("neg_fabric_n3_reconf_no_drain", _fabric(3, eject_ready="free", reconfigurable=True,
                                                     fabric=_LoadsWithoutTheDrain),
            "prove", 0, expect="FAIL", engine="abc pdr"),
        Job("neg_fabric_n3_reconf_stale_address",
            _fabric(3, eject_ready="free", reconfigurable=True,
                    router=faulty_router("stale-address")),
            "prove", 0, expect="FAIL", engine="abc pdr"),
        # The wormhole router's check on broken parts (faults.py): flit buffers that drop,
        # repeat or swap a flit (the first write or read, so that a short base case reaches it),
        # an allocator whose tail does not release, one whose grant does not reserve.
        Job("neg_wormhole_drop", _wormhole(3, 1, router=_wormhole_buffer("drop")), "prove", 6,
            expect="FAIL", fast=True),
        Job("neg_wormhole_duplicate", _wormhole(3, 1, router=_wormhole_buffer("duplicate")),
            "prove", 6, expect="FAIL"),
        Job("neg_wormhole_reorder", _wormhole(3, 1, router=_wormhole_buffer("reorder", 2)),
            "prove", 6, expect="FAIL"),
        Job("neg_wormhole_no_release", _wormhole(3, 1, router=_wormhole_fault(
            "no-release-on-tail")), "prove", 8, expect="FAIL", fast=True),
        Job("neg_wormhole_shared_channel", _wormhole(3, 1, router=_wormhole_fault(
            "shared-channel")), "prove", 8, expect="FAIL"),
        # A cover that cannot be reached fails: the full-bound delivery needs more cycles.
        Job("neg_fabric_cover", _fabric(3, bound=12, covers=True, tight=True), "cover", 12,
            expect="FAIL"),
    ]


def fast_jobs():
    """The subset that CI runs: a few seconds each, a negative control of each mode."""
    return [job for job in jobs() if job.fast]
