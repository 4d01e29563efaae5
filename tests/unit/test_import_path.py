"""The package lives under src/, so its folders are its import paths: a plain ``python``
runs citerun from any directory, the repository root included, with no -P or PYTHONPATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("where", ["repository root", "src", "tests", "elsewhere"])
def test_python_m_citerun_help_works_from_any_directory(where: str, tmp_path: Path) -> None:
    cwd = {"repository root": REPO, "src": REPO / "src", "tests": REPO / "tests",
           "elsewhere": tmp_path}[where]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
    result = subprocess.run([sys.executable, "-m", "citerun", "--help"], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "usage: citerun" in result.stdout


def test_the_standard_library_operator_is_never_shadowed() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
    code = "import operator, citerun.operator; print(operator.__file__, citerun.operator.__name__)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=60, check=True)
    stdlib_file, name = result.stdout.split()
    assert not stdlib_file.startswith(str(REPO)) and name == "citerun.operator"


def test_nothing_at_the_repository_root_is_a_python_package_but_the_tools() -> None:
    """Only the tools run from the root (tests, bench, training, the fuzz targets and the
    data-set loaders they share, evalsets), none named like a standard-library module it
    would shadow."""
    packages = {p.name for p in REPO.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= {"tests", "bench", "training", "fuzz", "evalsets"}, packages
    assert not packages & set(sys.stdlib_module_names)
