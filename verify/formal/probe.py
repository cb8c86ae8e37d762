"""Looking inside an elaborated design, for the formal checks' helper invariants.

A k-induction proof needs invariants over internal registers (buffer counts, arbiter locks,
the router's ``done`` masks), so the checks elaborate the design under test themselves and
find those registers by name (:class:`Probe`), then add the elaborated fragment as a
submodule (:class:`Prebuilt`). :func:`free_inputs` lists the ports the environment drives.
"""

from amaranth.hdl import Elaboratable, Value
from amaranth.lib.wiring import In

__all__ = ["Prebuilt", "Probe", "free_inputs"]


class Prebuilt(Elaboratable):
    """An already elaborated fragment, to add as a submodule (so its signals can be probed)."""

    def __init__(self, fragment):
        self._fragment = fragment

    def elaborate(self, platform):
        return self._fragment


class Probe:
    """Signals of an elaborated component, found by name in its fragment tree.

    The checks need a few internal registers (buffer counts, arbiter locks, the router's
    ``done`` masks) for their helper invariants. They are looked up by the names the RTL gives
    them; a renamed register fails here with a message, not silently in the solver.
    """

    def __init__(self, fragment, path="router"):
        self.fragment = fragment
        self.path = path

    @property
    def component(self):
        """The component that elaborated to this fragment."""
        return self.fragment.origins[0]

    def sub(self, name):
        for fragment, sub_name, _ in self.fragment.subfragments:
            if sub_name == name:
                return Probe(fragment, f"{self.path}.{name}")
        raise LookupError(f"{self.path} has no submodule {name!r}; the formal check needs it")

    def _signals(self):
        found = {}
        stack = [self.fragment]
        while stack:
            fragment = stack.pop()
            for statements in fragment.statements.values():
                for statement in statements:
                    for signal in (*statement._lhs_signals(), *statement._rhs_signals()):
                        found.setdefault(signal.name, {})[id(signal)] = signal
            stack.extend(fragment for fragment, _, _ in fragment.subfragments)
        return found

    def signal(self, name):
        """The one signal called ``name`` in this fragment and those below it."""
        matches = list(self._signals().get(name, {}).values())
        if len(matches) != 1:
            raise LookupError(f"{self.path} has {len(matches)} signals named {name!r}; the "
                              f"formal check needs exactly one")
        return matches[0]


def free_inputs(component):
    """The input signals of ``component`` (from its own point of view), to leave free."""
    ports = []
    for _, member, value in component.signature.flatten(component):
        if member.flow == In:
            ports.append(Value.cast(value))
    return ports
