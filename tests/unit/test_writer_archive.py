"""A writer's bundle is read within bounds: hostile archives fail with a clear error."""

from __future__ import annotations

import hashlib
import io
import stat
import time
import zipfile

import pytest

from citerun.pipeline.writer import archive
from citerun.pipeline.writer.model import WriterFileError


def _zip(members: dict[str, bytes], *, link: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in members.items():
            out.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            out.writestr(info, "/etc/passwd")
    return buf.getvalue()


def test_a_bundle_gives_its_files_by_path_inside_it() -> None:
    data = _zip({"thesis/main.tex": b"\\documentclass{article}", "thesis/refs.bib": b"@article{a,}",
                 "thesis/ch/": b"", "./thesis/ch/one.tex": b"x"})
    files = archive.read_bundle(data)
    assert files == {"thesis/main.tex": b"\\documentclass{article}",
                     "thesis/refs.bib": b"@article{a,}", "thesis/ch/one.tex": b"x"}


@pytest.mark.parametrize("name, why", [
    ("../../etc/cron.d/x", "leaving the archive"),
    ("a/../../x.tex", "leaving the archive"),
    ("/etc/passwd", "absolute"),
    ("C:/Windows/x.tex", "absolute"),
    ("a\\..\\..\\x.tex", "backslash"),
])
def test_paths_that_could_leave_the_bundle_are_refused(name: str, why: str) -> None:
    with pytest.raises(WriterFileError, match=why):
        archive.read_bundle(_zip({"main.tex": b"x", name: b"y"}))


def test_links_and_duplicates_are_refused() -> None:
    with pytest.raises(WriterFileError, match="symbolic link"):
        archive.read_bundle(_zip({"main.tex": b"x"}, link="refs.bib"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        out.writestr("main.tex", b"x")
        out.writestr("./main.tex", b"y")
    with pytest.raises(WriterFileError, match="twice"):
        archive.read_bundle(buf.getvalue())


def test_a_zip_bomb_costs_at_most_the_limit() -> None:
    bomb = _zip({"main.tex": b"\0" * (64 << 20)})  # 64 MiB of zeros in ~64 KB
    assert len(bomb) < 200_000
    started = time.process_time()
    with pytest.raises(WriterFileError, match="zip bomb"):
        archive.read_bundle(bomb)
    small = archive.BundleLimits(max_member_bytes=1 << 20, max_ratio=1e9)
    with pytest.raises(WriterFileError, match="over the limits"):
        archive.read_bundle(bomb, small)
    assert time.process_time() - started < 5


def test_too_many_members_and_not_a_zip_are_refused() -> None:
    many = _zip({f"f{i}.tex": b"" for i in range(50)})
    with pytest.raises(WriterFileError, match="50 members"):
        archive.read_bundle(many, archive.BundleLimits(max_members=20))
    with pytest.raises(WriterFileError, match="not a readable zip"):
        archive.read_bundle(b"%PDF-1.7 not a zip")
    with pytest.raises(WriterFileError, match="over the limit"):
        archive.read_bundle(b"PK" + b"\0" * 100, archive.BundleLimits(max_archive_bytes=50))


def test_a_corrupt_member_is_a_clear_error() -> None:
    text = b"".join(hashlib.sha256(str(i).encode()).hexdigest().encode() for i in range(600))
    data = bytearray(_zip({"main.tex": text}))
    start = data.index(b"main.tex") + len(b"main.tex")
    data[start + 2000:start + 2100] = b"\xff" * 100  # inside the deflate stream
    with pytest.raises(WriterFileError, match="unreadable"):
        archive.read_bundle(bytes(data))
