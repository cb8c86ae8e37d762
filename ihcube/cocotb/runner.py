"""Run a cocotb testbench of your own on a generated fabric, in Icarus Verilog.

:func:`run_testbench` writes the Verilog of a :class:`~ihcube.spec.FabricSpec` (either
interface), compiles it and runs the cocotb tests of a Python module on it, as the project's
own regression does (:mod:`ihcube.verify.cocotb_runner`: the same compile flags and
timescale), and returns an :class:`~ihcube.verify.cocotb_runner.Outcome` per test read from
cocotb's JUnit report (the runner itself does not raise when a test fails).
"""

import os
import sys
from pathlib import Path

from ..extras import require
from ..verify.cocotb_runner import BUILD_ARGS, REWRITE, TIMESCALE, Outcome, read_results

__all__ = ["SPEC_VARIABLE", "run_testbench", "spec_from_env"]

#: The environment variable that hands the testbench its fabric (:func:`spec_from_env`).
SPEC_VARIABLE = "IHCUBE_COCOTB_SPEC"


def spec_from_env(environ=os.environ):
    """In a testbench run by :func:`run_testbench`: the fabric it runs on, a
    :class:`~ihcube.spec.FabricSpec`."""
    import json
    from ..spec import FabricSpec
    return FabricSpec.of(**json.loads(environ[SPEC_VARIABLE]))


def run_testbench(spec, module, build_dir, tests=None, *, path=None, env=None, verilog=None):
    """Generate ``spec``'s Verilog into ``build_dir``, compile it with Icarus and run the
    cocotb tests ``tests`` (names; None: all) of the Python module ``module``, importable
    from the folder ``path`` (None: as it is); return an
    :class:`~ihcube.verify.cocotb_runner.Outcome` per test, in order (all the module's, as
    the report lists them, when ``tests`` is None). ``env`` adds environment variables;
    ``verilog``, if given, is the text to run instead of ``spec``'s (a broken fabric's, for a
    negative control)."""
    import json
    get_runner = require("cocotb_tools.runner", "verify", "A cocotb testbench").get_runner
    from ..generate import fabric_spec, fabric_verilog
    spec = fabric_spec(spec)
    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    source = build_dir / f"{spec.name}.v"
    source.write_text(fabric_verilog(spec) if verilog is None else verilog)
    runner = get_runner("icarus")
    runner.build(sources=[source], hdl_toplevel=spec.name, build_dir=build_dir,
                 build_args=list(BUILD_ARGS), timescale=TIMESCALE, always=True,
                 log_file=build_dir / "build.log")
    results = build_dir / "results.xml"
    results.unlink(missing_ok=True)
    if path is not None:
        path = str(Path(path).resolve())  # the simulator runs in build_dir
        sys.path.insert(0, path)  # the runner hands its sys.path to the simulator
    try:
        runner.test(test_module=module, hdl_toplevel=spec.name, hdl_toplevel_lang="verilog",
                    build_dir=build_dir, test_dir=build_dir, testcase=tests,
                    results_xml=str(results),
                    extra_env={SPEC_VARIABLE: json.dumps(spec.keywords()), **REWRITE,
                               **(env or {})})
    except SystemExit:
        pass  # a failed test or a crashed simulator: the report says which
    finally:
        if path is not None:
            sys.path.remove(path)
    if tests is None:
        import xml.etree.ElementTree as ElementTree
        tests = ([case.get("name") for case in ElementTree.parse(results).getroot()
                  .iter("testcase")] if results.is_file() else [])
        if not tests:
            return [Outcome(module, "missing", f"no result in {results}")]
    return read_results(results, tests)
