"""The model's loop compiled for one PE port against its general loop.

With one PE port (the default) :class:`~ihcube.sim.model.Model` runs the compiled loop
specialised for ``P = 1`` (``ihcube.sim.model_kernel``, One port): the same source, with the
ports' count a constant. Every record, total, delivery and buffer must be those of the
general loop on the same traffic: broadcasts, eject backpressure, depths 1 to 3, both routing
orders, link stages, several threads, random traffic, :meth:`Model.step` and
:meth:`Model.run_uniform`. The negative control runs the one-port loop on a two-port model
(its slot count and eject ports off by one) and must differ from the general loop there.
"""

import numpy as np
import pytest
from numba import types

from ihcube import topology
from ihcube.sim import model_kernel
from ihcube.sim.model import Model, RandomTraffic
from ihcube.sim.traffic import Pattern


class GeneralLoop(Model):
    """The model on the loop compiled for any number of ports."""

    _one_port_loop = 0


class OnePortLoopOnTwoPorts(Model):
    """Negative control: the loop compiled for one port, run on a two-port model."""

    _one_port_loop = 2


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


@pytest.mark.parametrize("n,depth,order,options", CASES)
def test_one_port_loop_as_general_loop(n, depth, order, options):
    """Broadcasts, unicasts, destinations that are not nodes, eject backpressure, then
    uniform traffic: every record and the state as the general loop's."""
    args = dict(depth=depth, order=order, **options)
    general = _run(GeneralLoop, n, **args)
    if n > 1:
        assert len(general[1]) > n  # the run delivers (and so has something to compare)
    assert _differs(_run(Model, n, **args), general) is None


@pytest.mark.parametrize("n,depth,order,options", [(33, 2, topology.MSB_FIRST, {}),
                                                   (1024, 1, topology.LSB_FIRST, {}),
                                                   (100, 2, topology.LSB_FIRST,
                                                    {"link_stages": 1})])
def test_one_port_loop_on_threads_as_general_loop(n, depth, order, options):
    """The one-port loop on two threads against the general loop on one."""
    args = dict(depth=depth, order=order, **options)
    assert _differs(_run(Model, n, threads=2, **args), _run(GeneralLoop, n, **args)) is None


def test_prefetching_one_port_loop_as_general_loop():
    """A fabric large enough to prefetch (both loops do), 65,000 nodes."""
    n = 65_000
    args = dict(depth=2, cycles=40, broadcasts=0.0)
    one = Model(n)
    assert one.prefetching
    assert _differs(_run(Model, n, **args), _run(GeneralLoop, n, **args)) is None


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


def test_one_port_loop_is_compiled_for_one_port():
    """The default model runs the loop compiled for ``P`` None (the constant 1), a model with
    two ports the general one."""
    Model(8).run_uniform(0.4, 5)
    GeneralLoop(8).run_uniform(0.4, 5)
    ports = {type(signature[0].types[5]) for signature in model_kernel.run_uniform.signatures}
    assert ports >= {types.NoneType, types.Integer}


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
