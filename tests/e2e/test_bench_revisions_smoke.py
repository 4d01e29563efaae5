"""The smoke run of ``bench.revisions``: the demo of this tree against the commit it
stands on, both through the README's command, side by side in one run (issue 42: a
restructuring keeps the demo's figures; the bench that shows it is run here so it does not
rot)."""

from __future__ import annotations

import subprocess
import sys

from bench.common import REPO


def test_the_demo_of_head_and_of_the_working_tree_side_by_side() -> None:
    result = subprocess.run([sys.executable, "-m", "bench.revisions", "--before", "HEAD",
                             "--only", "demo"], cwd=REPO, capture_output=True, text=True,
                            timeout=900)
    assert "## demo" in result.stdout, result.stdout + result.stderr
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines()
            if line.startswith("| ") and line.count("|") == 4}
    before, after = (int(x) for x in rows["citations"].split("|")[2:4])
    assert before == after > 0
    # The working tree may differ from HEAD while someone works; the bench says which.
    assert ("figures equal" in result.stdout) == (result.returncode == 0), result.stdout
