"""Reconfiguration after faults: the mapping's checks, the exact searches, the command."""

import itertools
import json
import pathlib
import re
import subprocess
import sys

import pytest

from ihcube import topology
from ihcube.reconfigure import (Configuration, Subcube, active_sizes, best_configuration,
                                check_configuration, check_faulty, check_mapping,
                                configuration_of, largest_healthy_subcube, upper_bound)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def valid(N, faulty, config, permutations=False):
    try:
        check_configuration(N, faulty, config, permutations)
    except ValueError:
        return False
    return True


def largest_valid(N, faulty, mask, permutation=None):
    """The largest n that check_configuration takes for this mapping, found by trying each:
    the searches are checked against the refusals, not against their own formula."""
    n = 0
    while n < N and valid(N, faulty, Configuration(n + 1, mask, permutation), True):
        n += 1
    return n


FAULT_SETS = [(5, (0,)), (8, (3,)), (8, (0, 7)), (12, (1, 6)), (13, (0, 5, 9)), (16, (0, 8)),
              (16, (2, 5, 11)), (16, (0, 1)), (6, (4,)), (7, ())]


@pytest.mark.parametrize("N, faulty", FAULT_SETS)
def test_the_xor_search_is_exact(N, faulty):
    best = best_configuration(N, faulty)
    assert check_configuration(N, faulty, best) == best
    sizes = [largest_valid(N, faulty, m) for m in range(1 << topology.dimensions(N))]
    assert list(active_sizes(N, faulty)) == sizes
    assert best.active_nodes == max(sizes)
    assert best.mask == sizes.index(max(sizes))
    # Negative control: one more active node is refused.
    if best.active_nodes < N:
        assert not valid(N, faulty, Configuration(best.active_nodes + 1, best.mask))


@pytest.mark.parametrize("N, faulty", [(8, (0, 7)), (12, (1, 6)), (13, (0, 5, 9)),
                                       (16, (0, 8)), (16, (2, 5, 11))])
def test_the_automorphism_search_is_exact(N, faulty):
    """Against every one of the D! * 2**D automorphisms, each tried by check_configuration."""
    best = best_configuration(N, faulty, permutations=True)
    check_configuration(N, faulty, best, permutations=True)
    dims = topology.dimensions(N)
    found = max(largest_valid(N, faulty, m, pi) for pi in itertools.permutations(range(dims))
                for m in range(1 << dims))
    assert best.active_nodes == found
    assert not valid(N, faulty, Configuration(found + 1, best.mask, best.permutation), True) \
        or found == N


def test_one_fault_costs_one_node_and_two_can_cost_half():
    """SPEC section 9: one fault in a complete cube leaves N - 1 active nodes, whatever the
    fault. Two faults on opposite halves leave at most N/2 - 1 under XOR masks (the logical
    nodes below N/2 fill a half, and each half holds a fault); a permutation does better."""
    for N in (8, 16, 32):
        for fault in range(N):
            assert best_configuration(N, [fault]).active_nodes == N - 1
    assert best_configuration(16, [0, 8]).active_nodes == 7
    assert largest_valid(16, (0, 8), 0, None) <= 7
    assert best_configuration(16, [0, 8], permutations=True).active_nodes == 14
    assert largest_healthy_subcube(16, [0, 8]).size == 8


def brute_subcube(N, faulty):
    dims = topology.dimensions(N)
    best = 0
    for free in range(1 << dims):
        for base in range(1 << dims):
            if base & free == 0:
                nodes = Subcube(base, free).nodes()
                if all(x < N and x not in faulty for x in nodes):
                    best = max(best, len(nodes))
    return best


@pytest.mark.parametrize("N, faulty", FAULT_SETS)
def test_the_largest_healthy_subcube_is_exact(N, faulty):
    cube = largest_healthy_subcube(N, faulty)
    nodes = cube.nodes()
    assert len(nodes) == cube.size and all(x < N and x not in faulty for x in nodes)
    assert cube.size == brute_subcube(N, faulty)
    # Negative control: the brute force sees a fault placed in the subcube.
    if len(faulty) < N - 1:
        assert brute_subcube(N, set(faulty) | {nodes[0]}) <= cube.size


def test_upper_bound_is_the_healthy_count():
    assert upper_bound(1024, [1, 2, 3]) == 1021
    assert best_configuration(4096, [5]).active_nodes == 4095


@pytest.mark.parametrize("mapping, message", [
    ([0, 1, 2, 6], r"^Logical address 3 maps to router 6, which does not exist \(the fabric "
                   r"has routers 0 to 5\)$"),
    ([0, 1, 4], r"^Logical address 2 maps to router 4, which is faulty$"),
    ([0, 1, 1], r"^Logical addresses 1 and 2 both map to router 1: the mapping is not one to "
                r"one$"),
    ([0, 1, 3, 2], r"^Logical link 0 -- 2 maps to routers 0 and 3, which no link joins$"),
    ([0, 2, 1, 3], r"^Logical link 0 -- 1 \(dimension 0\) maps to physical dimension 1: the "
                   r"fabric keeps dimensions \(XOR masks only\)$"),
])
def test_a_mapping_that_is_not_an_automorphism_is_refused(mapping, message):
    with pytest.raises(ValueError, match=message):
        check_mapping(6, [4], mapping)


def test_a_dimension_swap_breaks_links_of_an_incomplete_fabric():
    """Swapping dimensions 0 and 2 is an automorphism of the 8-cube but not of the 6-node
    fabric: logical address 3 (011) lands on router 6 (110), which does not exist."""
    config = Configuration(6, 0, (2, 1, 0))
    with pytest.raises(ValueError, match=r"^The fabric takes XOR masks only, not a permutation "
                                         r"of dimensions$"):
        check_configuration(6, [], config)
    with pytest.raises(ValueError, match=r"^Logical address 3 maps to router 6, which does not "
                                         r"exist"):
        check_configuration(6, [], config, permutations=True)


@pytest.mark.parametrize("config, message", [
    (Configuration(7, 0), r"^Active node count must be at most the 6 physical nodes, not 7$"),
    (Configuration(0, 0), r"^Active node count must be a positive integer, not 0$"),
    (Configuration(3, 8), r"^Mask must be an integer from 0 to 7, not 8$"),
    (Configuration(3, 4), r"^Mask 4 places a logical node of the 3 at a physical node >= 6"),
    (Configuration(7, 0, (0, 1, 2)), r"^Active node count must be at most the fabric's 6 "
                                     r"routers, not 7$"),
    (Configuration(3, 8, (0, 1, 2)), r"^Mask must be an integer from 0 to 7 \(3 address "
                                     r"bits\), not 8$"),
    (Configuration(3, 0, (0, 0, 1)), r"^Permutation must order the dimensions 0 to 2"),
])
def test_a_bad_configuration_is_one_line(config, message):
    with pytest.raises(ValueError, match=message):
        check_configuration(6, [], config, permutations=True)


def test_an_xor_mask_fits_by_the_topology_rule_and_avoids_the_faulty_routers():
    """For XOR masks the rule of which fit is :func:`ihcube.topology.configuration_fits`,
    stated once: check_configuration takes exactly the masks it takes whose logical nodes
    avoid the faulty routers (against the search, every configuration of 6 routers)."""
    for n in range(1, 7):
        for mask in range(8):
            for faulty in ([], [2], [0, 5]):
                expected = all(l ^ mask < 6 and l ^ mask not in faulty for l in range(n))
                try:
                    check_configuration(6, faulty, Configuration(n, mask))
                    taken = True
                except ValueError:
                    taken = False
                assert taken == expected, (n, mask, faulty)
    with pytest.raises(ValueError, match=r"^Logical address 1 maps to router 5, which is "
                                         r"faulty$"):
        check_configuration(6, [5, 0], Configuration(2, 4))


def test_a_mapping_router_by_router_is_its_xor_mask_or_refused():
    assert configuration_of(6, [4], [2, 3, 0, 1]) == Configuration(4, 2)
    with pytest.raises(ValueError, match=r"^Logical link 0 -- 2 maps to routers 0 and 3, "
                                         r"which no link joins$"):
        configuration_of(6, [4], [0, 1, 3, 2])


@pytest.mark.parametrize("faulty, message", [
    ([3, 3], r"^Faulty node 3 is listed twice; list each faulty node once$"),
    ([6], r"^Faulty node must be an integer from 0 to 5, not 6$"),
    ([0, 1, 2, 3, 4, 5], r"^Every one of the 6 nodes is faulty; at least one must be healthy$"),
    (["2"], r"^Faulty node must be an integer from 0 to 5, not '2'$"),
])
def test_bad_faulty_lists_are_refused(faulty, message):
    with pytest.raises(ValueError, match=message):
        check_faulty(6, faulty)


def test_logical_and_physical_addresses_are_inverse():
    for config in (Configuration(13, 5), Configuration(13, 5, (1, 3, 0, 2))):
        for l in range(16):
            assert config.logical_address(config.physical(l)) == l
            for i in range(4):
                far = config.physical(topology.neighbor(l, i))
                assert far == topology.neighbor(config.physical(l), config.port(i))


def ihcube(*args):
    return subprocess.run([sys.executable, "-m", "ihcube", "reconfigure", *args],
                          capture_output=True, text=True)


def test_the_command_prints_the_configuration_and_the_subcube():
    result = ihcube("--nodes", "16", "--faulty", "0,8", "--permutations")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Fabric of 16 routers, 2 faulty, 14 healthy."
    assert lines[1].startswith("Reconfigured incomplete hypercube (XOR mask): active n = 7, ")
    assert "keeps 7 of 14 healthy nodes (gap 7 to the bound N - f)" in lines[1]
    assert lines[2].startswith("With dimension permutations (not in the hardware): active "
                               "n = 14, ")
    assert lines[3].startswith("Largest fault-free complete subcube: 8 nodes ")
    out = json.loads(ihcube("-n", "16", "--faulty", "0,8", "--json").stdout)
    config = Configuration(out["active_nodes"], out["mask"])
    assert check_configuration(16, [0, 8], config) and out["active_nodes"] == 7
    assert out["subcube"]["size"] == 8 and out["healthy"] == 14 and "permutations" not in out


@pytest.mark.parametrize("args, message", [
    (["-n", "26", "--faulty", "3,17,3"], "Faulty node 3 is listed twice; list each faulty "
                                         "node once"),
    (["-n", "26", "--faulty", "26"], "Faulty node must be an integer from 0 to 25, not 26"),
    (["-n", "2", "--faulty", "0,1"], "Every one of the 2 nodes is faulty; at least one must "
                                     "be healthy"),
    (["-n", "26", "--faulty", "1,x"], "--faulty must be comma-separated node numbers such as "
                                      "3,17,200, not '1,x'"),
    (["-n", "26", "--faulty", ""], "--faulty must be comma-separated node numbers such as "
                                   "3,17,200, not ''"),
    (["-n", "26", "--faulty", "2.5"], "--faulty must be comma-separated node numbers such as "
                                      "3,17,200, not '2.5'"),
    (["-n", "0", "--faulty", "1"], "Node count must be a positive integer, not 0"),
    (["-n", "4097", "--faulty", "1"], "Node count must be an integer from 1 to 4096, not 4097"),
    (["-n", "26"], "the following arguments are required: --faulty"),
])
def test_bad_input_is_one_line_and_status_2(args, message):
    result = ihcube(*args)
    assert result.returncode == 2
    assert result.stderr == f"ihcube reconfigure: error: {message}\n"
    assert result.stdout == ""


def test_make_reconfigure_passes_its_variables():
    result = subprocess.run(["make", "--no-print-directory", "-s", "reconfigure", "N=16",
                             "FAULTY=0,8"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert re.search(r"active n = 7, ", result.stdout)


def experiment(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "ihcube", "reconfigure-experiment",
                           "--nodes", "16", "--faults", "1,2", "--draws", "3", "--small", "8",
                           f"--out={tmp_path}", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_the_experiment_writes_its_results(tmp_path):
    result = experiment(tmp_path, "--no-model")
    assert result.returncode == 0, result.stderr
    assert "| 1 | 15 | 15.0 (15) | 15.0 (15) | 8.0 (8) |" in result.stdout
    data = json.loads((tmp_path / "reconfiguration.json").read_text())
    assert [row["faults"] for row in data["rows"]] == [1, 2]
    assert data["single_fault"] == dict(faults_tried=16, least_kept=15, most_kept=15)
    for row in data["rows"]:
        assert row["xor"]["kept"]["max"] <= row["permutations"]["kept"]["max"] <= row["healthy"]
        assert row["subcube"]["kept"]["max"] <= row["healthy"]
    assert (tmp_path / "reconfiguration.png").stat().st_size > 0


@pytest.mark.slow
def test_the_experiment_runs_the_model_deterministically(tmp_path):
    for folder in ("a", "b"):
        result = experiment(tmp_path / folder, "--no-plots")
        assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "a" / "reconfiguration.json").read_text())
    model = data["rows"][0]["xor"]["model"]
    assert model["n"] == 15 and 0 < model["throughput_per_node"] <= 0.5
    # The same bytes but the command line each records, whose --out differs.
    a, b = ((tmp_path / folder / "reconfiguration.json").read_text() for folder in "ab")
    assert b == a.replace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert data["provenance"]["command"].startswith("ihcube reconfigure-experiment ")


@pytest.mark.parametrize("args, message", [
    (["--faults", "16"], "A fault count must be at most 15, not 16"),
    (["--draws", "0"], "--draws must be a positive integer, not 0"),
    (["--small", "3"], "--small must be comma-separated integers of at least 4, not '3'"),
])
def test_the_experiment_refuses_bad_input_in_one_line(tmp_path, args, message):
    result = experiment(tmp_path, *args)
    assert result.returncode == 2
    assert result.stderr == f"ihcube reconfigure-experiment: error: {message}\n"
