"""Deadlock freedom of every configuration: the relabelling argument, checked by the graph code."""

import pytest

from ihcube import deadlock, topology
from ihcube.configured_deadlock import (check_configurations, configured_dependencies,
                                        relabelled_dependencies)
from ihcube.reconfigure import Configuration, active_sizes
from tiers import below, slow_unless


def configurations(max_nodes):
    """Every valid XOR configuration of every fabric of up to ``max_nodes`` routers."""
    for N in range(1, max_nodes + 1):
        sizes = active_sizes(N, ())
        for mask, most in enumerate(sizes):
            for n in range(1, int(most) + 1):
                yield N, Configuration(n, mask)


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
@pytest.mark.parametrize("max_nodes", slow_unless([10, 18], below(11)))
def test_a_configured_fabric_routes_on_the_relabelled_graph(order, max_nodes):
    """Built as the routers route, from their logical addresses, the configured fabric's graph
    is the n-node fabric's relabelled, edge for edge, and acyclic."""
    for N, config in configurations(max_nodes):
        direct = configured_dependencies(N, config, order)
        assert direct == relabelled_dependencies(N, config, order), (N, config)
        assert deadlock.find_graph_cycle(direct) is None


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
@pytest.mark.parametrize("max_nodes", slow_unless([64, 256], below(65)))
def test_every_configuration_is_deadlock_free(order, max_nodes):
    assert check_configurations(max_nodes, order) == sum(
        int(active_sizes(N, ()).sum()) for N in range(1, max_nodes + 1))


def test_a_mask_that_leaves_the_fabric_is_refused():
    """Mask 2 puts logical 4 on router 6 of a 6-router fabric, which does not exist."""
    with pytest.raises(ValueError, match=r"^Router 2 \(logical 0\) sends on port 2, which has "
                                         r"no link in the 6-router fabric$"):
        configured_dependencies(6, Configuration(6, 2))
    with pytest.raises(ValueError, match=r"which is not a link of the 6-router fabric$"):
        relabelled_dependencies(6, Configuration(6, 2))


def test_a_dimension_swap_that_breaks_links_is_refused():
    config = Configuration(6, 0, (2, 1, 0))
    with pytest.raises(ValueError, match=r"which is not a link of the 6-router fabric$"):
        relabelled_dependencies(6, config)
    with pytest.raises(ValueError, match=r"sends on port .*, which has no link"):
        configured_dependencies(6, config)


def test_a_permutation_that_is_an_automorphism_keeps_the_graph():
    """In a complete cube a dimension permutation is an automorphism too: same argument."""
    config = Configuration(13, 9, (2, 0, 3, 1))
    direct = configured_dependencies(16, config)
    assert direct == relabelled_dependencies(16, config)
    assert deadlock.find_graph_cycle(direct) is None


def test_a_map_that_is_not_one_to_one_is_refused():
    with pytest.raises(ValueError, match=r"the relabelling is not one to one$"):
        relabelled_dependencies(8, Configuration(8, 0), physical=lambda l: l & ~1)


class StaleRouter(Configuration):
    """Router 5 keeps its address of mask 0 after mask 3 is loaded (a broken reconfiguration)."""

    def logical_address(self, p):
        return 5 if p == 5 else super().logical_address(p)


def test_a_router_that_keeps_its_old_address_is_caught():
    direct = configured_dependencies(8, StaleRouter(8, 3))
    assert direct != relabelled_dependencies(8, Configuration(8, 3))


def test_the_graph_code_finds_a_cycle_in_a_relabelled_graph():
    """Negative control of the acyclicity check: least-significant-first unicasts with
    Algorithm 6 broadcasts close a cycle from 4 nodes, relabelled or not."""
    prone = deadlock.FirstSetBitRouting(topology.LSB_FIRST, travel=topology.MSB_FIRST)
    image = relabelled_dependencies(8, Configuration(8, 5), routing=prone)
    assert deadlock.find_graph_cycle(image) is not None
