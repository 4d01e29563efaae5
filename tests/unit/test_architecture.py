"""The layers point one way (import-linter contracts) and the package type-checks
(mypy --strict), both configured in pyproject.toml.

The distribution maps ``operator/`` and ``worker/`` into the ``citerun`` package, which
import-linter cannot see through an editable install; the test lays the package out as
it is installed (symlinks in a temporary directory) and lints that.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def installed_layout(root: pathlib.Path) -> pathlib.Path:
    package = root / "citerun"
    package.mkdir()
    for entry in (REPO / "citerun").iterdir():
        (package / entry.name).symlink_to(entry)
    for name, source in (("operator", "operator"), ("worker", "worker"),
                         ("migrations", "migrations")):
        (package / name).symlink_to(REPO / source)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_import_contracts_hold(tmp_path: pathlib.Path) -> None:
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.fail("import-linter is not installed (it is in the test extra)")
    root = installed_layout(tmp_path)
    result = subprocess.run([lint, "--no-cache"], cwd=root, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(root)}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and "Analyzed" in result.stdout, result.stdout


def test_mypy_strict_passes_on_the_package(tmp_path: pathlib.Path) -> None:
    mypy = shutil.which("mypy")
    if mypy is None:
        pytest.fail("mypy is not installed (it is in the test extra)")
    root = installed_layout(tmp_path)
    result = subprocess.run([mypy, "--no-incremental", "-p", "citerun"], cwd=root,
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "MYPYPATH": str(root)})
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "Success: no issues found" in result.stdout
