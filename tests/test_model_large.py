"""The model at large ``n``, up to its most nodes (``2**MAX_ADDRESS_BITS``): tables built from
the rules, messages routed on their paths in the right cycles, and uniform traffic that loses
nothing. Correctness only, in seconds; ``ihcube bench-model`` times a million-node run.
"""

import numpy as np
import pytest

from ihcube import topology
from ihcube.sim.model import MAX_ADDRESS_BITS, Model

LARGEST = 1 << MAX_ADDRESS_BITS
#: Large-ish and incomplete: links missing at the top, 19 address bits.
LARGE = (1 << 18) + 3


@pytest.mark.parametrize("n", [1, 2, 3, 26, 1048, 4095, LARGE])
def test_the_link_table_is_exists_mask_node_by_node(n):
    """The vectorised link-existence table holds, for every node, what
    ``topology.exists_mask`` says."""
    table = Model(n)._tables[0]
    assert table.tolist() == [topology.exists_mask(n, a) for a in range(n)]


@pytest.mark.slow
def test_a_large_fabric_routes_messages_on_their_paths_at_zero_load():
    """Messages across a large incomplete fabric (one at a time, so at zero load) reach
    their destination after their path's hops, one link a cycle: cycle ``t + hops + 1``
    (docs/router.md), on the links of ``topology.path``."""
    n = LARGE
    model = Model(n, payload_width=64, depth=1)
    pairs = [(0, n - 1), (n - 1, 0), (5, n - 2), (n - 3, 7), (1 << 17, 3), (12345, 200000)]
    for src, dest in pairs:
        start = model.cycle
        model.offer(src, dest, payloads=src * n + dest)
        run = model.advance(4 * MAX_ADDRESS_BITS, record_hops=True, until_delivered=1)
        path = topology.path(n, src, dest)
        hops = len(path) - 1
        assert run.deliveries["node"].tolist() == [dest]
        assert run.deliveries["src"].tolist() == [src]
        assert int(run.deliveries["payload"][0]) == src * n + dest
        assert int(run.deliveries["cycle"][0]) == int(run.injections["cycle"][0]) + hops + 1
        # Taken at once, but for the first cycle after reset, where no buffer has room.
        assert run.injections["cycle"].tolist() == [start + (start == 0)]
        assert run.hops["node"].tolist() == path[:-1]
        assert [a ^ (1 << d) for a, d in zip(run.hops["node"], run.hops["dim"])] == path[1:]
        assert model.idle


@pytest.mark.slow
@pytest.mark.parametrize("n, cycles", [(LARGE, 40), (LARGEST, 4)])
def test_uniform_traffic_at_large_n_loses_nothing(n, cycles):
    """``run_uniform`` at large ``n`` (the largest the model takes too): every message
    generated is injected or still queued, every one injected is delivered or still in a
    buffer, and the latencies are possible ones."""
    model = Model(n, depth=2)
    stats = model.run_uniform(0.3, cycles, seed=2)
    in_flight = int(model.occupancy.sum())
    assert stats["generated"] > 0.25 * n * cycles
    assert stats["generated"] == stats["injected"] + stats["queued"]
    assert stats["injected"] == stats["delivered"] + in_flight
    if cycles > topology.dimensions(n) + 1:
        assert stats["delivered"] > 0
        assert 2 <= stats["mean_latency"] <= stats["max_latency"] < cycles
    assert stats["hops"] >= stats["delivered"]


def test_one_node_more_than_the_largest_is_refused():
    with pytest.raises(ValueError, match=rf"^Node count must be at most {LARGEST} in the "
                                         rf"model, not {LARGEST + 1}$"):
        Model(LARGEST + 1)
    assert np.asarray(Model(LARGEST)._tables[0]).shape == (LARGEST,)


class NotPrefetching(Model):
    """The model without prefetching, whatever its size."""

    _prefetch_from = 1 << 62


class NotPrefetchingReadyInReset(NotPrefetching):
    """Negative control: buffers ready in the first cycle after reset."""

    _ready_in_reset = True


def _uniform_run(model_class, n, cycles, seed):
    """What a uniform-traffic run did: its totals, the buffers' occupancy at the end, and
    the injection, hop and delivery records of a few more cycles of offered messages."""
    model = model_class(n, depth=2)
    stats = model.run_uniform(0.4, cycles, seed=seed)
    rng = np.random.default_rng(seed)
    model.offer(rng.integers(0, n, 4096), rng.integers(0, n, 4096), payloads=np.arange(4096))
    run = model.advance(8, record_hops=True)
    return (model.prefetching, stats, model.occupancy.tobytes(), run.injections.tobytes(),
            run.hops.tobytes(), run.deliveries.tobytes())


@pytest.mark.slow
def test_prefetching_at_large_n_changes_no_result():
    """A large model prefetches (its state is far larger than the caches), and makes the
    same moves, record for record, as one that does not; a model that differs in one rule
    is told apart by the same comparison (negative control)."""
    prefetched = _uniform_run(Model, LARGE, 30, seed=3)
    plain = _uniform_run(NotPrefetching, LARGE, 30, seed=3)
    assert prefetched[0] and not plain[0]
    assert prefetched[1]["hops"] > 0 and len(prefetched[4]) > 0
    assert prefetched[1:] == plain[1:]
    assert _uniform_run(NotPrefetchingReadyInReset, LARGE, 30, seed=3)[1:] != plain[1:]
