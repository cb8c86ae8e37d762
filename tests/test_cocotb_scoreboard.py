"""``ihcube.cocotb.Scoreboard``, without a simulator: the topology's rules (a broadcast reaches
every node but its origin, once; an address that names no node is refused), and each kind of
broken delivery caught (the negative controls)."""

import pytest

from ihcube.cocotb import Scoreboard
from ihcube.spec import FabricSpec, Packet


@pytest.mark.parametrize("n", [1, 2, 5, 13, 26])
@pytest.mark.parametrize("order", ["msb", "lsb"])
def test_a_broadcast_must_reach_every_other_node(n, order):
    board = Scoreboard(FabricSpec(n, order=order))
    for src in range(n):
        assert board.receivers(src, 0, broadcast=True) == [k for k in range(n) if k != src]


def test_unicasts_reach_their_node_or_are_refused():
    board = Scoreboard(5)
    assert board.sent(1, 4, payload=0) == [4]
    assert board.sent(1, 7, payload=1) == []
    assert board.sent(2, 2, payload=2) == [2]
    assert board.refusals() == [0, 1, 0, 0, 0]
    assert board.expected == 2 and board.outstanding == 2


def clean():
    board = Scoreboard(5)
    board.sent(0, 3, 10)
    board.sent(4, 0, 11, broadcast=True)
    board.sent(2, 6, 12)
    board.received(3, 0, 3, 10)
    for node in range(4):
        board.received(node, 4, node, 11, broadcast=True)
    return board


def test_a_clean_run_has_no_problem():
    board = clean()
    assert board.problems() == [] and board.outstanding == 0
    assert Scoreboard.replay(board.record()).problems() == []


@pytest.mark.parametrize("received, complaint", [
    ((3, 0, 3, 10, False), "unicast 10 from 0 to 3 received 2 times at node 3, not 1"),
    ((4, 4, 4, 11, True), "broadcast 11 from 4 received 1 times at node 4, not 0"),
    ((1, 2, 1, 12, False), "unicast 12 from 2 to 6 received 1 times at node 1, not 0"),
    ((1, 0, 1, 99, False), "node 1 received payload 99, which nobody sent"),
])
def test_a_delivery_too_many_is_caught(received, complaint):
    board = clean()
    board.received(*received)
    assert complaint in board.problems()


def test_a_lost_delivery_and_wrong_fields_are_caught():
    board = Scoreboard(5)
    board.sent(0, 3, 10)
    board.sent(1, 2, 11)
    board.received(2, 0, 2, 11)  # src says 0, not 1
    problems = board.problems()
    assert "unicast 10 from 0 to 3 received 0 times at node 3, not 1" in problems
    assert any("as src 0" in problem for problem in problems)
    assert board.outstanding == 1


def test_a_payload_sent_twice_is_refused():
    board = Scoreboard(3)
    board.sent(0, 1, 5)
    with pytest.raises(ValueError, match="payload 5 was sent twice"):
        board.sent(1, 2, 5)


@pytest.mark.parametrize("src, dest", [(0, 3), (4, 1), (2, 2), (3, 0)])
def test_with_several_ports_one_eject_port_is_right(src, dest):
    """With 2 PE ports, a delivery is accepted on exactly one of the two eject ports (the one
    :func:`ihcube.topology.eject_port` gives); on the other it is a problem."""
    spec = FabricSpec(5, switching=Packet(ports=2))
    verdicts = []
    for port in (0, 1):
        board = Scoreboard(spec)
        board.sent(src, dest, 7, port=1)
        board.received(dest, src, dest, 7, port=port)
        verdicts.append(board.problems())
    assert sorted(map(len, verdicts)) == [0, 1]
    assert "on eject port" in (verdicts[0] or verdicts[1])[0]
