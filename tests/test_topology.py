"""The topology rules, checked against the theorems they must honour (SPEC sections 1-4)."""

import pytest

from ihcube import topology


def test_dimensions_and_examples_from_the_spec():
    assert [topology.dimensions(n) for n in (1, 2, 3, 4, 5, 8, 9, 26, 1024, 1025)] == \
        [0, 1, 2, 2, 3, 3, 4, 5, 10, 11]
    # n = 26 (binary 11010): node 0 has 5 links, node 25 has 3.
    assert len(topology.links(26, 0)) == 5
    assert topology.links(26, 25) == (0, 3, 4)  # 25 XOR 2, 25 XOR 4 are 27, 29
    assert topology.address_bits(1) == 1


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 26, 100, 129])
def test_links_are_symmetric_and_complete_cubes_are_regular(n):
    for a in range(n):
        for i in topology.links(n, a):
            b = topology.neighbor(a, i)
            assert b < n and i in topology.links(n, b)
        if n & (n - 1) == 0:
            assert len(topology.links(n, a)) == topology.dimensions(n)


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_theorem_1_every_pair_has_a_shortest_route(order):
    """Katseff, Theorem 1: a usable link always exists, and the path length is the
    Hamming distance, never more than D; each hop crosses an existing link."""
    for n in list(range(1, 70)) + [100, 127, 129, 200]:
        for src in range(n):
            for dest in range(n):
                nodes = topology.path(n, src, dest, order)
                assert len(nodes) - 1 == bin(src ^ dest).count("1") <= topology.dimensions(n)
                for a, b in zip(nodes, nodes[1:]):
                    assert (a ^ b).bit_count() == 1 and b < n


@pytest.mark.parametrize("n", list(range(1, 41)) + [64, 100, 129])
def test_distance_is_the_route_length_and_the_shortest_path(n):
    """``distance`` equals the unicast path length in both orders and the breadth-first
    distance over the existing links (so no route is longer than it must be)."""
    for src in range(n):
        hops = {src: 0}
        frontier = [src]
        while frontier:
            following = []
            for a in frontier:
                for i in topology.links(n, a):
                    b = topology.neighbor(a, i)
                    if b not in hops:
                        hops[b] = hops[a] + 1
                        following.append(b)
            frontier = following
        row = topology.distances(n, src)
        assert row == [hops[dest] for dest in range(n)]
        for dest in range(n):
            assert topology.distance(n, src, dest) == row[dest]
            for order in topology.ROUTING_ORDERS:
                assert len(topology.path(n, src, dest, order)) - 1 == row[dest]


def test_diameter_is_the_largest_distance():
    """The closed form against every pair, n = 1 to 100; a wrong one (the diameter of the
    largest complete cube inside, ``floor(log2 n)``) differs wherever n is not a power of
    two."""
    wrong = []
    for n in range(1, 101):
        largest = max(max(topology.distances(n, a)) for a in range(n))
        assert topology.diameter(n) == largest
        if (n.bit_length() - 1) != largest:
            wrong.append(n)
    assert len(wrong) == 100 - 7  # all but 1, 2, 4, ..., 64


def test_msb_route_takes_highest_usable_bit():
    # n = 26, node 12 to node 16: bits 4, 3, 2 differ; 12 XOR 16 = 28 does not exist,
    # 12 XOR 8 = 4 does, so link 3. Least-significant-first takes link 2 (to node 8).
    assert topology.route_step(26, 12, 16) == 3
    assert topology.route_step(26, 12, 16, "lsb") == 2
    assert topology.route_step(26, 12, 12) is None


@pytest.mark.parametrize("n", list(range(1, 41)) + [64, 100, 129])
def test_theorems_3_and_4_broadcast_reaches_each_node_once_along_its_unicast_path(n):
    for origin in range(n):
        sends = topology.broadcast_tree(n, origin)
        receivers = [to for _, to, _ in sends]
        assert sorted(receivers) == [v for v in range(n) if v != origin]
        for frm, to, _ in sends:
            assert frm == topology.path(n, origin, to)[-2]


def test_travel_mask_keeps_lower_bits_and_bits_of_missing_links():
    # n = 26, node 25 has links 0, 3, 4; links 1 and 2 are missing.
    assert topology.travel_mask(26, 25, 4) == 0b01111
    assert topology.travel_mask(26, 25, 3) == 0b00111
    assert topology.travel_mask(26, 25, 0) == 0b00110


def turns_taken(n, order):
    """Every (node, input link, output link) that some unicast path or broadcast tree uses,
    found by walking them all with :func:`topology.path` and :func:`topology.broadcast_tree`."""
    turns = set()
    for src in range(n):
        for dest in range(n):
            hops = topology.path(n, src, dest, order)
            for before, here, after in zip(hops, hops[1:], hops[2:]):
                turns.add((here, (before ^ here).bit_length() - 1, (here ^ after).bit_length() - 1))
        sends = topology.broadcast_tree(n, src, order)
        came_by = {to: (frm ^ to).bit_length() - 1 for frm, to, _ in sends}
        for frm, to, _ in sends:
            if frm in came_by:
                turns.add((frm, came_by[frm], (frm ^ to).bit_length() - 1))
    return turns


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_onward_links_hold_every_turn_taken(order):
    """The router builds paths from input l to the onward links only: every turn of every
    unicast path and broadcast tree must be among them, for each node and its link set."""
    for n in range(1, 71):
        for node, came, leaves in turns_taken(n, order):
            assert leaves in topology.onward_links(n, node, came, order), (n, node, came, leaves)
            assert leaves in topology.link_set_onward_links(n, node, came, order)


def test_onward_links_leave_out_what_no_message_needs():
    # Complete 16-node cube, msb: a message that came by link 3 may go on by 2, 1, 0; one
    # that came by link 0 has nowhere to go but the PE. lsb is the mirror image.
    assert topology.onward_links(16, 5, 3) == (0, 1, 2)
    assert topology.onward_links(16, 5, 0) == ()
    assert topology.onward_links(16, 5, 0, "lsb") == (1, 2, 3)
    # n = 3: node 1 has no link 1, so its messages for node 2 go by node 0, which turns them
    # from link 0 up to link 1.
    assert topology.onward_links(3, 0, 0) == (1,)
    # n = 26: node 2 came by link 3 from node 10, which has no link 4 (26 does not exist), so
    # the message may still have bit 4 to correct.
    assert topology.onward_links(26, 2, 3) == (0, 1, 2, 4)


def test_onward_links_check_catches_a_rule_without_missing_links():
    """Negative control: onward links that ignore missing links miss turns the paths take."""
    missed = [(n, node, came, leaves) for n in range(1, 9)
              for node, came, leaves in turns_taken(n, "msb") if not leaves < came]
    assert (3, 0, 0, 1) in missed


def dest_bits_agreed(n, a, l, order):
    """Brute force: the bits in which every destination address (``dest`` < 2**D, the
    nonexistent ones too) that :func:`topology.route_step` sends from ``a`` on link ``l``
    agrees with ``neighbor(a, l)``."""
    D = topology.dimensions(n)
    agreed = (1 << D) - 1
    for dest in range(1 << D):
        if topology.route_step(n, a, dest, order) == l:
            agreed &= ~(dest ^ topology.neighbor(a, l))
    return agreed


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_known_dest_mask_is_what_every_routed_unicast_agrees_on(order):
    """The router drives these bits of an outgoing link's dest from its address: every
    destination the route step sends on that link must have them (and no other bit is
    shared by all of them, so the mask is also the most there is to save)."""
    for n in range(1, 71):
        for a in range(n):
            for l in topology.links(n, a):
                assert topology.known_dest_mask(n, a, l, order) == dest_bits_agreed(
                    n, a, l, order), (n, a, l)


def test_known_dest_mask_check_catches_one_dimension_too_many():
    """Negative control: a mask with the next dimension in routing order as well (what
    :data:`ihcube.verify.faults.FAULTS`' "known-dest-one-too-many" router drives) is not what
    the routed destinations agree on."""
    n, a, l = 26, 0, 3  # msb: known bits 3 and 4; bit 2 is still to be corrected
    assert topology.known_dest_mask(n, a, l) == 0b11000
    assert dest_bits_agreed(n, a, l, "msb") & 0b00100 == 0
    # node 25 (links 0, 3, 4): bits 1 and 2 are missing links, not known on link 0
    assert topology.known_dest_mask(26, 25, 0) == 0b11001


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_relayed_dest_of_a_broadcast_copy(order):
    """A broadcast copy's dest on a link: the known bits of each link it crossed set to that
    link's far end, in path order, the rest as the origin's PE gave it."""
    for n in (3, 7, 13, 26):
        for src in range(n):
            for frm, to, _ in topology.broadcast_tree(n, src, order):
                l = (frm ^ to).bit_length() - 1
                for given in (0, (1 << topology.dimensions(n)) - 1):
                    relayed = topology.relayed_dest(n, src, frm, l, given, order)
                    nodes = topology.path(n, src, to, order)
                    crossed = [topology.known_dest_mask(n, x, (x ^ y).bit_length() - 1, order)
                               for x, y in zip(nodes, nodes[1:])]
                    mask = topology.known_dest_mask(n, frm, l, order)
                    assert relayed & mask == to & mask
                    untouched = ~_union(crossed)
                    assert relayed & untouched == given & untouched
    # n = 26, msb, origin 0 to node 10 by node 8: link 3 from 0 sets bits 3, 4 to 8's
    # (0b01000), then link 1 from 8 sets bits 1 to 4 to 10's (0b01010); bit 0 stays.
    assert topology.relayed_dest(26, 0, 8, 1, 0b00101) == 0b01011


def _union(masks):
    union = 0
    for mask in masks:
        union |= mask
    return union


@pytest.mark.parametrize("call, error, message", [
    (lambda: topology.dimensions(0), ValueError,
     r"^Node count must be a positive integer, not 0$"),
    (lambda: topology.dimensions(2.0), TypeError,
     r"^Node count must be a positive integer, not 2.0$"),
    (lambda: topology.dimensions(True), TypeError,
     r"^Node count must be a positive integer, not True$"),
    (lambda: topology.check_node(5, 5), ValueError,
     r"^Node must be an integer from 0 to 4, not 5$"),
    (lambda: topology.check_routing_order("MSB"), ValueError,
     r"^Routing order must be one of 'msb' or 'lsb', not 'MSB'$"),
])
def test_wrong_parameters(call, error, message):
    with pytest.raises(error, match=message):
        call()
