"""Parameters of any integer type are taken as plain ``int`` (NumPy's too, as a user's sweep
script passes them); what is not an integer is refused with a message that quotes it."""

import numpy as np
import pytest

from ihcube import topology
from ihcube.generate import fabric_name, fabric_verilog
from ihcube.params import check_positive_integer
from ihcube.rtl import Fabric, Router
from ihcube.sim.model import Model


@pytest.mark.parametrize("value", [np.int64(26), np.int32(26), np.uint16(26)])
def test_numpy_integers_are_taken_as_int(value):
    assert check_positive_integer(value, "Node count") == 26
    assert type(check_positive_integer(value, "Node count")) is int
    assert fabric_name(value, np.int64(8)) == "ihcube_n26_w8"
    assert Model(value).n == 26 and type(Model(value).n) is int
    assert topology.check_node(value, np.int64(25)) == 25


def test_components_built_from_numpy_integers():
    fabric = Fabric(np.int64(3), np.int64(8))
    assert (type(fabric.n), type(fabric.payload_width)) == (int, int)
    router = Router(np.int64(5), np.int64(4))
    assert router.node == 4 and type(router.node) is int
    assert fabric_verilog(np.int64(3)) == fabric_verilog(3)


@pytest.mark.parametrize("value", [3.0, "3", True, np.float64(3.0), None])
def test_what_is_not_an_integer_is_refused(value):
    with pytest.raises(TypeError, match=r"^Node count must be a positive integer, not "
                       + __import__("re").escape(repr(value)) + "$"):
        topology.check_node_count(value)


@pytest.mark.parametrize("node", [5, -1, 2.0, True])
def test_a_node_outside_is_refused(node):
    with pytest.raises(ValueError, match=r"^Node must be an integer from 0 to 4, not "):
        topology.check_node(5, node)
