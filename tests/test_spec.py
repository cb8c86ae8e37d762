"""The fabric description (``ihcube.spec``): checked once, frozen, named once, and taken by
the components and the model in place of their keyword forms."""

import dataclasses
import re

import pytest

from ihcube import topology
from ihcube.modes import mode_of
from ihcube.params import MAX_FABRIC_NODES, WORMHOLE_DEFAULTS
from ihcube.spec import FabricSpec, Packet, Stages, Wormhole, as_spec

#: One spec per kind of option, each with the name SPEC's naming rule gives it
#: (docs/verilog.md: n and W, then _d<depth>, _<order>, _p<ports>, _s1 _g1 _e1; a wormhole
#: fabric's _wormhole_f<flit width>_l<flits>_v<vcs>, _q<vc depth> when not 2).
NAMED = [
    (FabricSpec(26), "ihcube_n26_w32"),
    (FabricSpec(26, 8, "lsb", Packet(depth=3)), "ihcube_n26_w8_d3_lsb"),
    (FabricSpec(13, switching=Packet(ports=5)), "ihcube_n13_w32_p5"),
    (FabricSpec(26, switching=Packet(stages=Stages(1, 1, 1))), "ihcube_n26_w32_s1_g1_e1"),
    (FabricSpec(26, switching=Packet(stages=Stages(eject=1))), "ihcube_n26_w32_e1"),
    (FabricSpec(26, switching=Wormhole()), "ihcube_n26_wormhole_f32_l20_v3"),
    (FabricSpec(5, 16, "lsb", Wormhole(flits=4, flit_width=16, vcs=1, vc_depth=1)),
     "ihcube_n5_wormhole_f16_l4_v1_q1_lsb"),
]


@pytest.mark.parametrize("spec, name", NAMED)
def test_a_spec_names_its_file(spec, name):
    assert spec.name == name
    assert mode_of(spec).name == spec.mode == ("packet" if spec.packet else "wormhole")


@pytest.mark.parametrize("spec", [spec for spec, _ in NAMED])
def test_the_keyword_form_makes_the_same_spec(spec):
    """``FabricSpec.of`` of a spec's own keywords gives it back: the keyword forms the
    components, the generator and the commands take are one spec."""
    assert FabricSpec.of(**spec.keywords()) == spec
    assert hash(FabricSpec.of(**spec.keywords())) == hash(spec)


def test_defaults_are_stated_once():
    spec = FabricSpec.of(26)
    assert spec == FabricSpec(26) == FabricSpec(26, 32, "msb", Packet(1, 1, Stages(0, 0, 0)))
    assert (spec.depth, spec.ports, spec.stages, spec.wormhole) == (1, 1, Stages(), None)
    wormhole = FabricSpec.of(26, switching="wormhole").wormhole
    assert dataclasses.asdict(wormhole) == WORMHOLE_DEFAULTS


def test_a_spec_is_frozen_and_replace_checks_again():
    spec = FabricSpec(26)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.nodes = 27
    assert spec.replace(depth=2).name == "ihcube_n26_w32_d2"
    assert spec.replace(nodes=5, order="lsb").name == "ihcube_n5_w32_lsb"
    with pytest.raises(ValueError, match=r"^Port count must be an integer from 1 to 4 \(D \+ 1\) "
                                         r"for 5 nodes, not 6$"):
        spec.replace(nodes=5, ports=6)


@pytest.mark.parametrize("make, error, message", [
    (lambda: FabricSpec(0), ValueError, "Node count must be a positive integer, not 0"),
    (lambda: FabricSpec("26"), TypeError, "Node count must be a positive integer, not '26'"),
    (lambda: FabricSpec(26, 0), ValueError, "Payload width must be a positive integer, not 0"),
    (lambda: FabricSpec(26, order="up"), ValueError,
     "Routing order must be one of 'msb' or 'lsb', not 'up'"),
    (lambda: FabricSpec(26, switching="packet"), TypeError,
     "Switching must be a Packet or a Wormhole, not 'packet'"),
    (lambda: Packet(depth=0), ValueError, "Buffer depth must be a positive integer, not 0"),
    (lambda: Stages(link=2), ValueError, "Link stages must be 0 or 1, not 2"),
    (lambda: Stages(switch=True), TypeError, "Switch stages must be 0 or 1, not True"),
    (lambda: FabricSpec.of(26, link_stages=1, switching="wormhole"), ValueError,
     "Link stages are a packet-switching option, not taken with wormhole switching, not 1"),
    (lambda: FabricSpec.of(26, depth=2, switching="wormhole"), ValueError,
     "Buffer depth is a packet-switching option, not taken with wormhole switching (its "
     "buffers are vc_depth flits), not 2"),
    (lambda: FabricSpec.of(26, ports=2, switching="wormhole"), ValueError,
     "Port count must be 1 with wormhole switching, not 2"),
    (lambda: FabricSpec.of(26, vcs=2), ValueError,
     "Virtual channel count (--vcs) is a wormhole option, not taken with packet switching: "
     "give switching 'wormhole' or leave it out"),
    (lambda: FabricSpec.of(26, switching="circuit"), ValueError,
     "Switching must be one of 'packet' or 'wormhole', not 'circuit'"),
    (lambda: FabricSpec(26, switching=Wormhole(flit_width=5)), ValueError,
     "Flit width must be an integer from 6 (the head flit's routing fields, destination and "
     "kind) to 43 (the whole message: header 11 + payload 32 bits) for 26 nodes, not 5"),
    (lambda: FabricSpec(26, switching=Wormhole(flits=1, flit_width=16)), ValueError,
     "Flit count must be at least 3 to carry a 43-bit message in 16-bit flits, not 1"),
])
def test_a_wrong_spec_is_one_line(make, error, message):
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        make()


def test_the_hardware_limits_are_checked_where_they_hold():
    """A spec takes any node count (the model goes to 2**20); the hardware refuses more than
    MAX_FABRIC_NODES, with the message the generator has always given."""
    spec = FabricSpec(MAX_FABRIC_NODES + 1)
    with pytest.raises(ValueError, match=rf"^Node count must be an integer from 1 to "
                                         rf"{MAX_FABRIC_NODES}, not {MAX_FABRIC_NODES + 1}$"):
        spec.check_hardware()
    assert FabricSpec(MAX_FABRIC_NODES).check_hardware().nodes == MAX_FABRIC_NODES


def test_a_spec_and_keywords_together_are_refused():
    with pytest.raises(TypeError, match="^Give a FabricSpec alone"):
        as_spec(FabricSpec(5), depth=2)


def test_stages_cost_what_each_stage_adds():
    """Zero-load cycles from first principles: a router holds a message a cycle (and a switch
    stage one more), a link relay a cycle, the eject relay a cycle."""
    for hops in range(4):
        assert Stages().zero_load_cycles(hops) == hops + 1
        assert Stages(link=1).zero_load_cycles(hops) == 2 * hops + 1
        assert Stages(1, 1, 1).zero_load_cycles(hops) == 3 * hops + 3
    assert Stages(1, 0, 1).suffix == "_s1_e1"
    assert Stages(1, 0, 1).label == "1 link stage, 1 eject stage"
    assert not Stages() and Stages(eject=1)


def test_the_components_and_the_model_take_a_spec():
    """``Router(spec, node)``, ``Fabric(spec)`` and ``Model(spec)`` are the keyword forms'
    components; a wormhole spec is refused by the packet ones in one line."""
    from ihcube.rtl import Fabric, Router, WormholeFabric
    from ihcube.sim.model import Model
    spec = FabricSpec(5, 8, "lsb", Packet(2, 2, Stages(link=1)))
    keyword = dict(payload_width=8, depth=2, order="lsb", ports=2, link_stages=1)
    router, same = Router(spec, 3), Router(5, 3, **keyword)
    assert router.spec == same.spec == spec
    assert router.signature == same.signature
    assert (router.depth, router.ports, router.link_stages, router.order) == (2, 2, 1, "lsb")
    assert Fabric(spec).signature == Fabric(5, **keyword).signature
    model = Model(spec)
    assert model.spec == Model(5, **keyword).spec == spec
    assert (model.depth, model.ports, model.link_stages) == (2, 2, 1)
    wormhole = FabricSpec(5, switching=Wormhole(flits=4, flit_width=16, vcs=1))
    with pytest.raises(ValueError, match="^Fabric is the packet fabric; a wormhole spec's"):
        Fabric(wormhole)
    assert WormholeFabric(wormhole).wormhole == wormhole.wormhole
    assert mode_of(wormhole).fabric(wormhole).spec == wormhole


def test_every_node_count_names_one_router_module_per_class():
    """The packet mode's module names follow the router classes of the topology rules."""
    for n in (1, 5, 26):
        spec = FabricSpec(n)
        modules = mode_of(spec).router_modules(spec)
        classes = [topology.router_class(n, node, "msb") for node in range(n)]
        assert len(set(modules)) == len(set(classes))
        assert all((modules[a] == modules[b]) == (classes[a] == classes[b])
                   for a in range(n) for b in range(n))
