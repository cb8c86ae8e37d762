"""The dependency graph over (link, virtual channel) pairs (``docs/wormhole.md``, "Deadlock
check"): the router's rule is acyclic; deadlock-prone rules are refused naming a cycle."""

import pytest

from ihcube import deadlock, topology
from ihcube.deadlock import (EJECT, INJECT, FORKED, FirstSetBitRouting, VirtualChannel,
                             VirtualChannelRule, check_wormhole_deadlock_free, find_vc_cycle,
                             router_vc_rule, virtual_channel_dependencies)
from ihcube.params import wormhole_parameters
from ihcube.rtl import WormholeFabric
from ihcube.verify.faults import WEIGHT_PARITY

#: Least-significant-first unicasts with Algorithm 6 broadcasts: cyclic in packet mode from 4.
LSB_WITH_ALGORITHM_6 = FirstSetBitRouting("lsb", name="lsb with Algorithm 6", travel="msb")


def is_cycle(graph, cycle):
    return all(b in graph[a] for a, b in zip(cycle, cycle[1:] + cycle[:1]))


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
@pytest.mark.parametrize("vcs", [1, 3])
def test_the_routers_rule_is_acyclic(order, vcs):
    for n in [*range(1, 34), 48, 100]:
        assert find_vc_cycle(n, vcs, deadlock.routing_for(order)) is None, n


def test_the_graph_splits_each_link_into_its_channels():
    n, vcs = 6, 2
    graph = virtual_channel_dependencies(n, vcs)
    links = [(a, i) for a in range(n) for i in topology.links(n, a)]
    channels = {c for c in graph if c.is_link}
    assert channels == {VirtualChannel(a, i, v) for a, i in links for v in range(vcs + 1)}
    packet = deadlock.channel_dependencies(n)
    for held, wanted in graph.items():
        for successor in wanted:
            # Every edge is an edge of packet mode's link graph, on the channels the rule allows.
            assert successor.link in packet[held.link]
            if held.is_link and successor.is_link:
                broadcast = held.vc == vcs
                assert (successor.vc == vcs) == broadcast
    # A unicast may go on by any unicast channel (the router takes any free one).
    unicast = deadlock.channel_dependencies(n, broadcast=False)
    for a, i in links:
        for successor in unicast[deadlock.Channel(a, i)]:
            if successor.is_link:
                for v in range(vcs):
                    assert {VirtualChannel(*successor, w) for w in range(vcs)} <= \
                        graph[VirtualChannel(a, i, v)]
    assert VirtualChannel(1, 0, vcs) in graph[VirtualChannel(1, INJECT, 0)]
    assert VirtualChannel(1, EJECT, 0) in graph[VirtualChannel(0, 0, vcs)]


def test_a_forked_worm_broadcast_is_refused_naming_a_cycle():
    rule = VirtualChannelRule(2, "forked worms", scheme=FORKED)
    cycle = find_vc_cycle(8, 2, rule=rule)
    assert cycle is not None
    assert is_cycle(virtual_channel_dependencies(8, 2, rule=rule), cycle)
    with pytest.raises(ValueError, match=r"^Wormhole routing 'msb' with virtual-channel rule "
                                         r"'forked worms' and forked broadcasts, 2 channels per "
                                         r"link, of 8 nodes can deadlock: its dependency graph "
                                         r"over \(link, virtual channel\) has the cycle \[.*\]$"):
        check_wormhole_deadlock_free(8, 2, rule=rule)


def test_broadcasts_sharing_unicast_channels_bring_back_the_packet_mode_cycle():
    # With broadcasts on unicast channel 0, lsb unicasts and Algorithm 6 broadcasts close the
    # cycle that packet mode has from 4 nodes; on a channel of their own (the router's rule)
    # the two never wait for each other, and the graph is acyclic.
    shared = VirtualChannelRule(2, "broadcasts on channel 0", broadcast_vc=0)
    assert deadlock.find_cycle(4, LSB_WITH_ALGORITHM_6) is not None
    cycle = find_vc_cycle(4, 2, LSB_WITH_ALGORITHM_6, shared)
    assert cycle is not None and {c.vc for c in cycle} == {0}
    assert is_cycle(virtual_channel_dependencies(4, 2, LSB_WITH_ALGORITHM_6, shared), cycle)
    assert find_vc_cycle(4, 2, LSB_WITH_ALGORITHM_6) is None
    with pytest.raises(ValueError, match=r"^Wormhole routing 'lsb with Algorithm 6' .* has the "
                                         r"cycle \[0 -\(dim 1, vc 0\)-> 2\] waits for .*$"):
        check_wormhole_deadlock_free(4, 2, routing=LSB_WITH_ALGORITHM_6, rule=shared)


def test_mixed_routing_orders_are_refused_whatever_the_channels():
    # faults.WEIGHT_PARITY flips the scan order with a node's weight: its unicasts alone close
    # a cycle, which virtual channels chosen freely do not break.
    cycle = find_vc_cycle(8, 3, WEIGHT_PARITY)
    assert cycle is not None and all(c.vc < 3 for c in cycle)
    with pytest.raises(ValueError, match=r"^Wormhole routing 'weight parity' .* can deadlock"):
        check_wormhole_deadlock_free(8, 3, routing=WEIGHT_PARITY)


def test_a_unicast_rule_that_stays_on_its_channel_is_acyclic_too():
    # Dimension-ordered unicasts need no channel discipline: any rule is acyclic.
    stay = VirtualChannelRule(3, "stay", unicast=lambda vc, dim: (vc,))
    assert find_vc_cycle(13, 3, rule=stay) is None


def test_the_fabric_runs_the_check_at_construction():
    wormhole = wormhole_parameters(8, 16, flits=4, flit_width=16, vcs=2)
    WormholeFabric(8, wormhole)
    with pytest.raises(ValueError, match=r"^Wormhole routing .* can deadlock: .*$"):
        WormholeFabric(8, wormhole, rule=VirtualChannelRule(2, "forked", scheme=FORKED))
    with pytest.raises(ValueError, match=r"^Wormhole routing .* can deadlock: .*$"):
        WormholeFabric(4, wormhole_parameters(4, 16, flits=4, flit_width=16, vcs=2),
                       routing=LSB_WITH_ALGORITHM_6,
                       rule=VirtualChannelRule(2, "shared", broadcast_vc=0))


def test_the_router_rule_is_the_default():
    assert virtual_channel_dependencies(5, 2) == virtual_channel_dependencies(
        5, 2, deadlock.routing_for("msb"), router_vc_rule(2))
