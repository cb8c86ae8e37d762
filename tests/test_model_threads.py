"""The model on several threads (``Model(threads=T)``) against the one-thread model.

Any number of threads must give the same records and totals as one, cycle for cycle: the
same injections, deliveries and hops in the same order, the same buffers at the end, the same
uniform-traffic figures. The negative control is a model whose barriers do not wait, run in
the order such a barrier allows (each thread through every cycle before the next thread
starts): a thread then reads buffers that another thread's nodes have not written yet, and the
same comparison must tell.
"""

import numpy as np
import pytest

from ihcube import topology
from ihcube.sim import model_kernel
from ihcube.sim.model import Model, RandomTraffic
from ihcube.sim.traffic import Pattern
from tiers import below, slow_unless


class BarrierDoesNotWait(Model):
    """Negative control: the threads do not wait for each other between the phases."""

    _barrier_waits = False


def _offers(n, count, seed, broadcasts=0.0, ports=1):
    """``count`` random messages from random nodes (a share of them broadcasts), offered from
    random cycles in the first 20."""
    rng = np.random.default_rng(seed)
    nodes = rng.integers(0, n, count)
    dests = (nodes + rng.integers(1, max(n, 2), count)) % n
    kinds = (rng.random(count) < broadcasts).astype(np.int64)
    return dict(nodes=nodes, dests=dests, kinds=kinds, payloads=rng.integers(0, 1 << 30, count),
                at=rng.integers(0, 20, count), ports=rng.integers(0, ports, count))


def _run(model_class, n, threads, cycles=120, count=None, seed=0, broadcasts=0.3,
         backpressure=False, record_hops=True, **options):
    """The records and final state of ``cycles`` cycles of random offers (broadcasts among
    them), with random eject backpressure if asked."""
    model = model_class(n, threads=threads, **options)
    ports = model.ports
    offers = _offers(n, count or 3 * n * ports, seed, broadcasts, ports)
    model.offer(**offers)
    ready = None
    if backpressure:
        ready = np.random.default_rng(seed + 1).random((cycles, n * ports)) < 0.6
    run = model.advance(cycles, eject_ready=ready, record_hops=record_hops, count_links=True)
    return (run.injections.tolist(), run.deliveries.tolist(), run.hops.tolist(), run.pending,
            model.occupancy.tolist(), model.relay_occupancy.tolist(),
            model.link_counts.tolist(), model.injected, model.delivered, model.transfers,
            model.cycle)


def _same(a, b):
    return all(x == y for x, y in zip(a, b, strict=True))


CASES = [
    # (n, depth, order, options)
    (3, 1, topology.MSB_FIRST, {}),
    (5, 2, topology.LSB_FIRST, {}),
    (12, 1, topology.MSB_FIRST, {"ports": 2}),
    (33, 3, topology.LSB_FIRST, {}),
    (100, 2, topology.MSB_FIRST, {"link_stages": 1}),
    (256, 1, topology.LSB_FIRST, {}),
    (1000, 2, topology.MSB_FIRST, {}),
    (1024, 3, topology.LSB_FIRST, {}),
]


@pytest.mark.parametrize("n,depth,order,options", slow_unless(CASES, below(100)))
@pytest.mark.parametrize("threads", [2, 3])
def test_records_as_one_thread(n, depth, order, options, threads):
    """Broadcasts and unicasts, eject backpressure, ports and link stages: every record and
    the state at the end as on one thread."""
    args = dict(depth=depth, order=order, backpressure=True, **options)
    one = _run(Model, n, 1, **args)
    assert len(one[1]) > n  # the run delivers (and so has something to compare)
    assert _same(_run(Model, n, threads, **args), one)


@pytest.mark.parametrize("n,depth,order,options", CASES[:6])
def test_barrier_that_does_not_wait_differs(n, depth, order, options):
    """Negative control: the same comparison catches threads that do not wait."""
    args = dict(depth=depth, order=order, backpressure=True, **options)
    assert not _same(_run(BarrierDoesNotWait, n, 2, **args), _run(Model, n, 1, **args))


@pytest.mark.slow
def test_large_fabric_as_one_thread():
    """65,536-ish nodes (an incomplete cube), prefetching, both orders: the same records."""
    n = 65_000
    for order in (topology.MSB_FIRST, topology.LSB_FIRST):
        args = dict(depth=2, order=order, cycles=40, count=n, broadcasts=0.0,
                    record_hops=False)
        one = _run(Model, n, 1, **args)
        two = _run(Model, n, 2, **args)
        assert len(one[1]) > n // 4
        assert _same(two, one)


@pytest.mark.slow
def test_large_fabric_barrier_that_does_not_wait_differs():
    n = 65_000
    args = dict(depth=2, cycles=40, count=n, broadcasts=0.0, record_hops=False)
    assert not _same(_run(BarrierDoesNotWait, n, 2, **args), _run(Model, n, 1, **args))


@pytest.mark.parametrize("n,depth,link_stages", slow_unless([
    (3, 1, 0), (77, 2, 0), (1024, 1, 0), (1024, 2, 1), (65_536, 1, 0)], below(1024)))
def test_uniform_as_one_thread(n, depth, link_stages):
    """:meth:`Model.run_uniform` on two threads: the same figures and the same buffers."""
    cycles = 30 if n > 10_000 else 200
    one = Model(n, depth=depth, link_stages=link_stages)
    two = Model(n, depth=depth, link_stages=link_stages, threads=2)
    stats = one.run_uniform(0.4, cycles, seed=5)
    assert stats["delivered"] > 0
    assert two.run_uniform(0.4, cycles, seed=5) == stats
    assert np.array_equal(two.occupancy, one.occupancy)
    # A second call continues from the same state.
    assert two.run_uniform(0.2, 50, seed=6) == one.run_uniform(0.2, 50, seed=6)


@pytest.mark.parametrize("n", [77, 1024])
def test_uniform_barrier_that_does_not_wait_differs(n):
    stats = Model(n, depth=2).run_uniform(0.4, 200, seed=5)
    assert BarrierDoesNotWait(n, depth=2, threads=2).run_uniform(0.4, 200, seed=5) != stats


def test_random_traffic_as_one_thread():
    """:class:`RandomTraffic` generated in the compiled loop (by thread 0) on two threads."""
    n = 200
    pattern = Pattern(n, "uniform", radius=2)
    runs = []
    for threads in (1, 2):
        model = Model(n, depth=2, threads=threads)
        traffic = RandomTraffic(n, 0.3, *pattern.tables, state=7)
        run = model.advance(150, traffic=traffic, record_hops=True)
        runs.append((run.injections.tolist(), run.deliveries.tolist(), run.hops.tolist()))
    assert runs[0] == runs[1]
    assert len(runs[0][1]) > n


def test_until_delivered_stops_every_thread():
    one = Model(300, threads=1)
    two = Model(300, threads=2)
    for model in (one, two):
        model.offer(**_offers(300, 600, 3))
    a = one.advance(500, until_delivered=250)
    b = two.advance(500, until_delivered=250)
    assert one.cycle == two.cycle < 500
    assert a.deliveries.tolist() == b.deliveries.tolist()


def test_an_exception_in_a_thread_does_not_hang():
    """A thread that raises makes the others' barriers give up; the error comes out."""

    model = Model(64, threads=2)
    model.offer(**_offers(64, 100, 1))
    calls = []

    def raising(split, sync):
        calls.append(split[0])
        raise RuntimeError("thread failed")

    def first(split, sync):
        return model_kernel.meet(sync, 0, 2, 1)

    with pytest.raises(RuntimeError, match="thread failed"):
        model._on_threads(first, raising)
    assert calls == [1]


@pytest.mark.parametrize("threads,error,message", [
    (0, ValueError, "Thread count must be a positive integer, not 0"),
    (2.0, TypeError, "Thread count must be a positive integer, not 2.0"),
    (True, TypeError, "Thread count must be a positive integer, not True"),
    (9, ValueError, "Thread count must be an integer from 1 to 8, not 9"),
])
def test_thread_count_errors(threads, error, message):
    with pytest.raises(error) as caught:
        Model(8, threads=threads)
    assert str(caught.value) == message


def test_step_runs_on_one_thread_only():
    with pytest.raises(ValueError) as caught:
        Model(8, threads=2).step(False)
    assert str(caught.value) == ("Model.step runs on one thread, not 2: use advance or "
                                 "run_uniform, or threads=1")


@pytest.mark.parametrize("value,message", [
    ("0", "Thread count must be a positive integer, not 0"),
    ("two", "Thread count must be a positive integer, not 'two'"),
])
def test_bench_model_thread_option(value, message, tmp_path, capsys):
    from ihcube.cli.bench_model import main
    assert main(["--threads", value, "--out", str(tmp_path / "b.json")]) == 2
    assert capsys.readouterr().err == f"ihcube bench-model: error: {message}\n"
