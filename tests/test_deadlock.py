"""Deadlock freedom of the routing (SPEC sections 2-4): the channel dependency graph, and the
theorems of Katseff that it rests on, checked over many sizes with vectorized forms of the
rules that are themselves checked against :mod:`ihcube.topology`."""

import random
import re
import time
from unittest import mock

import numpy as np
import pytest

from ihcube import deadlock, topology
from ihcube.deadlock import EJECT, INJECT, Channel, FirstSetBitRouting
from ihcube.rtl import Fabric


def by_weight_parity(node):
    """Most-significant-first at nodes with an even number of ones, else least: every hop
    changes the parity, so the scan order flips at every hop."""
    return topology.MSB_FIRST if bin(node).count("1") % 2 == 0 else topology.LSB_FIRST


def by_node_parity(node):
    """Most-significant-first at even nodes, least at odd ones (the issue's example)."""
    return topology.MSB_FIRST if node % 2 == 0 else topology.LSB_FIRST


MSB = deadlock.routing_for("msb")
LSB = deadlock.routing_for("lsb")
WEIGHT_PARITY = FirstSetBitRouting(by_weight_parity, name="weight parity")
NODE_PARITY = FirstSetBitRouting(by_node_parity, name="node parity")
# Deadlock-prone variants: every node forks broadcasts by Algorithm 6 (the msb rule), whatever
# its scan order.
LSB_ALGORITHM_6 = FirstSetBitRouting("lsb", name="lsb with Algorithm 6", travel="msb")
NODE_PARITY_ALGORITHM_6 = FirstSetBitRouting(by_node_parity, name="node parity with "
                                             "Algorithm 6", travel="msb")

#: Sizes beyond the exhaustive ranges: the issue's, powers of two and their neighbours,
#: Tzeng and Kumar's incomplete sizes, and a few odd ones.
LARGE_SIZES = [1000, 1025, 1048, 1114, 1365, 1818, 2047, 2048, 2049, 2730, 3001, 3333, 4095,
               4096]


def links_of(n, exists):
    """Which (node, dim) entries of an ``(n, D)`` table are links, from the exists vectors."""
    return exists[:, None] >> np.arange(topology.dimensions(n)) & 1 == 1


# --- The vectorized rules against ihcube.topology -----------------------------------------------


@pytest.mark.parametrize("sizes", [range(1, 301), [511, 512, 513, 1048, 2047, 4095, 4096]])
def test_link_tables_are_the_topology_rules(sizes):
    for n in sizes:
        exists, travel = deadlock.link_tables(n)
        nodes = range(n) if n <= 300 else random.Random(n).sample(range(n), 300)
        for a in nodes:
            assert exists[a] == topology.exists_mask(n, a)
            assert list(travel[a]) == [topology.travel_mask(n, a, l)
                                       for l in range(topology.dimensions(n))]


@pytest.mark.parametrize("routing", [MSB, LSB, WEIGHT_PARITY, NODE_PARITY], ids=str)
def test_route_table_is_the_route_function(routing):
    for n in list(range(1, 41)) + [100, 129]:
        table = deadlock.route_table(n, routing)
        assert [[None if dim < 0 else dim for dim in row] for row in table.tolist()] == \
            [[routing(n, a, d) for d in range(n)] for a in range(n)]
    for n in [1024, 1048]:
        table = deadlock.route_table(n, routing)
        rng = random.Random(n)
        for _ in range(2000):
            a, d = rng.randrange(n), rng.randrange(n)
            assert routing(n, a, d) == (None if table[a, d] < 0 else table[a, d])


# --- Katseff's theorems, fast --------------------------------------------------------------------


def test_theorem_1_a_usable_link_always_exists_for_every_size_up_to_1024():
    """Katseff, Theorem 1, for all pairs of every n <= 1024: ``(a XOR d) AND exists(a)`` is
    never zero for ``a != d``. Both routing orders pick a bit of it, and each hop then clears
    that bit of ``a XOR d`` over an existing link, so by induction every route arrives after
    exactly ``popcount(a XOR d) <= D`` hops (checked hop by hop in the next test)."""
    for n in range(1, 1025):
        exists, _ = deadlock.link_tables(n)
        node = np.arange(n, dtype=np.int32)
        usable = (node[:, None] ^ node[None, :]) & exists[:, None].astype(np.int32)
        assert ((usable == 0) == np.eye(n, dtype=bool)).all(), n


def walk_all_pairs(n, routing):
    """Follow the routes of all ``n**2`` pairs at once; return the hop counts, checking that
    every hop crosses an existing link and clears the bit it crosses."""
    table = deadlock.route_table(n, routing)
    exists, _ = deadlock.link_tables(n)
    dest = np.broadcast_to(np.arange(n), (n, n))
    at = np.broadcast_to(np.arange(n)[:, None], (n, n)).copy()
    hops = np.zeros((n, n), np.int64)
    for _ in range(topology.dimensions(n) + 1):
        moving = at != dest
        if not moving.any():
            break
        dim = table[at, dest].astype(np.int64)
        assert (dim[moving] >= 0).all()
        assert (exists[at[moving]] >> dim[moving] & 1 == 1).all()
        assert ((at[moving] ^ dest[moving]) >> dim[moving] & 1 == 1).all()
        at = np.where(moving, at ^ (1 << np.maximum(dim, 0)), at)
        hops += moving
    assert (at == dest).all()
    return hops


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_theorem_1_routes_are_shortest(order):
    """Every route of every pair is ``popcount(a XOR d) <= D`` hops: all n <= 128 and a spread
    of sizes up to 1024 (every 97th, and the ones around powers of two)."""
    sizes = sorted({*range(1, 129), *range(129, 1025, 97), 255, 257, 511, 513, 1023, 1024})
    for n in sizes:
        node = np.arange(n)
        hamming = np.bitwise_count(node[:, None] ^ node[None, :])
        hops = walk_all_pairs(n, deadlock.routing_for(order))
        assert (hops == hamming).all() and hops.max(initial=0) <= topology.dimensions(n), n
    # And some paths of topology.path itself, beyond test_topology's sizes.
    rng = random.Random(1)
    for n in [70, 255, 257, 600, 1000, 1023, 1024]:
        for _ in range(200):
            src, dest = rng.randrange(n), rng.randrange(n)
            nodes = topology.path(n, src, dest, order)
            assert len(nodes) - 1 == (src ^ dest).bit_count() <= topology.dimensions(n)


def broadcast_from_every_origin(n, order="msb"):
    """Run a broadcast from every node at once, by the travel rule of ``order`` (Algorithm 6
    or its mirror image) over the link tables.

    Returns ``(received, parent)``: how many copies node ``v`` got of the broadcast from ``o``,
    and from which node it got (the last of) them.
    """
    exists, travel = deadlock.link_tables(n, np.full(n, order == "msb"))
    received = np.zeros((n, n), np.int64)
    parent = np.full((n, n), -1, np.int64)
    origin = np.arange(n)
    at = np.arange(n)
    held = np.full(n, topology.full_travel(n), np.int64)
    while origin.size:
        copies = []
        for dim in range(topology.dimensions(n)):
            fork = (exists[at] >> dim & 1 == 1) & (held >> dim & 1 == 1)
            o, a = origin[fork], at[fork]
            b = a ^ (1 << dim)
            np.add.at(received, (o, b), 1)
            parent[o, b] = a
            copies.append((o, b, held[fork] & travel[a, dim]))
        origin, at, held = (np.concatenate(part) for part in zip(*copies)) if copies else \
            (np.empty(0, np.int64),) * 3
    return received, parent


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_theorems_3_and_4_for_every_origin_up_to_256(order):
    """Katseff, Theorems 3 and 4, for every origin of every n <= 256: each other node gets
    exactly one copy, and the copy came along the whole unicast path from the origin: every
    hop of that path is an edge of the broadcast tree. For msb that is Algorithm 6; for lsb
    the mirrored travel rule of topology.travel_mask, for which this is the evidence."""
    for n in range(1, 257):
        received, parent = broadcast_from_every_origin(n, order)
        assert (received == 1 - np.eye(n, dtype=np.int64)).all(), n
        table = deadlock.route_table(n, deadlock.routing_for(order))
        origin = np.broadcast_to(np.arange(n)[:, None], (n, n))
        dest = np.broadcast_to(np.arange(n), (n, n))
        at = origin.copy()
        for _ in range(topology.dimensions(n)):
            moving = at != dest
            step = np.where(moving, at ^ (1 << np.maximum(table[at, dest].astype(np.int64), 0)),
                            dest)
            assert (parent[origin, step] == at)[moving].all(), n
            at = step
        assert (at == dest).all()


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_vectorized_broadcast_is_broadcast_tree(order):
    for n in [1, 2, 3, 5, 13, 26, 40]:
        received, parent = broadcast_from_every_origin(n, order)
        for origin in range(n):
            tree = topology.broadcast_tree(n, origin, order)
            assert sorted((frm, to) for frm, to, _ in tree) == \
                sorted((int(parent[origin, v]), v) for v in range(n) if v != origin)


# --- The channel dependency graph: fast table against enumeration ------------------------------


@pytest.mark.parametrize("routing", [MSB, LSB, WEIGHT_PARITY, NODE_PARITY, LSB_ALGORITHM_6,
                                     NODE_PARITY_ALGORITHM_6], ids=str)
@pytest.mark.parametrize("broadcast", [True, False], ids=["broadcast", "unicast"])
def test_dependency_table_is_the_enumerated_graph(routing, broadcast):
    """The bit-reasoning graph equals the one enumerated from the route function and
    topology.broadcast_step, edge for edge, PE channels included: every n <= 40, and larger
    sizes for the router's own routings. (``ihcube deadlock --cross-check 300`` does every
    n <= 300.)"""
    sizes = list(range(1, 41))
    if routing in (MSB, LSB) and broadcast:
        sizes += [64, 100, 129, 256]
    for n in sizes:
        depends, _ = deadlock.dependency_table(n, routing, broadcast=broadcast)
        assert deadlock.table_dependencies(n, depends) == \
            deadlock.channel_dependencies(n, routing, broadcast=broadcast), n


@pytest.mark.parametrize("routing", [MSB, LSB, WEIGHT_PARITY, LSB_ALGORITHM_6], ids=str)
def test_dependencies_of_large_sizes_against_the_route_function(routing):
    """For large n, sampled: every unicast witness makes its dependency under
    ``topology.route_step``; a channel's dependencies are exactly the next hops of the
    destinations routed over it; and broadcast dependencies are the forks of the broadcast
    from the channel's start."""
    for n in [1000, 1048, 2047, 4096]:
        rng = random.Random(n)
        depends, witness = deadlock.dependency_table(n, routing)
        unicast, _ = deadlock.dependency_table(n, routing, broadcast=False)
        assert (unicast == (witness >= 0)).all()
        for a, i, j in rng.sample(np.argwhere(witness >= 0).tolist(), 300):
            d, b = int(witness[a, i, j]), topology.neighbor(a, i)
            assert routing(n, a, d) == i and routing(n, b, d) == j
        exists, _ = deadlock.link_tables(n)
        for a, i in rng.sample(np.argwhere(links_of(n, exists)).tolist(), 3):
            b = topology.neighbor(a, i)
            nexts = {routing(n, b, d) for d in range(n) if routing(n, a, d) == i}
            assert nexts - {None} == set(np.flatnonzero(unicast[a, i]).tolist())
            steps = topology.broadcast_step(n, a, topology.full_travel(n),
                                            deadlock.travel_order(routing, a))
            travel = dict(steps)[i]
            forks = {dim for dim, _ in topology.broadcast_step(
                n, b, travel, deadlock.travel_order(routing, b))}
            assert set(np.flatnonzero(depends[a, i]).tolist()) == \
                set(np.flatnonzero(unicast[a, i]).tolist()) | forks


# --- The verdicts ---------------------------------------------------------------------------------


SIZES = [*range(1, 1025), *LARGE_SIZES]


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_routing_with_broadcasts_is_deadlock_free(order):
    """The router's routing, unicasts and broadcasts together (Algorithm 6 for msb, its
    mirror image for lsb): acyclic for every n <= 1024 and the large sizes. (``ihcube
    deadlock`` does every n <= 4096.)"""
    [result] = deadlock.sweep(0, [order], sizes=SIZES)
    assert result.cyclic == []


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_broadcasts_add_no_dependency(order):
    """Theorems 3 and 4 in graph form: every broadcast dependency is also a unicast one,
    since each copy follows a unicast path of the same order."""
    routing = deadlock.routing_for(order)
    for n in SIZES[::7] + LARGE_SIZES:
        with_broadcasts, _ = deadlock.dependency_table(n, routing)
        unicast, _ = deadlock.dependency_table(n, routing, broadcast=False)
        assert (with_broadcasts == unicast).all(), n


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_unicast_routing_alone_is_deadlock_free(order):
    [result] = deadlock.sweep(0, [order], broadcast=False, sizes=SIZES)
    assert result.cyclic == []


LSB_ALGORITHM_6_CYCLE = ("0 -(dim 0)-> 1 -(dim 1)-> 3 -(dim 0)-> 2 -(dim 1)-> 0 "
             "(at node 1 a unicast for node 3 waits for dim 1; "
             "at node 3 a broadcast from node 1 waits for dim 0; "
             "at node 2 a unicast for node 0 waits for dim 1; "
             "at node 0 a broadcast from node 2 waits for dim 0)")


def test_lsb_unicasts_with_algorithm_6_broadcasts_can_deadlock():
    """Why lsb routers mirror the travel rule: least-significant-first unicasts climb the
    dimensions while Algorithm 6 copies descend them (they follow msb paths), and from n = 4
    on the two close a cycle. Every size from 4 up is cyclic; n <= 3 (a path graph) is not."""
    sizes = [*range(1, 65), *LARGE_SIZES]
    assert [n for n in sizes if deadlock.find_cycle(n, LSB_ALGORITHM_6) is not None] == \
        [n for n in sizes if n >= 4]
    assert deadlock.find_cycle(4, LSB_ALGORITHM_6) == [Channel(0, 0), Channel(1, 1),
                                                       Channel(3, 0), Channel(2, 1)]
    with pytest.raises(ValueError, match=rf"^Routing 'lsb with Algorithm 6' of 4 nodes can "
                                         rf"deadlock: its channel dependency graph has the "
                                         rf"cycle {re.escape(LSB_ALGORITHM_6_CYCLE)}$"):
        deadlock.check_deadlock_free(4, routing=LSB_ALGORITHM_6)


def test_cycles_are_real_dependency_cycles():
    for n, routing, broadcast in [(4, LSB_ALGORITHM_6, True), (300, LSB_ALGORITHM_6, True),
                                  (4096, LSB_ALGORITHM_6, True), (4, WEIGHT_PARITY, False),
                                  (1048, WEIGHT_PARITY, False),
                                  (8, NODE_PARITY_ALGORITHM_6, True)]:
        cycle = deadlock.find_cycle(n, routing, broadcast=broadcast)
        depends, _ = deadlock.dependency_table(n, routing, broadcast=broadcast)
        for held, wanted in zip(cycle, cycle[1:] + cycle[:1]):
            assert held.is_link and wanted.node == held.far
            assert depends[held.node, held.dim, wanted.dim]
        assert len(set(cycle)) == len(cycle)
        phrases = deadlock.explain_cycle(n, cycle, routing, broadcast=broadcast)
        assert not any("nothing known" in phrase for phrase in phrases)


# --- Negative controls --------------------------------------------------------------------------


WEIGHT_PARITY_CYCLE = ("0 -(dim 1)-> 2 -(dim 0)-> 3 -(dim 1)-> 1 -(dim 0)-> 0 "
                       "(at node 2 a unicast for node 3 waits for dim 0; "
                       "at node 3 a unicast for node 1 waits for dim 1; "
                       "at node 1 a unicast for node 0 waits for dim 0; "
                       "at node 0 a unicast for node 2 waits for dim 1)")


def test_weight_parity_routing_is_found_cyclic():
    """A deadlock-prone unicast routing: the order flips at every hop, and n = 4 has a cycle."""
    assert [n for n in range(1, 9) if deadlock.find_cycle(n, WEIGHT_PARITY, broadcast=False)] \
        == [4, 5, 6, 7, 8]
    assert deadlock.find_cycle(4, WEIGHT_PARITY, broadcast=False) == \
        [Channel(0, 1), Channel(2, 0), Channel(3, 1), Channel(1, 0)]
    with pytest.raises(ValueError, match=rf"^Routing 'weight parity' of 4 nodes can deadlock: "
                                         rf"its channel dependency graph has the cycle "
                                         rf"{re.escape(WEIGHT_PARITY_CYCLE)}$"):
        deadlock.check_deadlock_free(4, routing=WEIGHT_PARITY, broadcast=False)


def test_node_parity_routing_is_cyclic_only_with_algorithm_6_broadcasts():
    """The issue's example, msb at even nodes and lsb at odd ones, is acyclic for unicasts:
    a path changes order at most once, on a dim-0 hop. With Algorithm 6 broadcasts at every
    node its lsb nodes close a cycle from n = 8; with each node's own travel rule it stays
    acyclic."""
    assert all(deadlock.find_cycle(n, NODE_PARITY, broadcast=False) is None
               for n in range(1, 257))
    assert [n for n in range(1, 17) if deadlock.find_cycle(n, NODE_PARITY_ALGORITHM_6)] == \
        list(range(8, 17))
    assert all(deadlock.find_cycle(n, NODE_PARITY) is None for n in range(1, 257))


def test_any_route_function_is_enumerated():
    """A plain function (not a FirstSetBitRouting) is checked by enumeration."""
    def weight_parity(n, node, dest):
        return topology.route_step(n, node, dest, by_weight_parity(node))

    def msb_first(n, node, dest):
        return topology.route_step(n, node, dest)

    assert deadlock.find_cycle(4, weight_parity, broadcast=False) == \
        deadlock.find_cycle(4, WEIGHT_PARITY, broadcast=False)
    assert deadlock.find_cycle(6, weight_parity) == deadlock.find_cycle(6, WEIGHT_PARITY)
    for n in range(1, 30):
        assert deadlock.find_cycle(n, msb_first) is None
    with pytest.raises(ValueError, match=r"^Routing 'weight_parity' of 4 nodes can deadlock: "):
        deadlock.check_deadlock_free(4, routing=weight_parity, broadcast=False)


# --- At elaboration -----------------------------------------------------------------------------


def test_fabric_refuses_a_cyclic_routing():
    with pytest.raises(ValueError, match=r"^Routing 'weight parity' of 4 nodes can deadlock: "
                                         r"its channel dependency graph has the cycle "
                                         r"0 -\(dim 1\)-> 2 -\(dim 0\)-> 3 .*\)$"):
        Fabric(4, routing=WEIGHT_PARITY)
    with pytest.raises(ValueError, match=r"^Routing 'node parity with Algorithm 6' of 8 nodes "
                                         r"can deadlock: "):
        Fabric(8, routing=NODE_PARITY_ALGORITHM_6)
    with pytest.raises(ValueError, match=rf"^Routing 'lsb with Algorithm 6' of 4 nodes can "
                                         rf"deadlock: its channel dependency graph has the "
                                         rf"cycle {re.escape(LSB_ALGORITHM_6_CYCLE)}$"):
        Fabric(4, order="lsb", routing=LSB_ALGORITHM_6)


@pytest.mark.slow
def test_fabric_builds_with_the_default_routing():
    # Not 1,048 nodes: building its routers took most of a minute and checks nothing more
    # (the check's cost at such sizes: test_elaboration_check_is_cheap_and_cached).
    for n in [1, 2, 3, 4, 26, 100]:
        for order in topology.ROUTING_ORDERS:
            assert Fabric(n, order=order).order == order


def test_elaboration_check_is_cheap_and_cached():
    deadlock.check_deadlock_free(4)  # compile the kernels
    for n in [1024, 4096]:
        started = time.perf_counter()
        deadlock.check_deadlock_free(n - 3)
        assert time.perf_counter() - started < 1.0
    started = time.perf_counter()
    for _ in range(1000):
        deadlock.check_deadlock_free(1021)
    assert time.perf_counter() - started < 0.5


# --- The report and the errors ------------------------------------------------------------------


def test_channels_and_cycles_read_as_links():
    assert str(Channel(3, 1)) == "3 -(dim 1)-> 1"
    assert str(Channel(3, INJECT)) == "PE 3 -> 3"
    assert str(Channel(3, EJECT)) == "3 -> PE 3"
    assert deadlock.format_cycle([Channel(3, 1), Channel(1, 0), Channel(0, 1),
                                  Channel(2, 0)]) == \
        "3 -(dim 1)-> 1 -(dim 0)-> 0 -(dim 1)-> 2 -(dim 0)-> 3"


def test_command_line_summary(capsys):
    from ihcube.cli import main
    assert main(["deadlock", "--max-nodes", "40", "--order", "msb"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  msb: acyclic for all 40 sizes; longest dependency chain \d+ channels "
                     r"\(n = \d+\); [\d.]+ s$", out, re.M)
    assert main(["deadlock", "--max-nodes", "40", "--order", "lsb"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  lsb: acyclic for all 40 sizes; ", out, re.M)
    # A cyclic routing is reported with its smallest cycle and the messages that make it.
    with mock.patch.object(deadlock, "routing_for", lambda order: LSB_ALGORITHM_6):
        assert main(["deadlock", "--max-nodes", "40", "--order", "lsb"]) == 1
    out = capsys.readouterr().out
    assert "  lsb: CYCLIC for 37 of 40 sizes; smallest n = 4: 0 -(dim 0)-> 1 -(dim 1)-> 3" in out
    assert "    at node 3 a broadcast from node 1 waits for dim 0" in out
    assert main(["deadlock", "--max-nodes", "12", "--unicast-only", "--cross-check", "12"]) == 0


@pytest.mark.parametrize("call, error, message", [
    (lambda: deadlock.check_deadlock_free(0), ValueError,
     r"^Node count must be a positive integer, not 0$"),
    (lambda: deadlock.check_deadlock_free(8, "MSB"), ValueError,
     r"^Routing order must be one of 'msb' or 'lsb', not 'MSB'$"),
    (lambda: FirstSetBitRouting("up"), ValueError,
     r"^Routing order must be one of 'msb' or 'lsb', not 'up'$"),
    (lambda: deadlock.dependency_table(8, lambda n, a, d: None), TypeError,
     r"^Routing must be a FirstSetBitRouting, not <function .*>$"),
    (lambda: deadlock.find_cycle(5, lambda n, a, d: None if a == d else 2), ValueError,
     r"^Routing '<lambda>' sends a message at node 1 for node 0 on link 2, which does not "
     r"exist; the links of node 1 are \[0, 1\]$"),
    (lambda: deadlock.find_cycle(3, lambda n, a, d: 0), ValueError,
     r"^Routing '<lambda>' sends a message for node 0 away from it, on link 0$"),
    (lambda: deadlock.find_cycle(3, lambda n, a, d: None), ValueError,
     r"^Routing '<lambda>' has no link at node 0 for node 1$"),
])
def test_wrong_parameters(call, error, message):
    with pytest.raises(error, match=message):
        call()
