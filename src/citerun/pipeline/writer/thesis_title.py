"""A thesis's own title from the writer's files (issue 47), which the report and the
service's pages call the run by: a LaTeX thesis's ``\\title`` (in its main file, or a
file its preamble inputs, as :mod:`.latex_main` follows them), a Word document's title
in its core properties (``docProps/core.xml``, what Word's File > Info > Properties
shows). A PDF thesis's title is its own (:func:`citerun.pipeline.pdf.identity.identify`).

Only what is cheap and bounded is read: the heads of the .tex files the main file's
search reads anyway, a core properties part of at most ``DocxLimits.max_core_bytes``. A title
that is not there, or cannot be read, is ``None``: the run is then called by its file.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Mapping

from citerun.pipeline.writer import archive, latex_main
from citerun.pipeline.writer.bib import latex_text
from citerun.pipeline.writer.fields import parse_xml
from citerun.pipeline.writer.limits import DocxLimits, WriterLimits
from citerun.pipeline.writer.model import WriterFileError

__all__ = ["docx_title", "latex_title", "of_bundle"]

#: A title longer than ``WriterLimits.max_title_chars`` is cut (with "…").
_MOST = WriterLimits().max_title_chars
#: Names Word and its templates leave in an untitled document's properties.
_PLACEHOLDERS = re.compile(r"^(?:title|titel|document\s*\d*|dokument\s*\d*|untitled|"
                           r"microsoft word\b.*|\W*)$", re.IGNORECASE)
_TITLE = re.compile(r"\\title\s*(?:\[[^\]]*\]\s*)?\{")
_DROP = re.compile(r"\\(?:thanks|footnote|footnotetext)\s*\{")
_BREAK = re.compile(r"\\\\\*?(?:\[[^\]]*\])?|\\(?:newline|linebreak|par)\b")


def of_bundle(files: Mapping[str, bytes], main: str | None = None,
              limits: WriterLimits = WriterLimits()) -> str | None:
    """The title of the thesis in a writer's bundle (a .docx unzipped, a bundle holding
    one .docx, or LaTeX files whose main one is ``main`` or found), or ``None``."""
    most = limits.max_title_chars
    if "docProps/core.xml" in files and "word/document.xml" in files:
        return docx_title(files["docProps/core.xml"], limits.docx, most)
    documents = [p for p in files if p.lower().endswith(".docx")]
    if len(documents) == 1:
        return _docx_member_title(files[documents[0]], limits.docx, most)
    tex = {p: b for p, b in files.items() if latex_main.is_tex(p)}
    if not tex:
        return None

    def head(path: str) -> str:
        return tex[path][:latex_main.HEAD_BYTES].decode("utf-8", errors="replace")

    try:
        path = latex_main.named(main, tex) if main else latex_main.find_main(tex, head)
    except WriterFileError:
        return None
    return latex_title(path, head, list(tex), most) if path else None


def latex_title(main: str, head: Callable[[str], str], paths: list[str],
                most: int = _MOST) -> str | None:
    """The ``\\title{..}`` of ``main`` (its text read through ``head``), else of the files
    it inputs, depth first, as deep as :mod:`.latex_main` follows a preamble."""
    seen = {main}

    def search(path: str, depth: int) -> str | None:
        text = latex_main.COMMENT.sub("", head(path))
        found = _TITLE.search(text)
        if found is not None:
            return _clean(_group(text, found.end()), most)
        if depth >= latex_main.PREAMBLE_DEPTH:
            return None
        for loaded in latex_main.INPUT.finditer(text):
            target = latex_main.resolve(loaded.group(1) or loaded.group(2), path, paths)
            if target is not None and target not in seen and latex_main.is_tex(target):
                seen.add(target)
                title = search(target, depth + 1)
                if title is not None:
                    return title
        return None

    return search(main, 0)


def _group(text: str, start: int) -> str:
    """The text of the brace group opened just before ``start`` (to its closing brace,
    or the text's end)."""
    depth, i = 1, start
    while i < len(text) and depth:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        i += 1
    return text[start:i - 1 if depth == 0 else i]


def _clean(value: str, most: int) -> str | None:
    """A ``\\title``'s LaTeX as one line of plain text: notes (``\\thanks``) dropped, line
    breaks a space."""
    while (note := _DROP.search(value)) is not None:
        inner = _group(value, note.end())
        value = value[:note.start()] + value[note.end() + len(inner) + 1:]
    value = _BREAK.sub(" ", value)
    return _bounded(latex_text(value, most * 4), most)


def _bounded(text: str | None, most: int) -> str | None:
    text = " ".join((text or "").split())
    if not text or _PLACEHOLDERS.match(text):
        return None
    return text if len(text) <= most else text[:most - 1].rstrip() + "…"


def docx_title(core: bytes, limits: DocxLimits = DocxLimits(), most: int = _MOST) -> str | None:
    """The title a Word document's core properties give (``dc:title``), or ``None``."""
    if len(core) > limits.max_core_bytes:
        return None
    try:
        root = parse_xml(core, "docProps/core.xml", limits)
    except WriterFileError:
        return None
    for element in root:
        if element.tag.rpartition("}")[2] == "title":
            return _bounded("".join(element.itertext()), most)
    return None


def _docx_member_title(data: bytes, limits: DocxLimits, most: int) -> str | None:
    """:func:`docx_title` of a .docx given as bytes: only its core properties inflated."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as docx:
            info = docx.getinfo("docProps/core.xml")
            if info.file_size > limits.max_core_bytes:
                return None
            with docx.open(info) as part:
                core = part.read(limits.max_core_bytes + 1)
    except KeyError:
        return None
    except archive.UNREADABLE:
        return None
    return docx_title(core, limits, most)

