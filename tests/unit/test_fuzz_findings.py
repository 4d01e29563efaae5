"""What the fuzzer found (issue 48, item 4; ``python -m bench.fuzz``), one test a finding,
each failing before its fix. The zip intake target found in its first 15 seconds that a
hostile zip ended the readers in an exception none of them documents (in the web: a 500
from the upload's thread; in the worker: a parse child's traceback instead of the
document refused as corrupt):

- a member with an empty name: ``IndexError`` in ``ZipInfo.is_dir`` (archive.read_bundle);
- a central directory that asks for zip version 10.1: ``NotImplementedError`` from
  ``zipfile.ZipFile`` (archive.read_bundle, the web's expanded_size);
- a .tex member whose deflate stream is corrupt: ``zlib.error`` while the main file's head
  is read (pipeline.intake.zip_main);
- a central directory placed past where it is: members at negative offsets,
  ``ValueError`` (negative seek) reading one (archive.read_bundle) and ``struct.error``
  when a library is appended to the zip (the web's _append).

The docx target found in its first minute (the worker: a parse child's traceback; the
CLI: one for the user) that an XML part declaring an encoding expat cannot read ended
the Word reader in ``LookupError`` (``encoding="UTF-9"``) or ``ValueError``
(``encoding="UTF-7"``, ``Shift_JIS``, ``utf-32``: "multi-byte encodings are not
supported") out of fields.parse_xml, in the document, its relationships or any part.

The latex target's first 30-minute run (2026-12-06) found a library that hung its reader:
fields full of ``\\cite[`` that never close, in a 2 KB ``refs.bib`` beside the
thesis (two dozen in one title suffice; hundreds end in a RecursionError and its fallback), kept pylatexenc's walker backtracking through every way to nest the
optional arguments (still running after 300 s; 0.04 s after the fix: brackets that do not
pair up read as parentheses, writer/bib.py ``latex_text``).

The docx target's 30-minute run found a Zotero field whose item URI has a host that opens
a bracket it never closes (``http://[zotero.org/...``): ``urllib.parse.urlsplit`` raises
ValueError ("Invalid IPv6 URL") out of the Word reader; such a URI now gives no key and
the item is named by its id, as one without a URI.

Each input is also in the fuzz corpus (``fuzz/corpus/<target>/finding-*``), replayed by
tests/unit/test_fuzz_corpus.py through every target.
"""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from citerun.pipeline import intake as pipeline_intake
from citerun.pipeline.pdf.limits import DocumentError
from citerun.pipeline.settings import LimitSettings
from citerun.pipeline.writer import archive, formats
from citerun.pipeline.writer.model import WriterFileError
from citerun.web import intake as web_intake
from fuzz import seeds, targets

TEX = b"\\documentclass{article}\n\\begin{document}\nHeat \\cite{a}.\n\\end{document}\n"
LIBRARY = [("refs.bib", b"@article{a, title = {Heat}, year = {2019}}\n")]
BIG = 10**9


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path, data in files.items():
            bundle.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), data,
                            compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def empty_member_name() -> bytes:
    return _zip({"": b"x", "main.tex": TEX})


def unknown_zip_version() -> bytes:
    data = bytearray(_zip({"main.tex": TEX}))
    data[data.find(b"PK\x01\x02") + 6] = 101  # version needed to extract: 10.1
    return bytes(data)


def corrupt_deflate_stream() -> bytes:
    data = bytearray(_zip({"main.tex": TEX + b"hello world " * 50}))
    start = data.find(b"PK\x03\x04") + 30 + len("main.tex")
    data[start:start + 8] = b"\xff" * 8
    return bytes(data)


def directory_past_its_place() -> bytes:
    data = bytearray(_zip({"main.tex": TEX}))
    end = data.rfind(b"PK\x05\x06")
    offset = struct.unpack_from("<L", data, end + 16)[0]
    struct.pack_into("<L", data, end + 16, offset + 27)
    return bytes(data)


def _docx_input(encoding: str) -> bytes:
    return targets.encode_members(_docx_part(encoding), targets.FIRST_FILE["docx"])


#: Each finding's input in the corpus of its target: name -> (target, the input).
FINDINGS = {
    "empty-member-name": ("zip", empty_member_name),
    "unknown-zip-version": ("zip", unknown_zip_version),
    "corrupt-deflate-stream": ("zip", corrupt_deflate_stream),
    "directory-past-its-place": ("zip", directory_past_its_place),
    "unknown-xml-encoding": ("docx", lambda: _docx_input("UTF-9")),
    "multi-byte-xml-encoding": ("docx", lambda: _docx_input("UTF-7")),
    "unclosed-optional-arguments": ("bib", lambda: unclosed_optional_arguments()),
    "bomb-of-unknown-commands": ("latex", lambda: bomb_of_unknown_commands()),
}


def bomb_of_unknown_commands() -> bytes:
    """Eight levels of ten-fold macros over a command never defined (``\\ma``): no text
    comes of it, so only what the expansions count stops it."""
    names = "abcdefghi"
    lines = [b"\\documentclass{article}"]
    for low, high in zip(names, names[1:]):
        lines.append(b"\\newcommand\\m" + high.encode() + b"{" + (b"\\m" + low.encode()) * 10 + b"}")
    lines += [b"\\begin{document}", b"\\mi", b"\\end{document}", b""]
    return b"\n".join(lines)


def unclosed_optional_arguments() -> bytes:
    return b"@article{a,\n  title = {Heat " + b"\\cite[" * 24 + b"x},\n  year = {2019}\n}\n"


def _docx_part(encoding: str, part: str = "word/document.xml") -> dict[str, bytes]:
    head = f'<?xml version="1.0" encoding="{encoding}"?>'.encode()
    document = (b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/'
                b'2006/main"><w:body><w:p><w:r><w:t>Heat.</w:t></w:r></w:p></w:body>'
                b'</w:document>')
    files = {"word/document.xml": document}
    files[part] = head + (document if part == "word/document.xml" else b"<Relationships/>")
    return files


@pytest.mark.parametrize("encoding", ["UTF-9", "UTF-7", "Shift_JIS", "utf-32"])
@pytest.mark.parametrize("part", ["word/document.xml", "_rels/.rels"])
def test_an_xml_part_in_an_encoding_expat_cannot_read_is_refused(encoding: str,
                                                                 part: str) -> None:
    files = _docx_part(encoding, part)
    with pytest.raises(WriterFileError, match="encoding|not well-formed"):
        formats.read_files(files, archive.BundleLimits(), LimitSettings().library)
    with pytest.raises(DocumentError) as refused:
        formats.read_document(_zip(files), LimitSettings(), 10**8)
    assert refused.value.reason == "corrupt"


def test_a_member_with_an_empty_name_is_left_out() -> None:
    assert archive.read_bundle(empty_member_name()) == {"main.tex": TEX}


@pytest.mark.parametrize("make", [unknown_zip_version, directory_past_its_place],
                         ids=["unknown-version", "directory-past-its-place"])
def test_an_unreadable_zip_is_the_readers_refusal(make: object) -> None:
    data = make()  # type: ignore[operator]
    with pytest.raises(WriterFileError):
        archive.read_bundle(data)
    with pytest.raises(DocumentError) as refused:  # the worker: the document is corrupt
        formats.read_document(data, LimitSettings(), 10**8)
    assert refused.value.reason == "corrupt"


def test_the_web_refuses_a_zip_of_an_unknown_version_with_400() -> None:
    with pytest.raises(web_intake.IntakeRefused) as refused:
        web_intake.expanded_size("thesis.zip", unknown_zip_version(), archive.BundleLimits())
    assert refused.value.status == 400


def test_a_main_file_that_does_not_inflate_is_left_to_the_reader() -> None:
    data = corrupt_deflate_stream()
    assert pipeline_intake.zip_main(data) is None  # the reader says why
    with pytest.raises(WriterFileError, match="unreadable"):
        archive.read_bundle(data)
    staged = web_intake.prepare("thesis.zip", data, [], BIG, BIG, archive.BundleLimits())
    assert staged == data


def test_a_library_appended_to_a_zip_whose_directory_lies_is_refused_with_400() -> None:
    with pytest.raises(web_intake.IntakeRefused) as refused:
        web_intake.prepare("thesis.zip", directory_past_its_place(), LIBRARY, BIG, BIG,
                           archive.BundleLimits())
    assert refused.value.status == 400


def test_a_bomb_of_commands_never_defined_is_refused_within_the_bound() -> None:
    """A fuzzed variant of the macro bomb whose innermost macro is never defined: no text,
    so the text cap counted only the expansions (100 characters each) and the reader took
    5.4 CPU s, over the corpus's bound of 5, to refuse it; each command in an expanded body
    counts too now (writer/latex_macros.py ``COMMAND_COST``)."""
    import time

    started = time.process_time()
    with pytest.raises(WriterFileError, match="over 20,971,520 characters"):
        targets.latex(bomb_of_unknown_commands())
    assert time.process_time() - started < 5.0


def test_a_zotero_field_whose_uri_opens_an_ipv6_host_it_never_closes_is_read() -> None:
    from tests.support import docx_fixtures as fx

    item = {"key": "ABCD1234", "data": fx.csl_item("alvarez2019", "Nocturnal heat", [("Alvarez", "M.")], 2019)}
    code = fx.zotero_code([item], "(Alvarez, 2019)").replace("http://zotero.org/", "http://[zotero.org/")
    body = fx.paragraph(fx.run("Dense centres keep their heat "), fx.field(code, "(Alvarez, 2019)"),
                        fx.run("."))
    written = formats.read_thesis(fx.docx(body))
    assert [c.keys for c in written.citations] == [("alvarez2019",)]  # its id, not its URI's


def test_a_library_whose_brackets_never_close_is_read_in_bounded_time() -> None:
    """Before the fix the child below was still reading when the 60 s ran out."""
    import subprocess
    import sys

    code = ("import sys, time; from citerun.pipeline.writer import formats; "
            "t = time.process_time(); formats.read_library({'refs.bib': sys.stdin.buffer.read()}); "
            "print(round(time.process_time() - t, 3))")
    done = subprocess.run([sys.executable, "-c", code], input=unclosed_optional_arguments(),
                          capture_output=True, timeout=60, check=True)
    assert float(done.stdout) < 5.0, done.stdout  # the parse child's bound for one input


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_each_finding_is_in_the_corpus_and_replays_clean(name: str) -> None:
    target, make = FINDINGS[name]
    path = seeds.CORPUS / target / f"finding-{name}"
    assert path.read_bytes() == make(), "python -m tests.unit.test_fuzz_findings"
    for target in targets.TARGETS:
        targets.run(target, path.read_bytes())


if __name__ == "__main__":  # writes the findings into the corpus
    for name, (target, make) in FINDINGS.items():
        (seeds.CORPUS / target / f"finding-{name}").write_bytes(make())
