"""One router: route selection, fairness, refusal and parameter checks."""

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from ihcube import topology
from ihcube.rtl import RoundRobinArbiter, Router, RouteSelect
from ihcube.rtl import router as router_module
from ihcube.verify.harness import simulate
from tiers import below, slow_unless



def side_by_side(routers):
    """A design holding ``routers`` unconnected, so one simulation exercises them all."""
    m = Module()
    for node, router in enumerate(routers):
        m.submodules[f"router{node}"] = router
    return m


#: How many addresses of one link set a strapped router of the route check takes in turn: fewer
#: routers for Amaranth to compile against more cycles to simulate (4 was the quickest of 2, 4,
#: 8 and 16 measured at 24 and 39 nodes).
ADDRESSES_PER_ROUTER = 4


def nodes_by_link_set(n):
    """The nodes of an ``n``-node fabric grouped by their links (a strapped router's module)."""
    groups = {}
    for node in range(n):
        groups.setdefault(topology.links(n, node), []).append(node)
    return list(groups.values())


def expected_output(n, node, dest, order):
    """What a unicast from ``node`` to ``dest`` takes by Algorithm 2: ``[link]``, ``["pe"]``
    at its destination, nothing (``[]``, refused) for a node that does not exist."""
    if dest >= n:
        return []
    step = topology.route_step(n, node, dest, order)
    return ["pe" if step is None else step]


def route_mismatches(n, router=Router, strap=True, order="msb"):
    """Inject every address at every router of an ``n``-node fabric, with all outputs ready;
    return the (node, dest, expected, seen) cases where the output a message took is not
    the one :func:`ihcube.topology.route_step` chooses (or a refusal for ``dest >= n``).

    Strapped, a router depends on its node only through its link set and its ``address``
    port, as in the fabric (one module per link set): the check builds a router per
    :data:`ADDRESSES_PER_ROUTER` nodes of a link set and gives it each of their addresses in
    turn, a round each, draining between rounds. With a constant address (``strap=False``)
    it builds every node's router."""
    if strap:
        nodes_of = [nodes[i:i + ADDRESSES_PER_ROUTER] for nodes in nodes_by_link_set(n)
                    for i in range(0, len(nodes), ADDRESSES_PER_ROUTER)]
    else:
        nodes_of = [[node] for node in range(n)]
    routers = [router(n, nodes[0], order=order, strap=strap) for nodes in nodes_of]
    mismatches = []

    async def testbench(ctx):
        for r in routers:
            for port in [*r.links_out, r.eject]:
                ctx.set(port.ready, 1)
        for round_ in range(max(len(nodes) for nodes in nodes_of)):
            # Each router takes the next address of its link set (or repeats its last one).
            at = [nodes[min(round_, len(nodes) - 1)] for nodes in nodes_of]
            for node, r in zip(at, routers):
                if strap:
                    ctx.set(r.address, node)
                ctx.set(r.inject.valid, 0)
            # Drain the last round's message; buffers are ready from the first cycle after reset.
            await ctx.tick().repeat(2)
            for r in routers:
                ctx.set(r.inject.valid, 1)
            # The PE offers a message every cycle; the one-message injection buffer takes one
            # every other cycle, and in between the previous one shows which output it chose.
            for dest in range(1 << topology.address_bits(n)):
                for r in routers:
                    ctx.set(r.inject.payload.dest, dest)
                await ctx.tick()
                for node, r in zip(at, routers):
                    seen = [dim for dim, port in zip(r.dims, r.links_out) if ctx.get(port.valid)]
                    if ctx.get(r.eject.valid):
                        seen.append("pe")
                    expected = expected_output(n, node, dest, order)
                    if seen != expected:
                        mismatches.append((node, dest, expected, seen))
                await ctx.tick()

    simulate(side_by_side(routers), testbench)
    return mismatches


def route_select_mismatches(n, order="msb", route_select=RouteSelect):
    """Evaluate the route selector of every node of an ``n``-node fabric for every existing
    ``dest`` (one selector per link set, given each address of its set: the selector is
    combinational); return the (node, dest, expected, seen) cases where its choice is not
    :func:`ihcube.topology.route_step`'s."""
    groups = nodes_by_link_set(n)
    selects = [route_select(n, nodes[0], order) for nodes in groups]
    mismatches = []

    async def testbench(ctx):
        for nodes, select in zip(groups, selects):
            for node in nodes:
                ctx.set(select.address, node)
                for dest in range(n):
                    ctx.set(select.dest, dest)
                    link = ctx.get(select.link)
                    seen = [dim for b, dim in enumerate(select.outputs) if link >> b & 1]
                    if ctx.get(select.deliver):
                        seen.append("pe")
                    expected = expected_output(n, node, dest, order)
                    if seen != expected:
                        mismatches.append((node, dest, expected, seen))

    sim = Simulator(side_by_side(selects))
    sim.add_testbench(testbench)
    sim.run()
    return mismatches


@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_route_selector_matches_topology_at_every_size(order):
    """The route selector alone (Katseff, Algorithm 2, the RTL) at every size up to 40, every
    node and every destination that exists. The whole router is checked below at the sizes
    that hold every router class (a node's links and the onward links of each) up to 40."""
    for n in range(1, 41):
        assert route_select_mismatches(n, order) == [], n


class MaskBlindRouteSelect(RouteSelect):
    """Negative control: takes the highest bit of ``node XOR dest``, link or no link."""

    @property
    def usable(self):
        return (1 << topology.dimensions(self._n)) - 1


def test_route_selector_check_catches_a_selector_that_ignores_the_existence_mask():
    # n = 26: node 12 to node 16 differs in bits 4, 3, 2; 12 XOR 16 = 28 does not exist,
    # so Algorithm 2 takes link 3 (to node 4); the blind selector picks the missing link 4.
    assert (12, 16, [3], []) in route_select_mismatches(26, route_select=MaskBlindRouteSelect)


def router_check_sizes(largest=40, every_from=17):
    """The sizes of the router-level route check: every size below ``every_from``, then the
    fewest larger ones (the largest first) that hold every router class
    (:func:`ihcube.topology.router_class`) of any size up to ``largest`` not seen below."""
    seen = {topology.router_class(n, node) for n in range(1, every_from) for node in range(n)}
    new = {n: {topology.router_class(n, node) for node in range(n)} - seen
           for n in range(every_from, largest + 1)}
    left, sizes = set().union(*new.values()), list(range(1, every_from))
    while left:
        n = max(new, key=lambda size: (len(new[size] & left), size))
        sizes.append(n)
        left -= new[n]
    return sorted(sizes)


def test_the_router_check_sizes_hold_every_router_class_up_to_40():
    classes = {topology.router_class(n, node) for n in range(1, 41) for node in range(n)}
    assert {topology.router_class(n, node) for n in router_check_sizes()
            for node in range(n)} == classes
    assert set(range(1, 17)) < set(router_check_sizes()) < set(range(1, 41))


@pytest.mark.parametrize("n", slow_unless(router_check_sizes(), below(17)))
def test_route_selection_matches_topology(n):
    """Every (node, dest) pair leaves on the Algorithm 2 link, or reaches the PE, through the
    whole router (the injection buffer, the stored wants, the arbiters, the crossbar)."""
    assert route_mismatches(n) == []


@pytest.mark.slow
@pytest.mark.parametrize("n, strap, order", slow_unless([(26, False, "msb"), (23, True, "lsb"),
                                                         (40, False, "lsb")], below(24)))
def test_route_selection_variants(n, strap, order):
    """The same with a constant address, and with least-significant-first routing."""
    assert route_mismatches(n, strap=strap, order=order) == []


class MaskBlindRouter(Router):
    route_select = MaskBlindRouteSelect


@pytest.mark.slow
def test_route_check_catches_a_router_that_ignores_the_existence_mask():
    # n = 26: node 12 to node 16 differs in bits 4, 3, 2; 12 XOR 16 = 28 does not exist,
    # so Algorithm 2 takes link 3 (to node 4); the blind router picks the missing link 4.
    mismatches = route_mismatches(26, router=MaskBlindRouter)
    assert (12, 16, [3], []) in mismatches


def saturated_eject_latencies(router, cycles=200):
    """Keep every input of ``router`` full of messages for its own PE, with the PE always
    accepting; return, per input, the cycles from acceptance to delivery of each message,
    counting messages still waiting at the end as waiting until then."""
    inputs = [*router.links_in, router.inject]
    accepted = {}  # payload -> (input, cycle)
    latencies = [[] for _ in inputs]

    async def testbench(ctx):
        counters = [0] * len(inputs)
        ctx.set(router.eject.ready, 1)
        for cycle in range(cycles):
            for j, port in enumerate(inputs):
                ctx.set(port.payload.dest, router.node)
                ctx.set(port.payload.payload, j << 16 | counters[j])
                ctx.set(port.valid, 1)
            for j, port in enumerate(inputs):
                if ctx.get(port.ready):
                    accepted[j << 16 | counters[j]] = (j, cycle)
                    counters[j] += 1
            if ctx.get(router.eject.valid):
                payload = ctx.get(router.eject.payload).payload
                j, since = accepted.pop(payload)
                latencies[j].append(cycle - since)
            await ctx.tick()
        for j, since in accepted.values():
            latencies[j].append(cycles - since)

    simulate(router, testbench)
    return latencies


@pytest.mark.parametrize("n, node", [(8, 0), (26, 0), (26, 25), (2, 1)])
def test_fairness_bound_with_every_input_saturated(n, node):
    """Each input's messages reach the PE within the documented k + 1 cycles."""
    router = Router(n, node)
    bound = len(router.dims) + 1
    latencies = saturated_eject_latencies(router)
    for j, waits in enumerate(latencies):
        assert len(waits) >= 20, f"input {j} was served only {len(waits)} times"
        assert max(waits) <= bound, f"input {j} waited {max(waits)} > {bound} cycles"


class FixedPriorityArbiter(RoundRobinArbiter):
    """Negative control: always grants the lowest-numbered requester."""

    def elaborate(self, platform):
        m = Module()
        for j in reversed(range(self.count)):
            with m.If(self.requests[j]):
                m.d.comb += self.grant.eq(1 << j)
        m.d.comb += self.valid.eq(self.grant.any())
        return m


class UnfairRouter(Router):
    arbiter = FixedPriorityArbiter


def test_fairness_check_catches_a_fixed_priority_arbiter():
    router = UnfairRouter(8, 0)
    latencies = saturated_eject_latencies(router)
    assert max(max(waits) for waits in latencies) > len(router.dims) + 1


def test_refused_injection_is_counted_and_the_pe_is_not_stalled():
    router = Router(5, 2)

    async def testbench(ctx):
        ctx.set(router.eject.ready, 1)
        for dest in (6, 7, 2, 5):  # three names of no node, one of itself
            ctx.set(router.inject.payload.dest, dest)
            ctx.set(router.inject.valid, 1)
            while not ctx.get(router.inject.ready):
                await ctx.tick()
            await ctx.tick()
        ctx.set(router.inject.valid, 0)
        for _ in range(3):
            await ctx.tick()
        assert ctx.get(router.refused) == 1
        assert ctx.get(router.refused_count) == 3

    simulate(router, testbench)


@pytest.mark.parametrize("ports", [1, 2])
def test_refused_count_saturates(monkeypatch, ports):
    """The count stops at its top (a 3-bit counter here, so the top is 7 and 10 refusals
    reach it): a counter that wrapped would read 10 mod 8 = 2."""
    monkeypatch.setattr(router_module, "REFUSED_COUNT_WIDTH", 3)
    router = Router(5, 2, ports=ports)
    port = router.inject if ports == 1 else router.inject[0]
    assert len(router.refused_count) == 3

    async def testbench(ctx):
        ctx.set(port.payload.dest, 6)  # no such node
        ctx.set(port.valid, 1)
        refused = 0
        while refused < 10:
            if ctx.get(port.ready):
                refused += 1
            await ctx.tick()
        ctx.set(port.valid, 0)
        await ctx.tick()
        assert ctx.get(router.refused_count) == 7

    simulate(router, testbench)


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((0, 0), {}, ValueError, r"^Node count must be a positive integer, not 0$"),
    (("26", 0), {}, TypeError, r"^Node count must be a positive integer, not '26'$"),
    ((26, 26), {}, ValueError, r"^Node must be an integer from 0 to 25, not 26$"),
    ((26, -1), {}, ValueError, r"^Node must be an integer from 0 to 25, not -1$"),
    ((26, 0), {"payload_width": 0}, ValueError,
     r"^Payload width must be a positive integer, not 0$"),
    ((26, 0), {"depth": 1.5}, TypeError, r"^Buffer depth must be a positive integer, not 1.5$"),
    ((26, 0), {"order": "middle"}, ValueError,
     r"^Routing order must be one of 'msb' or 'lsb', not 'middle'$"),
])
def test_wrong_parameters(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        Router(*args, **kwargs)


def test_ports_exist_for_existing_links_only():
    # n = 26 (binary 11010): node 0 has 5 links, node 25 has links 0, 3 and 4 only.
    assert Router(26, 0).dims == (0, 1, 2, 3, 4)
    assert Router(26, 25).dims == (0, 3, 4)
    assert len(Router(26, 25).links_out) == 3
    assert Router(1, 0).dims == ()
