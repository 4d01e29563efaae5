"""Issue 48 (Low): files were taken for what their first bytes said. A zip with ``%PDF-``
in its first 1,024 bytes (a member named ``%PDF-1.7.tex``) passed as a source PDF and was
parsed as a LaTeX bundle; a text file opening with a zip's local header passed as a
``.zip`` or ``.docx`` thesis; a PDF named ``.docx`` inside a zip's first bytes likewise.

Now each by its structure: a zip is a zip by its end-of-central-directory record (and the
central directory it locates, where the record says it ends), a Word document by its
``[Content_Types].xml``, a PDF by ``%PDF-`` within its first 1,024 bytes (ISO 32000-1,
7.5.2) in a file that is not a zip. The real service on loopback and the real Postgres,
uploading as a browser does; and the bytes' checks the operator and the worker make."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import asyncpg
import pytest

from citerun.core import pdfmagic
from citerun.pipeline import intake
from tests.e2e.test_web_service import SOURCES, THESIS, served, users


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


LATEX = (b"\\documentclass{article}\\begin{document}Heat stays after sunset "
         b"\\cite{a}.\\end{document}\n")
#: A LaTeX bundle whose first member's name puts %PDF- in its first 1,024 bytes.
POLYGLOT = _zip({"%PDF-1.7.tex": LATEX, "main.tex": LATEX})
#: A text file that opens with a zip's local file header and is no zip.
FAKE_ZIP = b"PK\x03\x04 these are my notes, not an archive\n" * 20
#: A real zip that is no Word document.
NOT_DOCX = _zip({"main.tex": LATEX})
DOCX_PARTS = {"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w:document/>"}


async def test_uploads_are_taken_by_their_structure(pool: asyncpg.Pool, tmp_path: Path) -> None:
    assert POLYGLOT[:4] == b"PK\x03\x04" and b"%PDF-" in POLYGLOT[:1024]
    async with served(pool) as base, users(base, "alice") as (alice,):
        status, body = await alice.upload(extra=[("sources", "paper.pdf", POLYGLOT)])
        assert (status, body.get("error")) == (
            415, "source 'paper.pdf' is not a PDF (it is a zip archive)"), body
        for name, data, needle in [
                ("thesis.zip", FAKE_ZIP, "no zip archive"),
                ("thesis.docx", FAKE_ZIP, "no zip archive"),
                ("thesis.docx", NOT_DOCX, "no Word document"),
                ("thesis.pdf", POLYGLOT, "is not a PDF (it is a zip archive)")]:
            thesis = tmp_path / name
            thesis.write_bytes(data)
            status, body = await alice.upload(thesis=thesis, sources=SOURCES[:1])
            assert status == 415 and needle in body.get("error", ""), (name, status, body)
        # What is what it says is taken.
        status, body = await alice.upload(thesis=THESIS, sources=SOURCES[:1])
        assert status == 202, body
    assert await pool.fetchval("SELECT count(*) FROM runs") == 1


@pytest.mark.parametrize("data, pdf, zipped", [
    (POLYGLOT, False, True),
    (FAKE_ZIP, False, False),
    (THESIS.read_bytes(), True, False),
    (b"junk before the header\n" * 10 + THESIS.read_bytes(), True, False),
    (_zip(DOCX_PARTS), False, True),
])
def test_the_bytes_checks_of_the_operator_and_the_worker(data: bytes, pdf: bool,
                                                         zipped: bool) -> None:
    assert pdfmagic.is_pdf(data) is pdf
    assert pdfmagic.is_zip(data) is zipped
    assert pdfmagic.is_thesis(data) is (pdf or zipped)


def test_a_word_document_is_one_by_its_content_types() -> None:
    intake.check_thesis("thesis.docx", _zip(DOCX_PARTS))
    with pytest.raises(intake.FileRefused, match="no Word document"):
        intake.check_thesis("thesis.docx", NOT_DOCX)
    with pytest.raises(intake.FileRefused, match="no zip archive"):
        intake.check_thesis("thesis.zip", FAKE_ZIP)
    with pytest.raises(intake.FileRefused, match="it is a zip archive"):
        intake.check_source("paper.pdf", POLYGLOT)
