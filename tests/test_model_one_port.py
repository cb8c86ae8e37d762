"""The model's loop compiled for one PE port and one-message buffers against its general loop.

With one PE port and buffers of one message (the defaults) :class:`~ihcube.sim.model.Model`
runs the compiled loop specialised for ``P = 1`` and ``depth = 1``
(``ihcube.sim.model_kernel``, One port, one message): the same source, with those counts
constants. Every record, total, delivery and buffer must be those of the general loop on the
same traffic: broadcasts, destinations that are not nodes, eject backpressure, depths 1 to 3,
both routing orders, link stages, several threads, random traffic,
:meth:`Model.step` and :meth:`Model.run_uniform`. The negative controls run the one-port
loop on a two-port model (its slot count and eject ports off by one) and the one-message
loop on buffers of two, and must differ from the general loop there. A model that
prefetches (a large state) runs the general loop.
"""

import numpy as np
import pytest
from numba import types

from ihcube import topology
from ihcube.sim import model_kernel
from ihcube.sim.model import Model, RandomTraffic
from ihcube.sim.traffic import Pattern
from tiers import below, slow_unless


class GeneralLoop(Model):
    """The model on the loop compiled for any number of ports and any depth."""

    _one_port_loop = 0
    _one_message_loop = 0


class OnePortLoopOnTwoPorts(Model):
    """Negative control: the loop compiled for one port, run on a two-port model."""

    _one_port_loop = 2


class OneMessageLoopOnTwo(Model):
    """Negative control: the loop compiled for one-message buffers, run on buffers of two."""

    _one_message_loop = 2


def _offers(n, count, seed, broadcasts, ports):
    """``count`` random messages from random nodes and ports (a share of them broadcasts),
    offered from random cycles in the first 20; some destinations are not nodes."""
    rng = np.random.default_rng(seed)
    A = topology.address_bits(n)
    nodes = rng.integers(0, n, count)
    dests = (nodes + rng.integers(1, max(n, 2), count)) % n
    dests = np.where(rng.random(count) < 0.02, rng.integers(0, 1 << A, count), dests)
    kinds = (rng.random(count) < broadcasts).astype(np.int64)
    return dict(nodes=nodes, dests=dests, kinds=kinds, payloads=rng.integers(0, 1 << 30, count),
                at=rng.integers(0, 20, count), ports=rng.integers(0, ports, count))


def _run(model_class, n, cycles=120, seed=0, broadcasts=0.3, threads=1, **options):
    """Everything a run of random offers with random eject backpressure records and leaves,
    then a stretch of uniform traffic on the same fabric."""
    model = model_class(n, threads=threads, **options)
    ports = model.ports
    model.offer(**_offers(n, 3 * n * ports, seed, broadcasts, ports))
    ready = np.random.default_rng(seed + 1).random((cycles, n * ports)) < 0.6
    run = model.advance(cycles, eject_ready=ready, record_hops=True, count_links=True)
    result = [run.injections.tolist(), run.deliveries.tolist(), run.hops.tolist(), run.pending,
              model.occupancy.tolist(), model.relay_occupancy.tolist(),
              model.link_counts.tolist(), model.injected, model.delivered, model.transfers,
              model.refused_count.tolist(), model.cycle]
    if ports == 1:
        result.append(repr(model.run_uniform(0.4, 60, seed=seed)))  # NaN latency at n = 1
        result.append(model.occupancy.tolist())
    return result


def _differs(a, b):
    """The first field in which two results differ, or None."""
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            return k
    return None


CASES = [
    # (n, depth, order, options)
    (1, 1, topology.MSB_FIRST, {}),
    (2, 2, topology.LSB_FIRST, {}),
    (3, 1, topology.MSB_FIRST, {}),
    (5, 3, topology.LSB_FIRST, {}),
    (26, 1, topology.MSB_FIRST, {}),
    (26, 2, topology.LSB_FIRST, {"payload_width": 7}),
    (64, 1, topology.LSB_FIRST, {}),
    (100, 2, topology.MSB_FIRST, {}),
    (100, 1, topology.LSB_FIRST, {"link_stages": 1}),
    (256, 3, topology.MSB_FIRST, {}),
    (1000, 1, topology.LSB_FIRST, {}),
    (1024, 2, topology.MSB_FIRST, {}),
]


@pytest.mark.parametrize("n,depth,order,options", slow_unless(CASES, below(100)))
def test_one_port_loop_as_general_loop(n, depth, order, options):
    """Broadcasts, unicasts, destinations that are not nodes, eject backpressure, then
    uniform traffic: every record and the state as the general loop's."""
    args = dict(depth=depth, order=order, **options)
    general = _run(GeneralLoop, n, **args)
    if n > 1:
        assert len(general[1]) > n  # the run delivers (and so has something to compare)
    assert _differs(_run(Model, n, **args), general) is None


@pytest.mark.parametrize("n,depth,order,options", slow_unless([
    (33, 2, topology.MSB_FIRST, {}), (1024, 1, topology.LSB_FIRST, {}),
    (100, 2, topology.LSB_FIRST, {"link_stages": 1})], below(100)))
def test_one_port_loop_on_threads_as_general_loop(n, depth, order, options):
    """The one-port loop on two threads against the general loop on one."""
    args = dict(depth=depth, order=order, **options)
    assert _differs(_run(Model, n, threads=2, **args), _run(GeneralLoop, n, **args)) is None


class Prefetching(Model):
    """The model prefetching at any size."""

    _prefetch_from = 0


class PrefetchingOneMessageLoopOnTwo(Prefetching):
    _one_message_loop = 2


def test_prefetching_runs_the_general_loop():
    """A model that prefetches runs the general loop: the one-message loop's fault does not
    show there (and does without prefetching, below)."""
    args = dict(depth=2, cycles=60)
    assert _differs(_run(PrefetchingOneMessageLoopOnTwo, 26, **args),
                    _run(GeneralLoop, 26, **args)) is None


def test_random_traffic_and_step_as_general_loop():
    """Traffic generated in the compiled loop (:class:`RandomTraffic`), and :meth:`Model.step`
    driven port by port."""
    n = 200
    pattern = Pattern(n, "uniform", radius=2)
    runs = []
    for model_class in (Model, GeneralLoop):
        model = model_class(n, depth=2)
        traffic = RandomTraffic(n, 0.3, *pattern.tables, state=7)
        run = model.advance(150, traffic=traffic, record_hops=True)
        rng = np.random.default_rng(3)
        steps = []
        for _ in range(30):
            taken, delivered, hopped = model.step(
                rng.random(n) < 0.5, rng.integers(0, n, n), rng.random(n) < 0.2,
                rng.integers(0, 1000, n), rng.random(n) < 0.7, record_hops=True)
            steps.append((taken.tolist(), delivered.tolist(), hopped.tolist()))
        runs.append((run.injections.tolist(), run.deliveries.tolist(), run.hops.tolist(),
                     steps, model.occupancy.tolist()))
    assert runs[0] == runs[1]
    assert len(runs[0][1]) > n


def test_one_port_loop_is_compiled_for_one_port_and_one_message():
    """The default model runs the loop compiled for ``P`` and ``depth`` None (the constant
    1), the general loop the one for integers."""
    Model(8).run_uniform(0.4, 5)
    GeneralLoop(8).run_uniform(0.4, 5)
    compiled = {(type(signature[0].types[3]), type(signature[0].types[5]))
                for signature in model_kernel.run_uniform.signatures}
    assert compiled >= {(types.NoneType, types.NoneType), (types.Integer, types.Integer)}


@pytest.mark.parametrize("n,depth,order", [(5, 1, topology.MSB_FIRST),
                                           (26, 2, topology.LSB_FIRST),
                                           (256, 1, topology.MSB_FIRST)])
def test_one_port_loop_on_two_ports_differs(n, depth, order):
    """Negative control: the same comparison catches the one-port loop on two ports (slots
    and eject ports off by one)."""
    args = dict(depth=depth, order=order, ports=2)
    general = _run(GeneralLoop, n, **args)
    assert len(general[1]) > n
    assert _differs(_run(OnePortLoopOnTwoPorts, n, **args), general) is not None


@pytest.mark.parametrize("n,order", [(5, topology.LSB_FIRST), (26, topology.MSB_FIRST),
                                     (256, topology.LSB_FIRST)])
def test_one_message_loop_on_two_differs(n, order):
    """Negative control: the same comparison catches the one-message loop on buffers of two
    (records and rings of the wrong size)."""
    args = dict(depth=2, order=order)
    general = _run(GeneralLoop, n, **args)
    assert len(general[1]) > n
    assert _differs(_run(OneMessageLoopOnTwo, n, **args), general) is not None
