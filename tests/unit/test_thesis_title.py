"""A writer's thesis is called by its own title (issue 47): LaTeX's ``\\title`` (in the
main file or its ``\\input`` preamble, notes and line breaks dropped), Word's title in
its core properties; none where the files give none or a placeholder. The thesis is read
as the worker reads it (:func:`formats.read_document` on the bundle's bytes)."""

from __future__ import annotations

import io
import zipfile

import pytest

from citerun.pipeline.settings import LimitSettings
from citerun.pipeline.writer import formats, thesis_title
from citerun.pipeline.writer.limits import WriterLimits
from tests.support import docx_fixtures


def _zip(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, data in files.items():
            bundle.writestr(name, data)
    return buffer.getvalue()


def _read(data: bytes) -> str | None:
    return formats.read_document(data, LimitSettings(), 50 * 1024 * 1024).title


_BODY = "\\begin{document}\n\\maketitle\nUrban heat islands raise night temperatures.\n\\end{document}\n"


def test_a_latex_thesis_is_called_by_its_title_even_in_an_input_preamble() -> None:
    preamble = ("\\documentclass[\n  a4paper,\n  12pt]{scrreprt}\n"
                "% \\title{Not this one}\n"
                "\\title[Short]{Urban Heat \\& Green Roofs:\\\\ Measurements in\n"
                "    Berlin\\thanks{Funded by {the} city.}}\n\\author{A. Student}\n")
    data = _zip({"thesis/main.tex": "\\input{preamble}\n" + _BODY,
                 "thesis/preamble.tex": preamble,
                 "thesis/chapters/intro.tex": "Text.\n"})
    assert _read(data) == "Urban Heat & Green Roofs: Measurements in Berlin"


def test_a_latex_thesis_without_a_title_and_the_main_file_named() -> None:
    data = _zip({"main.tex": "\\documentclass{article}\n" + _BODY,
                 "other.tex": "\\documentclass{article}\n\\title{Other}\n" + _BODY,
                 formats.MAIN_MEMBER: b"main.tex"})
    assert _read(data) is None


def _core(title: str) -> str:
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
            'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f"<dc:title>{title}</dc:title><dc:creator>A. Student</dc:creator>"
            "</cp:coreProperties>")


@pytest.mark.parametrize(("title", "said"), [
    ("Cooling the City: Green Roofs &amp; Street Trees", "Cooling the City: Green Roofs & Street Trees"),
    ("Dokument1", None), ("", None), ("Microsoft Word - thesis.docx", None)])
def test_a_word_thesis_is_called_by_the_title_of_its_properties(title: str, said: str | None) -> None:
    body = docx_fixtures.paragraph(docx_fixtures.run("Urban heat islands raise night temperatures."))
    data = docx_fixtures.docx(body, extra={"docProps/core.xml": _core(title).encode()})
    assert _read(data) == said
    # The same document zipped with its library: the .docx's own properties, read alone.
    assert _read(_zip({"thesis.docx": data, "library.bib": "@article{a, title={A}}\n"})) == said


def test_a_very_long_title_is_cut() -> None:
    data = _zip({"main.tex": "\\documentclass{article}\n\\title{" + "Word " * 200 + "}\n" + _BODY})
    said = _read(data)
    assert said is not None and len(said) == WriterLimits().max_title_chars and said.endswith("…")
