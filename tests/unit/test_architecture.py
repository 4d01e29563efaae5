"""The layers point one way (import-linter contracts) and the package type-checks
(mypy --strict), both configured in pyproject.toml, run over src/ as it is.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SRC = REPO / "src"


def test_import_contracts_hold(tmp_path: pathlib.Path) -> None:
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.fail("import-linter is not installed (it is in the test extra)")
    result = subprocess.run([lint, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and "Analyzed" in result.stdout, result.stdout


def test_mypy_strict_passes_on_the_package(tmp_path: pathlib.Path) -> None:
    mypy = shutil.which("mypy")
    if mypy is None:
        pytest.fail("mypy is not installed (it is in the test extra)")
    result = subprocess.run([mypy, "--no-incremental", "-p", "citerun"], cwd=REPO,
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "MYPYPATH": str(SRC)})
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "Success: no issues found" in result.stdout
