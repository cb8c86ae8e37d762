"""The model's public interface for custom traffic (:meth:`Model.offer`, :meth:`Model.advance`).

Messages offered into the PEs' source queues and run with :meth:`~Model.advance` must do what
:meth:`Model.run` does with the same requests (which ``tests/test_model.py`` runs in lockstep
with the RTL), cycle for cycle, however the offers and the cycles are split into calls; and
what they do must follow the topology rules: each unicast crosses the links of
:func:`ihcube.topology.path`, each broadcast reaches every other node once. A broken model
variant must fail the same comparisons. ``docs/model.md``'s example is run here.
"""

import itertools
import pathlib
import re

import numpy as np
import pytest

from ihcube import topology
from ihcube.rtl import Kind
from ihcube.sim.model import DELIVERY, HOP, INJECTION, Model
from ihcube.verify.harness import Request

from test_model import BrokenTravel, lockstep_traffic

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "model.md"


def as_arrays(requests):
    """``(node, Request)`` pairs as the arrays of :meth:`Model.offer`."""
    return (np.array([node for node, _ in requests], np.int64),
            np.array([r.dest for _, r in requests], np.int64),
            np.array([Kind(r.kind).value for _, r in requests], np.int64),
            [r.payload for _, r in requests],
            np.array([r.at for _, r in requests], np.int64))


def offered_in_pieces(model_class, n, requests, eject_ready, pieces):
    """Offer the requests and advance in ``pieces`` calls of each (a piece offers the
    requests whose ``at`` falls in its cycles, then runs them); return the model and the
    records, an injection's ``request`` mapped back to the index in ``requests``."""
    model = model_class(n, depth=2)
    nodes, dests, kinds, payloads, at = as_arrays(requests)
    bounds = np.linspace(0, len(eject_ready), pieces + 1).astype(int)
    request_of = np.zeros(len(requests), np.int64)  # by id
    injections, deliveries, hops = [], [], []
    for begin, end in zip(bounds[:-1], bounds[1:]):
        mine = np.flatnonzero((at >= begin) & (at < end))
        ids = model.offer(nodes[mine], dests[mine], kinds[mine],
                          [payloads[i] for i in mine], at[mine])
        request_of[ids] = mine
        run = model.advance(end - begin, eject_ready[begin:end], record_hops=True)
        injections.append(run.injections)
        deliveries.append(run.deliveries)
        hops.append(run.hops)
    injected = np.concatenate(injections)
    injected["request"] = request_of[injected["request"]]
    return model, injected, np.concatenate(deliveries), np.concatenate(hops)


@pytest.mark.parametrize("n, pieces", [(7, 1), (7, 5), (13, 3), (26, 7)])
def test_offer_and_advance_is_run(n, pieces):
    """The same requests and backpressure give the same injections, deliveries and hops as
    :meth:`Model.run`, in one call or split into several."""
    cycles = 600
    requests, eject_ready = lockstep_traffic(n, 32, cycles, seed=n + pieces)
    expected = Model(n, depth=2).run(cycles, requests, eject_ready, record_hops=True)
    model, injected, delivered, hopped = offered_in_pieces(Model, n, requests, eject_ready,
                                                           pieces)
    assert len(expected.deliveries) > 100 and (expected.deliveries["kind"] == 1).any()
    assert np.array_equal(injected, expected.injections)
    assert np.array_equal(delivered, expected.deliveries)
    assert np.array_equal(hopped, expected.hops)
    assert model.cycle == cycles
    assert model.queued == expected.pending
    assert (model.injected, model.delivered, model.transfers) == (
        len(expected.injections), len(expected.deliveries), len(expected.hops))


def test_a_broken_model_is_caught_by_the_same_comparison():
    """Negative control: a variant with a wrong broadcast travel rule, run through the
    public interface, differs from the real model's :meth:`Model.run`."""
    n, cycles = 13, 600
    requests, eject_ready = lockstep_traffic(n, 32, cycles, seed=16)
    expected = Model(n, depth=2).run(cycles, requests, eject_ready, record_hops=True)
    _, _, delivered, hopped = offered_in_pieces(BrokenTravel, n, requests, eject_ready, 3)
    assert not (np.array_equal(delivered, expected.deliveries)
                and np.array_equal(hopped, expected.hops))


def follows_the_topology(n, order, model, run, count):
    """Problems of ``run`` (the records of the all-pairs traffic of
    :func:`all_pairs`) against the topology rules; an empty list if none."""
    problems = []
    hops_by_message = {}
    for hop in run.hops:
        key = (int(hop["src"]), int(hop["kind"]), int(hop["payload"]))
        hops_by_message.setdefault(key, []).append((int(hop["node"]), int(hop["dim"])))
    for src in range(n):
        for dest in range(n):
            want = [(a, (a ^ b).bit_length() - 1)
                    for a, b in zip(topology.path(n, src, dest, order),
                                    topology.path(n, src, dest, order)[1:])]
            got = hops_by_message.get((src, Kind.UNICAST.value, src * n + dest), [])
            if got != want:
                problems.append(f"unicast {src} -> {dest} took {got}, not {want}")
    unicasts = run.deliveries[run.deliveries["kind"] == Kind.UNICAST.value]
    if sorted(zip(unicasts["src"].tolist(), unicasts["node"].tolist())) != [
            (s, d) for s in range(n) for d in range(n)]:
        problems.append("a unicast was not delivered exactly once, or elsewhere")
    broadcasts = run.deliveries[run.deliveries["kind"] == Kind.BROADCAST.value]
    reached = sorted(zip(broadcasts["src"].tolist(), broadcasts["node"].tolist()))
    if reached != [(s, d) for s in range(n) for d in range(n) if d != s]:
        problems.append("a broadcast did not reach every other node exactly once")
    if len(run.injections) != count or model.queued or not model.idle:
        problems.append("messages were left over")
    return problems


def all_pairs(model):
    """Offer a unicast from every node to every node (itself included) and a broadcast from
    every node; return how many."""
    n = model.n
    src, dest = np.divmod(np.arange(n * n), n)
    model.offer(src, dest, Kind.UNICAST.value, payloads=src * n + dest)
    model.offer(np.arange(n), 0, Kind.BROADCAST.value, payloads=np.arange(n))
    return n * n + n


@pytest.mark.parametrize("n, order", [(1, "msb"), (2, "lsb"), (6, "msb"), (13, "lsb"),
                                      (26, "msb"), (37, "lsb")])
def test_custom_traffic_follows_the_topology_rules(n, order):
    """All-pairs unicasts cross the links of :func:`ihcube.topology.path`, one hop per
    link, and broadcasts reach every other node once."""
    model = Model(n, depth=2, order=order)
    count = all_pairs(model)
    run = model.advance(60 * n + 100, record_hops=True)
    assert follows_the_topology(n, order, model, run, count) == []
    assert model.delivered == n * n + n * (n - 1)


def test_broken_travel_breaks_the_topology_rules():
    """Negative control: the wrong broadcast travel rule reaches some node twice."""
    model = BrokenTravel(13, depth=2)
    count = all_pairs(model)
    run = model.advance(2000, record_hops=True)
    assert "a broadcast did not reach every other node exactly once" in follows_the_topology(
        13, "msb", model, run, count)


def test_link_counts_and_counters():
    """:attr:`Model.link_counts` counts each hop of the recorded ones on its link direction
    (only while asked), the counters add up over calls, and :meth:`Model.reset` clears
    them with the queues."""
    n = 26
    model = Model(n, depth=2)
    all_pairs(model)
    first = model.advance(30, record_hops=True, count_links=True)
    rest = model.advance(3000, record_hops=True)
    counts = np.zeros((n, 5), np.int64)
    np.add.at(counts, (first.hops["node"], first.hops["dim"]), 1)
    assert np.array_equal(model.link_counts, counts) and counts.sum() > 0
    assert model.transfers == len(first.hops) + len(rest.hops)
    assert model.delivered == len(first.deliveries) + len(rest.deliveries)
    assert model.injected == len(first.injections) + len(rest.injections) == n * n + n
    assert model.idle
    model.offer(3, 4)
    assert model.queued == 1 and not model.idle
    model.reset()
    assert (model.queued, model.injected, model.delivered, model.transfers,
            model.cycle) == (0, 0, 0, 0, 0)
    assert not model.link_counts.any()


def test_offers_wait_for_their_cycle_and_withdraw():
    """A message is offered from its ``at`` cycle (taken then, at depth 2, once the buffers
    are ready), after the earlier messages of its PE; :meth:`Model.withdraw` drops what is
    still queued, and the fabric keeps what it has taken."""
    model = Model(8, depth=2)
    ids = model.offer([5, 5, 2], [1, 0, 7], payloads=[10, 11, 12], at=[40, 3, 7])
    assert ids.tolist() == [0, 1, 2]
    run = model.advance(30)
    assert run.injections.tolist() == [(7, 2, 2)]  # node 5's head waits for cycle 40
    assert run.pending == model.queued == 2
    assert model.withdraw() == 2 and model.queued == 0
    assert model.offer(0, 1).tolist() == [3]  # ids go on from where they were
    run = model.advance(20, until_delivered=1)
    assert [(int(d["node"]), int(d["src"]), int(d["payload"])) for d in run.deliveries] == [
        (1, 0, 0)]
    assert model.cycle == int(run.deliveries["cycle"][0]) + 1  # stopped in that cycle


def test_until_delivered_stops_in_the_cycle():
    """``until_delivered`` stops at the end of the cycle that reaches it: the records then
    are a prefix of those of a longer run."""
    n = 16
    full = Model(n, depth=2)
    all_pairs(full)
    whole = full.advance(400)
    for k in (1, 50, 400):
        model = Model(n, depth=2)
        all_pairs(model)
        part = model.advance(400, until_delivered=k)
        stop = int(whole.deliveries["cycle"][k - 1])
        assert model.cycle == stop + 1
        assert np.array_equal(part.deliveries, whole.deliveries[whole.deliveries["cycle"]
                                                                <= stop])


def test_record_types():
    model = Model(4, payload_width=64)
    model.offer(0, 3, payloads=2**64 - 1)
    run = model.advance(20, record_hops=True)
    assert run.injections.dtype == INJECTION
    assert run.deliveries.dtype == DELIVERY and run.hops.dtype == HOP
    assert run.deliveries["payload"].tolist() == [2**64 - 1]


@pytest.mark.parametrize("call, message", [
    (lambda m: m.offer(5, 0), "Node must be from 0 to 4, not 5"),
    (lambda m: m.offer([0, -1], 0), "Node must be from 0 to 4, not -1"),
    (lambda m: m.offer(0, 8), "Destination must be from 0 to 7, not 8"),
    (lambda m: m.offer(0, 1, kinds=2), "Kind must be from 0 to 1, not 2"),
    (lambda m: m.offer(0.5, 1), "Nodes must be an integer or a list of integers, not 0.5"),
    (lambda m: m.offer([0, 1], [1, 2, 3]),
     "Destinations must be an integer or a list of 2 (one a message), not [1, 2, 3]"),
    (lambda m: m.offer([0, 1], 1, at="soon"),
     "Offer cycles must be an integer or a list of 2 (one a message), not 'soon'"),
    (lambda m: m.offer(0, 1, payloads=-1),
     "Payloads must be integers from 0 to 2**64 - 1, one or one a message, not -1"),
    (lambda m: m.offer(0, 1, payloads=1.5),
     "Payloads must be integers from 0 to 2**64 - 1, one or one a message, not 1.5"),
    (lambda m: m.advance(-1), "Cycles must be a non-negative integer, not -1"),
    (lambda m: m.advance(2.5), "Cycles must be a non-negative integer, not 2.5"),
    (lambda m: m.advance(10, until_delivered=-2),
     "Deliveries to wait for must be a non-negative integer, not -2"),
    (lambda m: m.advance(10, eject_ready=np.ones((10, 4))),
     "Eject-ready pattern must have shape (10, 5), not (10, 4)"),
])
def test_wrong_arguments(call, message):
    """Each wrong argument raises one sentence that quotes it, and leaves the model as it
    was."""
    model = Model(5)
    with pytest.raises(ValueError) as error:
        call(model)
    assert str(error.value) == message
    assert (model.queued, model.cycle) == (0, 0)


def test_run_needs_empty_queues():
    model = Model(5)
    model.offer(1, 2)
    with pytest.raises(ValueError) as error:
        model.run(10, [(0, Request(payload=0, dest=1))])
    assert str(error.value) == ("Run needs empty source queues, not 1 messages offered "
                                "(withdraw them first)")
    model.withdraw()
    assert len(model.run(10, [(0, Request(payload=0, dest=1))]).deliveries) == 1


def test_the_documented_example_runs():
    """The example of docs/model.md runs and prints what the page says it prints."""
    text = DOCS.read_text()
    code, = re.findall(r"```python\n(.*?)```", text, re.S)
    printed, = re.findall(r"It prints:\n\n```\n(.*?)```", text, re.S)
    lines = []
    exec(compile(code, str(DOCS), "exec"), {"print": lambda *a: lines.append(" ".join(
        map(str, a)))})
    assert "\n".join(lines) + "\n" == printed


# Random traffic generated in the compiled loop (RandomTraffic) against the same messages
# offered: the reference draws the stream as docs/model.md and RandomTraffic's docstring
# describe it, in Python integers.

_M64 = (1 << 64) - 1


def _splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((x ^ x >> 30) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ z >> 27) * 0x94D049BB133111EB) & _M64
    return x, z ^ z >> 31


def reference_messages(n, rates, tables, state, cycles):
    """The messages a RandomTraffic generates in ``cycles`` cycles from cycle 0: nodes,
    destinations and cycles, in generation order."""
    dests, start, cumulative = tables
    x, out = state, []
    for t in range(cycles):
        for a in range(n):
            x, bits = _splitmix(x)
            if bits >> 11 < round(rates[a] * 2**53):
                x, u = _splitmix(x)
                x, v = _splitmix(x)
                u, v = (u >> 11) / 2**53, (v >> 11) / 2**53
                k = 0
                while u >= cumulative[a, k]:
                    k += 1
                lo = start[a, k]
                out.append((a, int(dests[a, lo + int((start[a, k + 1] - lo) * v)]), t))
    return np.array(out, np.int64).reshape(-1, 3)


@pytest.mark.parametrize("n, name, pieces", [(26, "decreasing", 3), (13, "sphere", 1),
                                             (16, "uniform", 4)])
def test_random_traffic_is_offering_the_same_messages(n, name, pieces):
    """advance(traffic=...) in one or many calls does what offering the reference's
    messages (at and payload their cycle) does: the same records, ids and counts."""
    from ihcube.sim.model import RandomTraffic
    from ihcube.sim.traffic import Pattern
    tables = Pattern(n, name, radius=2).tables
    rates = np.linspace(0.0, 1.0, n) ** 2  # node 0 never, node n - 1 every cycle
    cycles, state = 90, 0x0123456789ABCDEF
    generated = RandomTraffic(n, rates, *tables, state=state)
    model = Model(n, payload_width=64, depth=2)
    runs = [model.advance(int(end - begin), count_links=True, traffic=generated)
            for begin, end in itertools.pairwise(
                np.linspace(0, cycles, pieces + 1).astype(int))]
    messages = reference_messages(n, rates, tables, state, cycles)
    assert len(messages) > cycles  # both ends of the rates are exercised
    assert not (messages[:, 0] == 0).any() and (messages[:, 0] == n - 1).sum() == cycles
    offered = Model(n, payload_width=64, depth=2)
    offered.offer(messages[:, 0], messages[:, 1], payloads=messages[:, 2], at=messages[:, 2])
    expected = offered.advance(cycles, count_links=True)
    for field in ("injections", "deliveries"):
        got = np.concatenate([getattr(run, field) for run in runs])
        assert got.tobytes() == getattr(expected, field).tobytes()
    assert runs[-1].pending == expected.pending == model.queued
    assert (model.offered, model.injected, model.delivered, model.transfers) == (
        len(messages), offered.injected, offered.delivered, offered.transfers)
    assert (model.link_counts == offered.link_counts).all()


#: Five nodes that send to node 1.
_TABLES = (np.ones((5, 1)), np.array([[0, 1]] * 5), np.ones((5, 1)))


@pytest.mark.parametrize("arguments, message", [
    ((5, 1.5, *_TABLES), "Generation rates must be from 0 to 1, one or one a node, not 1.5"),
    ((5, [0.1] * 4, *_TABLES), "Generation rates must be from 0 to 1, one or one a node, "
                               "not [0.1, 0.1, 0.1, 0.1]"),
    ((5, 0.1, np.zeros((4, 4)), *_TABLES[1:]),
     "Destination tables must have shapes (n, m), (n, K + 1) and (n, K) with n = 5"),
    ((5, 0.1, np.zeros((5, 4)), np.zeros((5, 2)), np.full((5, 1), 0.5)),
     "Destination tables must have increasing class starts within the rows, cumulative "
     "probabilities up to at least 1 and nodes in every class with a probability"),
    ((5, 0.1, np.zeros((5, 4)), np.zeros((5, 2)), np.ones((5, 1))),
     "Destination tables must have increasing class starts within the rows, cumulative "
     "probabilities up to at least 1 and nodes in every class with a probability"),
    ((5, 0.1, np.full((5, 4), 8), np.array([[0, 4]] * 5), np.ones((5, 1))),
     "Destinations must be from 0 to 7"),
])
def test_random_traffic_wrong_tables(arguments, message):
    """A table the compiled loop would read out of its rows, or a destination that does not
    fit a header, is refused before any cycle runs."""
    from ihcube.sim.model import RandomTraffic
    with pytest.raises(ValueError) as error:
        RandomTraffic(*arguments)
    assert str(error.value) == message


def test_advance_refuses_traffic_for_another_fabric():
    from ihcube.sim.model import RandomTraffic
    traffic = RandomTraffic(4, 0.5, [[1, 2, 3]] * 4, [[0, 3]] * 4, [[1.0]] * 4)
    model = Model(5)
    with pytest.raises(ValueError, match="Traffic must be a RandomTraffic for 5 nodes"):
        model.advance(3, traffic=traffic)
    assert model.cycle == 0
