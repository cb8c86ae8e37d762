"""The faulty parts of :mod:`ihcube.verify.faults`: the registry, and buffers that break the
messages the strike rule says, and only those.

The negative controls that use these parts are in the tests of the checks they fool
(test_formal.py, test_fabric.py, test_stress.py, test_boards.py, test_cocotb.py).
"""

import inspect

import pytest
from amaranth.hdl import Fragment

from ihcube.rtl import InputBuffer, LinkBuffer, Router
from ihcube.rtl.input_buffer import entry_layout
from ihcube.rtl.message import message_layout
from ihcube.spec import FabricSpec
from ihcube.verify import faults
from ihcube.verify.harness import simulate


def test_the_registry_names_every_faulty_router_once():
    routers = {value for name in faults.__all__
               if inspect.isclass(value := getattr(faults, name)) and issubclass(value, Router)}
    assert routers <= set(faults.FAULTS.values())
    assert len(set(faults.FAULTS.values())) == len(faults.FAULTS)
    assert faults.weight_parity_router in faults.FAULTS.values()


@pytest.mark.parametrize("name", sorted(faults.FAULTS))
def test_every_faulty_router_elaborates_and_says_what_catches_it(name):
    router = faults.faulty_router(name)
    assert router is faults.FAULTS[name]
    assert "Caught by" in router.__doc__, f"{name}: say which check must catch it"
    # Called as a fabric calls its router factory: router(spec, node, strap=True).
    fragment = Fragment.get(router(FabricSpec.of(5, 8, 2, "msb"), 1, strap=True), None)
    assert fragment.subfragments


def strikes(k, every, first, once):
    """Whether the ``k``-th handshake (from 1) is a strike, by the documented rule."""
    if once:
        return k == first
    return k >= first and (k - first) % every == 0


def expected(fault, sent, every, first, once, bit):
    """What a buffer with ``fault`` hands on, given ``sent``: a plain model of the rule."""
    if fault == "drop":
        return [m for k, m in enumerate(sent, 1) if not strikes(k, every, first, once)]
    if fault == "corrupt":
        return [m ^ (1 << bit) if strikes(k, every, first, once) else m
                for k, m in enumerate(sent, 1)]
    out, k = [], 0
    for m in sent:  # duplicate: a struck read leaves the message for the next read
        while True:
            k += 1
            out.append(m)
            if not strikes(k, every, first, once):
                break
    return out


def pass_through(buffer_class, depth, count, copies=False):
    """Write payloads 1 .. ``count`` into a buffer, reading whenever it offers; return what
    it hands on. With ``copies`` it is an input buffer: each message is written wanting two
    copies, both sent as it is read (so the buffer clears them)."""
    message = message_layout(5, 8)
    dut = buffer_class(entry_layout(message, 2) if copies else message, depth)
    received = []

    async def testbench(ctx):
        sent = 0
        ctx.set(dut.r.ready, 1)
        w = dut.w.payload.message if copies else dut.w.payload
        r = dut.r.payload.message if copies else dut.r.payload
        if copies:
            ctx.set(dut.w.payload.want, 0b11)
        for _ in range(20 * count):
            ctx.set(dut.w.valid, sent < count)
            ctx.set(w.payload, sent + 1)
            if copies:
                ctx.set(dut.sent, ctx.get(dut.r.payload.want))
            if ctx.get(dut.r.valid):
                # An input buffer's head wants both copies: what it was written with.
                assert not copies or ctx.get(dut.r.payload.want) == 0b11
                received.append(ctx.get(r.payload))
            if ctx.get(dut.w.valid) and ctx.get(dut.w.ready):
                sent += 1
            await ctx.tick()

    simulate(dut, testbench, "faulty_buffer")
    return received


@pytest.mark.parametrize("fault", sorted(faults.BUFFER_FAULTS))
@pytest.mark.parametrize("depth, every, first, once, bit", [
    (1, 3, 1, False, 0), (1, 5, 5, False, 3), (2, 7, 2, False, 7), (1, 3, 4, True, 0),
    (2, 2, 1, False, 1),
])
def test_a_faulty_buffer_breaks_the_messages_the_rule_says(fault, depth, every, first, once,
                                                           bit):
    buffer = faults.faulty_buffer(fault, every=every, first=first, once=once, bit=bit)
    sent = list(range(1, 13))
    assert pass_through(buffer, depth, len(sent)) == expected(fault, sent, every, first, once,
                                                              bit)


@pytest.mark.parametrize("fault", sorted(faults.BUFFER_FAULTS))
@pytest.mark.parametrize("every, first, once, bit", [(3, 1, False, 0), (5, 5, False, 3),
                                                     (3, 4, True, 0)])
def test_a_faulty_input_buffer_breaks_the_messages_the_rule_says(fault, every, first, once,
                                                                 bit):
    """At depth 1 an input buffer's duplicate (the message written in again, wanting all its
    copies) hands on what a relay's (the head kept) does."""
    buffer = faults.faulty_buffer(fault, every=every, first=first, once=once, bit=bit,
                                  real=InputBuffer)
    assert issubclass(buffer, InputBuffer)
    sent = list(range(1, 13))
    assert pass_through(buffer, 1, len(sent), copies=True) == \
        expected(fault, sent, every, first, once, bit)


def test_the_real_buffer_hands_on_what_it_gets():
    """The control of the control: the same test bench on the real buffers."""
    assert pass_through(LinkBuffer, 1, 12) == list(range(1, 13))
    assert pass_through(InputBuffer, 1, 12, copies=True) == list(range(1, 13))


def test_a_router_variant_by_name_and_options():
    router = faults.faulty_router("corrupting-buffer", every=7, first=7, bit=20)
    assert issubclass(router, Router)
    for buffer, real in ((router.input_buffer, InputBuffer), (router.relay_buffer, LinkBuffer)):
        assert (buffer.fault, buffer.every, buffer.first, buffer.once, buffer.bit,
                buffer.real) == ("corrupt", 7, 7, False, 20, real)


@pytest.mark.parametrize("call, error, message", [
    (lambda: faults.faulty_router("leaky"), ValueError,
     r"^Fault must be one of dropping-buffer, .*, weight-parity, unmasked-stage, "
     r"stale-address, not 'leaky'$"),
    (lambda: faults.faulty_router("broken-travel", every=2), TypeError,
     r"^Fault 'broken-travel' takes no options, not every$"),
    (lambda: faults.faulty_buffer("lose"), ValueError,
     r"^Buffer fault must be one of 'drop', 'duplicate', 'corrupt', not 'lose'$"),
    (lambda: faults.faulty_buffer("drop", every=3, first=4), ValueError,
     r"^First strike must be at most the strike period 3, not 4$"),
    (lambda: faults.faulty_buffer("drop", every=0), ValueError,
     r"^Strike period must be a positive integer, not 0$"),
])
def test_wrong_parameters(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_corrupted_bit_outside_the_payload_is_refused():
    buffer = faults.faulty_buffer("corrupt", bit=8)
    with pytest.raises(ValueError, match=r"^Payload bit 8 does not exist in a 8-bit payload$"):
        Fragment.get(buffer(message_layout(5, 8), 1), None)


# --- Relay faults: the relays of link_stages=1 broken, the input buffers real ---------------

def submodule_classes(router):
    fragment = Fragment.get(router, None)
    return {name: type(sub.origins[0]) for sub, name, _ in fragment.subfragments
            if sub.origins}


@pytest.mark.parametrize("name", sorted(faults.RELAY_FAULTS.values()))
def test_a_relay_fault_breaks_the_relays_only(name):
    router = faults.faulty_router(name)
    parts = submodule_classes(router(5, 1, 8, 1, "msb", link_stages=1))
    relays = {part for sub, part in parts.items() if sub.startswith("relay")}
    inputs = {part for sub, part in parts.items() if sub.startswith("in")}
    assert len(relays) == 1 and issubclass(relays.pop(), faults.FaultyBuffer)
    assert inputs == {InputBuffer}
    # The control: the real router's relays are real buffers.
    real = submodule_classes(Router(5, 1, 8, 1, "msb", link_stages=1))
    assert {part for sub, part in real.items() if sub.startswith("relay")} == {LinkBuffer}


def test_the_buffer_faults_still_break_the_relays_too():
    """A buffer fault breaks the input buffers and the relays alike (the older negative
    controls count on it)."""
    parts = submodule_classes(faults.DroppingRouter(5, 1, 8, 1, "msb", link_stages=1))
    assert {part for sub, part in parts.items() if sub.startswith("relay")} == \
        {faults.DroppingRouter.relay_buffer}
    assert {part for sub, part in parts.items() if sub.startswith("in")} == \
        {faults.DroppingRouter.input_buffer}
    assert faults.DroppingRouter.relay_buffer.fault == "drop"
    assert issubclass(faults.DroppingRouter.input_buffer, InputBuffer)


def test_a_relay_router_variant_by_name_and_options():
    router = faults.faulty_router("stuck-relay", first=3)
    assert router.relay_buffer.first == 3 and router.input_buffer is InputBuffer
    router = faults.faulty_router("duplicating-relay", every=5, first=2)
    assert (router.relay_buffer.fault, router.relay_buffer.every,
            router.relay_buffer.first) == ("duplicate", 5, 2)


def test_a_stuck_buffer_hands_on_what_came_before_its_strike_only():
    """Sticks on its third write: the first two pass, nothing after (the third stays in it)."""
    assert pass_through(faults.stuck_buffer(first=3), 1, 12) == [1, 2]
    assert pass_through(faults.stuck_buffer(first=3), 2, 12) == [1, 2]


def test_a_reordering_relay_swaps_a_message_with_the_next():
    assert pass_through(faults.reordering_buffer(every=4, first=2), 1, 8) == \
        [1, 3, 2, 4, 5, 7, 6, 8]


def test_wrong_relay_fault():
    with pytest.raises(ValueError, match=r"^Relay fault must be one of 'drop', 'duplicate', "
                                         r"'corrupt', 'reorder', 'stuck', not 'lose'$"):
        faults.relay_fault_router("lose")
