"""Run the cocotb regression on one fabric's Verilog in Icarus.

``ihcube cocotb --nodes 26 [the fabric options] [--waves] [--test NAME ...] [--stress COUNT]
[--seed SEED] [--out DIR]`` (``make cocotb N=26 [FABRIC='--link-stages 1']``) builds the
packet fabric of the fabric options (those of ``ihcube verilog``; one PE port: wormhole
switching and ``--ports`` are refused in one line) in
``DIR/<top>`` and runs the testbench there with :func:`ihcube.verify.cocotb_runner.regression`.
The results are in ``DIR/<top>/results.xml`` (JUnit XML) and, with ``--waves``, the waveform
in ``DIR/<top>/<top>.fst``. The exit status is 0 when every test passed, 1 when one failed,
and 2 (with one line on standard error) for a wrong parameter.
"""

import sys

from ..params import check_positive_integer
from .options import add_fabric_options, check_out, fabric_spec, require
from .usage import UsageError, checked, command_parser, integer, run

__all__ = ["main"]

NAME = "cocotb"


def _parser():
    from ..verify.cocotb_runner import TESTS
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser)
    parser.add_argument("--waves", action="store_true",
                        help="write a waveform, DIR/<top>/<top>.fst")
    parser.add_argument("--test", action="append", choices=TESTS, metavar="NAME",
                        help=f"run only this test (repeatable): {', '.join(TESTS)}")
    parser.add_argument("--stress", metavar="COUNT",
                        help="requests in the random stress test (default: scaled with N)")
    parser.add_argument("--seed", default="1", metavar="SEED",
                        help="seed of the random tests (default 1)")
    parser.add_argument("--out", "-o", default="build/cocotb", metavar="DIR",
                        help="where to build and run (default build/cocotb)")
    return parser


def _positive(what):
    return lambda value: check_positive_integer(value, what)


def _cocotb(args):
    from ..verify.cocotb_runner import Settings, regression
    spec = fabric_spec(args)
    require(spec, spec.packet and spec.ports == 1,
            "The cocotb regression tests a packet fabric with one PE port (its testbench "
            "drives one a node): leave out --switching wormhole and --ports")
    require(spec, spec.interface == "native",
            "The cocotb regression drives the native PE ports: leave out --interface (the "
            "AXI4-Stream ports' test: tests/test_axis_cocotb.py, docs/axis.md)")
    stress = (None if args.stress is None else
              integer(args.stress, "Stress request count", _positive("Stress request count")))
    seed = integer(args.seed, "Seed", _positive("Seed"))
    settings = checked(lambda: Settings.of(spec, stress=stress, seed=seed))  # their ceilings
    check_out(args.out)  # before the work, not after it
    try:
        build_dir, waveform, outcomes = regression(settings, args.out, tests=args.test,
                                                   waves=args.waves)
    except ValueError as error:  # a fabric the generator refuses: one that can deadlock
        raise UsageError(str(error)) from None
    for outcome in outcomes:
        print(f"{outcome.status.upper():8} {outcome.name}")
        if not outcome.passed and outcome.message:
            print("         " + outcome.message.replace("\n", "\n         "))
    failed = sum(not outcome.passed for outcome in outcomes)
    print(f"results: {build_dir / 'results.xml'}")
    if waveform is not None:
        print(f"waveform: {waveform}")
    print(f"{len(outcomes) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv=None):
    """Run ``ihcube cocotb`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _cocotb, argv)


if __name__ == "__main__":
    sys.exit(main())
