"""The wheel holds what its commands need: built with ``pip wheel``, installed in a fresh
virtual environment, and run from a folder outside the project, ``ihcube verilog``,
``ihcube lint`` and ``ihcube cocotb`` work (the Verilator waivers and the cocotb testbench
come from the installed package, not from the source tree).

The fresh environment gets the installed third-party packages of the test's own
environment through a ``.pth`` line (installing them again would download a gigabyte) but not
the project itself: ``ihcube`` comes from the wheel alone.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the wheel of this tree installed; returns its ``bin`` folder."""
    base = tmp_path_factory.mktemp("packaging")
    wheels = base / "wheels"
    # Built from a copy of the sources: pip builds in the tree it is given (its build/ and
    # egg-info), where the other tests of the run write at the same time.
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "gen", "*.egg-info", "__pycache__", ".pytest_cache"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                            "--wheel-dir", str(wheels), str(source)], capture_output=True,
                           text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel, = wheels.glob("ihcube-*.whl")
    env_dir = base / "venv"
    venv.create(env_dir, with_pip=False)
    bin_dir = env_dir / "bin"
    fresh_site = pathlib.Path(subprocess.run(
        [str(bin_dir / "python"), "-c",
         "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    # The third-party packages of this environment (not its editable ihcube: .pth files of
    # a folder added this way are not run).
    (fresh_site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"),
                    "install", "--quiet", "--no-deps", str(wheel)],
                   check=True, capture_output=True)
    return wheel, bin_dir


def run(bin_dir, cwd, *args):
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return subprocess.run([str(bin_dir / "ihcube"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_wheel_holds_the_waivers_and_the_testbench(installed):
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "ihcube/verify/verilator.vlt" in names
    assert "ihcube/verify/verilator_wormhole.vlt" in names
    assert "ihcube/verify/cocotb_tb/fabric_tb.py" in names


@pytest.mark.slow
def test_the_installed_package_is_the_wheel_not_the_source_tree(installed, tmp_path):
    _, bin_dir = installed
    where = subprocess.run([str(bin_dir / "python"), "-c",
                            "import ihcube.verify.lint as m; print(m.WAIVERS)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert str(ROOT) not in where and "site-packages" in where


@pytest.mark.slow
def test_the_wheel_knows_its_version_without_git(installed, tmp_path):
    """The wheel, built from a copy without ``.git``, has pyproject.toml's version: in
    ``--version`` and in the header of what it writes, which ``--check`` accepts."""
    _, bin_dir = installed
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(),
                        re.M).group(1)
    assert run(bin_dir, tmp_path, "--version").stdout == f"ihcube {version}\n"
    assert run(bin_dir, tmp_path, "verilog", "--nodes", "2", "--out", ".").returncode == 0
    assert f"written by ihcube {version}." in (tmp_path / "ihcube_n2_w32.v").read_text()
    result = run(bin_dir, tmp_path, "verilog", "--check", "ihcube_n2_w32.v", "--nodes", "2")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("verilator") is None or shutil.which("iverilog") is None,
                    reason="needs verilator and iverilog (make system-tools installs them)")
def test_generation_lint_and_cocotb_from_another_folder(installed, tmp_path):
    _, bin_dir = installed
    result = run(bin_dir, tmp_path, "verilog", "--nodes", "5", "--out", "out")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "ihcube_n5_w32.v").is_file()
    result = run(bin_dir, tmp_path, "lint", "--nodes", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Verilator -Wall clean" in result.stdout
    result = run(bin_dir, tmp_path, "cocotb", "--nodes", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\b[1-9]\d* passed, 0 failed", result.stdout + result.stderr)


def pinned_distributions():
    """Every distribution pyproject.toml pins, with its extras, and their dependencies that
    are installed here (the whole tree the claim must hold for)."""
    import importlib.metadata as metadata
    import re
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted += [item for item in extra if not item.startswith("ihcube")]
    seen, todo = set(), [re.split(r"[<>=~!; \[]", item, maxsplit=1)[0] for item in wanted]
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for requirement in metadata.requires(name) or ():
            if "extra ==" not in requirement:
                dependency = re.split(r"[<>=~!; \[(]", requirement, maxsplit=1)[0]
                try:
                    metadata.version(dependency)
                except metadata.PackageNotFoundError:
                    continue  # not for this platform or Python
                todo.append(dependency)
    return sorted(seen), project["requires-python"]


def needing_more_than(lowest):
    """The installed dependencies whose own ``Requires-Python`` excludes Python ``lowest``."""
    import importlib.metadata as metadata
    from packaging.specifiers import SpecifierSet
    names, _ = pinned_distributions()
    assert "numpy" in names and "matplotlib" in names  # the check looks where it must
    needs = {name: metadata.metadata(name).get("Requires-Python") for name in names}
    return {name: need for name, need in needs.items()
            if need and f"{lowest}.0" not in SpecifierSet(need)}


def test_the_python_claim_holds_for_every_pinned_package():
    """pyproject's ``requires-python`` is no lower than what any installed dependency asks
    for (numpy 2.4 and matplotlib 3.11 need 3.11: the claim of 3.9 was false)."""
    _, claim = pinned_distributions()
    assert claim.startswith(">=")
    assert needing_more_than(claim[2:]) == {}


def test_the_python_check_catches_a_false_claim():
    """Negative control: the old claim of 3.9 is caught, numpy and matplotlib named."""
    assert {"numpy", "matplotlib"} <= set(needing_more_than("3.9"))
