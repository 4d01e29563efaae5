"""`citerun submit`, `upload` and `report` talk to the cluster's database only: without
CITERUN_DATABASE_URL they refuse (naming the variable) and start no local Postgres."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import citerun_command

REPO = Path(__file__).resolve().parents[2]
PDF = REPO / "examples" / "thesis.pdf"


@pytest.mark.parametrize("argv", [
    ["upload", str(PDF)],
    ["submit", str(PDF), "--sources", str(REPO / "examples" / "sources")],
])
def test_cluster_commands_refuse_without_a_database_url(tmp_path: Path, argv: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CITERUN_DATABASE_URL"}
    env["CITERUN_DATA_DIR"] = str(tmp_path / "data")
    env["KUBECONFIG"] = str(tmp_path / "no-kubeconfig")
    result = subprocess.run([*citerun_command(), *argv], env=env, capture_output=True,
                            text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "CITERUN_DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr
    # No local database was started or created as a fallback.
    assert not (tmp_path / "data").exists()
