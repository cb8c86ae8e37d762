"""The scoreboard of a fabric seen from its PE ports: every message delivered exactly once
where the topology says, and nowhere else.

:class:`Scoreboard` knows the rules from :mod:`ihcube.topology`: a unicast to a node of the
fabric reaches that node once; a unicast to an address that names no node is refused (taken
and counted at its PE, delivered nowhere); a broadcast reaches once every node of its
broadcast tree (:func:`ihcube.topology.broadcast_tree`: every node but its origin); with
several PE ports, each delivery leaves on the eject port :func:`ihcube.topology.eject_port`
gives for the link it arrived on (as :func:`ihcube.verify.scoreboard.check_run` checks). It
needs no simulator: the drivers and monitors of :mod:`ihcube.cocotb` (or any testbench) tell
it what was sent and received.
"""

from collections import Counter, namedtuple

from .. import topology
from ..spec import as_spec

__all__ = ["Sent", "Received", "Scoreboard"]

#: A message a PE sent: from ``src`` to ``dest`` (ignored for a broadcast), on its PE port
#: ``port``.
Sent = namedtuple("Sent", "src dest payload broadcast port", defaults=(0,))
#: A message a PE received at ``node`` on its eject port ``port``, with the fields its port
#: showed.
Received = namedtuple("Received", "node src dest payload broadcast port", defaults=(0,))


class Scoreboard:
    """Exactly-once delivery on a fabric, by the topology's rules.

    Parameters
    ----------
    spec : :class:`~ihcube.spec.FabricSpec` or int
        The fabric (its node count and routing order), or its node count.

    Each payload names its message: give every message sent a payload of its own.
    """

    def __init__(self, spec):
        spec = as_spec(spec)
        self.nodes, self.order, self.ports = spec.nodes, spec.order, spec.ports
        self._sent = {}          # payload -> Sent
        self._expected = {}      # payload -> Counter of the nodes that must receive it
        self._received = []      # every Received, in order
        self._refused = Counter()

    def receivers(self, src, dest, broadcast=False):
        """The nodes that must receive a message from ``src`` to ``dest`` (or a broadcast),
        once each: none if ``dest`` names no node."""
        n = self.nodes
        if broadcast:
            return sorted({far for _, far, _ in topology.broadcast_tree(n, src, self.order)})
        return [dest] if dest in range(n) else []

    def sent(self, src, dest, payload, broadcast=False, port=0):
        """Record that the PE of ``src`` sent ``payload`` to ``dest`` (or broadcast it) on its
        PE port ``port``; return the nodes that must receive it."""
        if payload in self._sent:
            raise ValueError(f"payload {payload} was sent twice; the scoreboard needs a payload "
                             f"of its own for each message")
        topology.check_node(self.nodes, src, "Source")
        self._sent[payload] = Sent(src, dest, payload, bool(broadcast), port)
        receivers = self.receivers(src, dest, broadcast)
        self._expected[payload] = Counter(receivers)
        if not receivers and not broadcast:
            self._refused[src] += 1
        return receivers

    def received(self, node, src, dest, payload, broadcast=False, port=0):
        """Record that the PE of ``node`` received ``payload`` on its eject port ``port``, with
        the fields ``src``, ``dest`` and kind the port showed."""
        self._received.append(Received(node, src, dest, payload, bool(broadcast), port))

    @property
    def expected(self):
        """How many deliveries the messages sent make in all."""
        return sum(sum(counter.values()) for counter in self._expected.values())

    @property
    def outstanding(self):
        """How many deliveries are still to come (received ones that were expected
        subtracted)."""
        got = Counter((r.payload, r.node) for r in self._received)
        return sum(max(0, count - got[payload, node])
                   for payload, counter in self._expected.items()
                   for node, count in counter.items())

    def refusals(self):
        """How many messages each node's PE sent to an address that names no node: what its
        ``refused_count`` must say, by node."""
        return [self._refused[node] for node in range(self.nodes)]

    def record(self):
        """What was sent (as taken) and received, in order, as plain data (JSON): a run to
        keep, or to check again with :meth:`replay`."""
        return {"nodes": self.nodes, "order": self.order, "ports": self.ports,
                "sent": [list(sent) for sent in self._sent.values()],
                "received": [list(received) for received in self._received]}

    @classmethod
    def replay(cls, record):
        """A scoreboard told again what :meth:`record` holds."""
        from ..spec import FabricSpec
        scoreboard = cls(FabricSpec.of(record["nodes"], order=record["order"],
                                       ports=record.get("ports", 1)))
        for sent in record["sent"]:
            scoreboard.sent(*sent)
        for received in record["received"]:
            scoreboard.received(*received)
        return scoreboard

    def problems(self, limit=20):
        """Every broken promise, as sentences (at most ``limit``): a message lost, received
        twice, received by a node that must not, or with fields that are not its own. An empty
        list is a clean run."""
        problems = []
        got = {}
        for r in self._received:
            sent = self._sent.get(r.payload)
            if sent is None:
                problems.append(f"node {r.node} received payload {r.payload}, which nobody sent")
                continue
            fields = (sent.src, r.node, sent.broadcast)
            if (r.src, r.dest, r.broadcast) != fields:
                problems.append(f"node {r.node} received payload {r.payload} as src {r.src}, "
                                f"dest {r.dest}, broadcast {r.broadcast}, not src {fields[0]}, "
                                f"dest {fields[1]}, broadcast {fields[2]}")
            got.setdefault(r.payload, Counter())[r.node] += 1
            if r.node in self._expected[r.payload]:
                port = topology.arrival_port(self.nodes, self.ports, sent.src, r.node, sent.port,
                                             self.order)
                if r.port != port:
                    problems.append(f"node {r.node} received payload {r.payload} on eject port "
                                    f"{r.port}, not {port}")
        for payload, expected in self._expected.items():
            sent, seen = self._sent[payload], got.get(payload, Counter())
            what = (f"broadcast {payload} from {sent.src}" if sent.broadcast else
                    f"unicast {payload} from {sent.src} to {sent.dest}")
            for node in sorted(set(expected) | set(seen)):
                if seen[node] != expected[node]:
                    problems.append(f"{what} received {seen[node]} times at node {node}, "
                                    f"not {expected[node]}")
        return problems[:limit]
