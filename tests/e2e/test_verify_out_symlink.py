"""Issue 48 (Low): ``citerun verify --out`` and the report beside it followed a symlink
already in place: a repository's ``report.json`` pointing out of it overwrote the file it
names (in CI, a file of the machine running the check). The command as written, a real
process: a symlink at ``--out`` or at the file beside it is refused with exit 2 and one
line naming it, before any work; the file it points at is unchanged. What replaces a
report writes a new file in its directory and renames it over the name, so a link put
there after the check is replaced, never written through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from citerun.cli import verify_run
from tests.e2e.test_verify_errors import SOURCES, THESIS, assert_one_error_line, citerun

SECRET = "ssh-ed25519 AAAA... the machine's own file\n"


@pytest.mark.parametrize("link", ["out", "the json beside it"])
def test_a_symlink_at_out_or_beside_it_is_refused_and_its_target_unchanged(
        tmp_path: Path, link: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "authorized_keys"
    victim.write_text(SECRET)
    repo = tmp_path / "repo"
    repo.mkdir()
    out = repo / "report.html"
    (out if link == "out" else repo / "report.json").symlink_to(victim)
    done = citerun("verify", THESIS, "--sources", SOURCES, "--out", str(out),
                   data_dir=tmp_path / "data", timeout=900)
    needles = ["--out", "symbolic link", "authorized_keys"]
    if link != "out":
        needles.append("report.json")
    assert_one_error_line(done, 2, *needles)
    assert victim.read_text() == SECRET
    assert not (tmp_path / "data" / "postgres").exists()  # refused before any work


def test_a_report_replaces_a_link_put_in_its_place_and_never_writes_through(
        tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text(SECRET)
    report = tmp_path / "report.json"
    report.symlink_to(victim)  # put there after the command's check
    verify_run.write_file(report, '{"ok": true}\n')
    assert victim.read_text() == SECRET
    assert not report.is_symlink() and report.read_text() == '{"ok": true}\n'
    mask = os.umask(0)
    os.umask(mask)
    assert report.stat().st_mode & 0o777 == 0o666 & ~mask  # as open() would have made it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "victim.txt"]


def test_a_report_that_cannot_be_written_leaves_no_file_behind(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "report.html").mkdir()  # a directory where the report would go
    with pytest.raises(OSError):
        verify_run.write_file(folder / "report.html", "<html></html>")
    assert [p.name for p in folder.iterdir()] == ["report.html"]
