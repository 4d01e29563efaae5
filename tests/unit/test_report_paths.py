"""Issue 27: where ``citerun verify`` writes its report (one rule, verify.report_paths)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from citerun.cli import verify


@pytest.mark.parametrize("name, html, json", [
    ("r.html", "r.html", "r.json"), ("r.HTM", "r.HTM", "r.json"),
    ("x.json", "x.html", "x.json"), ("t.citerun.html", "t.citerun.html", "t.citerun.json"),
])
def test_the_suffix_decides_the_format_and_the_other_goes_beside(
        tmp_path: Path, name: str, html: str, json: str) -> None:
    paths = verify.report_paths(tmp_path / name, [])
    assert (paths.html, paths.json) == (tmp_path / html, tmp_path / json)


def test_an_input_reached_by_a_hard_link_or_a_symlink_is_refused(tmp_path: Path) -> None:
    thesis = tmp_path / "thesis.json"
    thesis.write_bytes(b"%PDF-1.4")
    os.link(thesis, tmp_path / "hard.json")
    (tmp_path / "via").symlink_to(tmp_path)
    for out in (tmp_path / "hard.json", tmp_path / "via" / "thesis.html"):
        with pytest.raises(verify.UsageError, match="would overwrite the input"):
            verify.report_paths(out, [thesis])
