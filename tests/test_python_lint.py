"""The Python lint: ``ruff check`` with the project's settings (``[tool.ruff]`` in
``pyproject.toml``: pycodestyle, pyflakes and bugbear, 100 columns) finds nothing."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG = ROOT / "pyproject.toml"


def _ruff(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--config", str(CONFIG), *args],
                          cwd=cwd, capture_output=True, text=True)


def test_the_python_sources_are_lint_clean():
    result = _ruff(".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_lint_catches_what_it_is_for(tmp_path):
    """Negative control: with the same settings, an unused import, an undefined name, a line
    over 100 columns and a closure over a loop variable are each reported."""
    (tmp_path / "broken.py").write_text(
        "import os\n"
        "\n"
        "\n"
        "def f():\n"
        "    return undefined_name\n"
        "\n"
        "\n"
        f"LONG = '{'x' * 100}'\n"
        "\n"
        "\n"
        "def g():\n"
        "    fs = []\n"
        "    for i in range(3):\n"
        "        fs.append(lambda: i)\n"
        "    return fs\n")
    result = _ruff("--output-format", "concise", "broken.py", cwd=tmp_path)
    assert result.returncode == 1
    for code in ("F401", "F821", "E501", "B023"):
        assert code in result.stdout, (code, result.stdout)
