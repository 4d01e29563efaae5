"""The repository's operator/ folder never shadows the standard library's operator."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GUARD = "imported as the top-level module 'operator'"


def test_python_m_citerun_in_the_repository_root_works_or_names_the_problem() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
    result = subprocess.run([sys.executable, "-m", "citerun", "--help"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    if result.returncode == 0:
        assert "usage: citerun" in result.stdout
    else:
        assert GUARD in result.stderr, result.stderr
        assert "cannot import name" not in result.stderr


def test_importing_operator_from_the_repository_root_hits_the_guard() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
    code = "import sys; sys.modules.pop('operator', None); import operator"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and GUARD in result.stderr, result.stderr


def test_every_child_process_of_the_tests_runs_with_the_safe_path() -> None:
    assert os.environ.get("PYTHONSAFEPATH") == "1"
    result = subprocess.run([sys.executable, "-c", "import sys; print(sys.flags.safe_path)"],
                            cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "True"
    assert str(REPO) not in os.environ.get("PYTHONPATH", "").split(os.pathsep)
