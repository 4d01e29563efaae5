"""A Word thesis (.docx) with the citation fields of its reference manager.

A reference manager writes each citation into the document as a Word field: the field
code holds what the citation names (items, locators), the field result what the page
shows ("(Smith, 2020, p. 45)"). Reading the code instead of the printed marker gives the
item, its metadata and the locator exactly. The fields read:

* Zotero: ``ADDIN ZOTERO_ITEM CSL_CITATION {json}``; Mendeley Desktop:
  ``ADDIN CSL_CITATION {json}``; Mendeley Cite: a content control tagged
  ``MENDELEY_CITATION_v3_<base64 json>``. The JSON's ``citationItems`` carry CSL item
  data (:mod:`.csl`), ``locator``, ``label`` and ``prefix``.
* Citavi: ``ADDIN CitaviPlaceholder{<base64 json>}``, a Json.NET ``WordPlaceholder``
  (``$id``/``$ref`` resolved) whose ``Entries`` hold the ``Reference`` (``Id``,
  ``Title``, ``Authors`` with ``LastName``, ``Year``, ``Doi``) and ``PageRange``.
  Citavi does not document this format; what is read is what Citavi's own macros and
  independent readers of Citavi documents rely on.
* EndNote: ``ADDIN EN.CITE <EndNote><Cite>...</Cite></EndNote>`` with the XML in the
  code, or base64 in the ``w:fldData`` of the field or of its nested
  ``ADDIN EN.CITE.DATA`` field.

Every XML part, and the XML inside an EndNote field, is parsed by defusedxml with DTDs
refused (no entity expansion, no external entity) and nesting deeper than ``max_depth``
refused while parsing; a field code over ``max_instruction`` characters, more than
``max_fields`` fields or fields nested deeper than ``max_open_fields`` refuse the document
(:class:`~.limits.DocxLimits`, settings). The .docx is opened by
:func:`.archive.read_bundle`. A field that cannot be read becomes a :class:`~.model.Skipped`.

The claim of a citation is the sentence of its paragraph it stands in, every
citation's displayed text cut out (a narrative "Smith (2020)" keeps "Smith"); a citation
in a footnote or endnote claims the body sentence where the note's reference mark
stands. Sentences are cut per paragraph, so a heading is never glued to a claim.

This module reads the package (its parts, heading styles, notes); :mod:`.docx_story`
reads a story's paragraphs and fields, :mod:`.docx_citations` turns them into citations
with their claims.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from citerun.pipeline.writer import archive
from citerun.pipeline.writer.docx_citations import _Reader
from citerun.pipeline.writer.docx_story import (
    _REL, _attr, _children, _local, _Paragraph, _Story, NoteKind,
)
from citerun.pipeline.writer.fields import parse_xml
from citerun.pipeline.writer.limits import DocxLimits
from citerun.pipeline.writer.model import WriterFileError, WrittenThesis


# --- the document ---------------------------------------------------------------------

def _targets(files: Mapping[str, bytes], part: str, limits: DocxLimits) -> dict[str, str]:
    """The parts ``part`` relates to, by the last word of the relationship type."""
    folder, name = posixpath.split(part)
    rels = files.get(posixpath.join(folder, "_rels", f"{name}.rels"))
    if rels is None:
        return {}
    found: dict[str, str] = {}
    for relation in parse_xml(rels, f"the relationships of {part or 'the package'}",
                              limits).iter(_REL):
        kind = (relation.get("Type") or "").rsplit("/", 1)[-1]
        target = relation.get("Target") or ""
        if relation.get("TargetMode") == "External" or not target:
            continue
        path = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
        found.setdefault(kind, posixpath.normpath(path))
    return found


def _heading_styles(styles: bytes | None, limits: DocxLimits) -> frozenset[str]:
    """Style ids of headings and the title, and of styles based on them."""
    if styles is None:
        return frozenset(f"Heading{n}" for n in range(1, 10)) | {"Title"}
    root = parse_xml(styles, "word/styles.xml", limits)
    based: dict[str, str] = {}
    heading: set[str] = set()
    for style in root.iter():
        if _local(style) != "style":
            continue
        style_id = _attr(style, "styleId") or ""
        name = next((_attr(n, "val") or "" for n in _children(style, "name")), "").lower()
        outline = any(_attr(level, "val") not in (None, "9")
                      for properties in _children(style, "pPr")
                      for level in _children(properties, "outlineLvl"))
        if name.startswith("heading") or name == "title" or outline or style_id.startswith(
                ("Heading", "Title")):
            heading.add(style_id)
        for parent in _children(style, "basedOn"):
            based[style_id] = _attr(parent, "val") or ""
    for style_id in list(based):
        seen, current = set(), style_id
        while current in based and current not in seen and current not in heading:
            seen.add(current)
            current = based[current]
        if current in heading:
            heading.add(style_id)
    return frozenset(heading)


def _notes(files: Mapping[str, bytes], path: str | None, kind: NoteKind,
           headings: frozenset[str], budget: list[int],
           limits: DocxLimits) -> dict[str, list[_Paragraph]]:
    if path is None or path not in files:
        return {}
    notes: dict[str, list[_Paragraph]] = {}
    for note in parse_xml(files[path], path, limits, walked=True):
        if _local(note) != kind or (_attr(note, "type") or "normal") != "normal":
            continue
        note_id = _attr(note, "id")
        if note_id is not None:
            try:
                notes[note_id] = _Story(headings, budget, limits).read(note, depth=2)
            except WriterFileError as err:
                raise WriterFileError(f"{path}: {err}") from None
    return notes


def read_docx(data: bytes, limits: archive.BundleLimits = archive.BundleLimits(),
              docx_limits: DocxLimits = DocxLimits()) -> WrittenThesis:
    """The thesis in a .docx: its citation fields, their claims, its text and the items;
    ``limits`` bound the zip, ``docx_limits`` the reading of its parts."""
    return read_docx_files(archive.read_bundle(data, limits), docx_limits)


def read_docx_files(files: Mapping[str, bytes], limits: DocxLimits = DocxLimits()) -> WrittenThesis:
    """:func:`read_docx` of a .docx already unzipped (its parts by path)."""
    main = _targets(files, "", limits).get("officeDocument", "word/document.xml")
    if main not in files:
        raise WriterFileError(f"not a Word document: no {main}")
    related = _targets(files, main, limits)
    folder = posixpath.dirname(main)
    headings = _heading_styles(
        files.get(related.get("styles", posixpath.join(folder, "styles.xml"))), limits)
    budget = [limits.max_fields]
    root = parse_xml(files[main], main, limits, walked=True)
    body = next((b for b in root if _local(b) == "body"), None)
    try:
        paragraphs = (_Story(headings, budget, limits).read(body, depth=2)
                      if body is not None else [])
    except WriterFileError as err:
        raise WriterFileError(f"{main}: {err}") from None
    notes: dict[NoteKind, dict[str, list[_Paragraph]]] = {
        "footnote": _notes(files, related.get("footnotes", posixpath.join(folder, "footnotes.xml")),
                           "footnote", headings, budget, limits),
        "endnote": _notes(files, related.get("endnotes", posixpath.join(folder, "endnotes.xml")),
                          "endnote", headings, budget, limits),
    }
    return _Reader(paragraphs, notes, limits).thesis()
