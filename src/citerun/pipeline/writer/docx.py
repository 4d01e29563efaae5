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
refused (no entity expansion, no external entity) and nesting deeper than
:data:`MAX_DEPTH` refused while parsing; a field code over :data:`MAX_INSTRUCTION`
characters, more than :data:`MAX_FIELDS` fields or fields nested deeper than
:data:`MAX_OPEN_FIELDS` refuse the document. The .docx is opened by
:func:`.archive.read_bundle`. A field that cannot be read becomes a :class:`~.model.Skipped`.

The claim of a citation is the sentence of its paragraph it stands in, every
citation's displayed text cut out (a narrative "Smith (2020)" keeps "Smith"); a citation
in a footnote or endnote claims the body sentence where the note's reference mark
stands. Sentences are cut per paragraph, so a heading is never glued to a claim.
"""

from __future__ import annotations

import bisect
import dataclasses
import io
import posixpath
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from typing import Any, Literal


from citerun.pipeline import pdf
from citerun.pipeline.citations import claims, markers, references
from citerun.pipeline.writer import archive, fields
from citerun.pipeline.writer.fields import MAX_DEPTH, MAX_ELEMENTS, parse_xml

__all__ = ["MAX_DEPTH", "MAX_ELEMENTS", "MAX_FIELDS", "MAX_INSTRUCTION", "MAX_OPEN_FIELDS",
           "parse_xml", "read_docx"]
from citerun.pipeline.writer.model import (
    LibraryItem,
    Skipped,
    WriterFileError,
    WrittenCitation,
    WrittenThesis,
)

#: Characters of one field code beyond which the document is refused: a Zotero field
#: citing twenty items with their abstracts is about 200 kB.
MAX_INSTRUCTION = 4 * 1024 * 1024
#: Fields of one document (citations, page numbers, cross-references) beyond which it
#: is refused.
MAX_FIELDS = 200_000
#: Fields open inside one another beyond which the document is refused (Word nests a few).
MAX_OPEN_FIELDS = 64

_NAMESPACES = ("http://schemas.openxmlformats.org/wordprocessingml/2006/main",
               "http://purl.oclc.org/ooxml/wordprocessingml/main")
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_FALLBACK = f"{_MC}Fallback"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
# What holds no text of the page, or a deleted or duplicated copy of it.
_SKIP = frozenset({"pPr", "rPr", "sdtPr", "sectPr", "del", "moveFrom", "delText",
                   "delInstrText", "tblPr", "tcPr", "trPr", "tblGrid", "footnotePr",
                   "endnotePr", "commentRangeStart", "commentRangeEnd"})
_NARRATIVE = re.compile(r"^(?P<lead>[^()\[\]]*?[^\W\d_][^()\[\]]*?)\s*(?P<paren>[(\[][^()\[\]]*[)\]])\s*$")

NoteKind = Literal["footnote", "endnote"]


# --- XML ------------------------------------------------------------------------------

_LOCAL_NAMES: dict[str, str] = {}


def _local(element: ET.Element) -> str:
    """The WordprocessingML local name ("p", "r", "t"), or the full tag for any other."""
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    name = _LOCAL_NAMES.get(tag)
    if name is None:
        name = tag
        if tag.startswith("{"):
            namespace, _, local = tag[1:].partition("}")
            name = local if namespace in _NAMESPACES else tag
        if len(_LOCAL_NAMES) < 4096:  # a document's tags are few; a hostile one's are not kept
            _LOCAL_NAMES[tag] = name
    return name


def _attr(element: ET.Element, name: str) -> str | None:
    for namespace in _NAMESPACES:
        value = element.get(f"{{{namespace}}}{name}")
        if value is not None:
            return value
    return None


def _children(element: ET.Element, name: str) -> Iterator[ET.Element]:
    return (child for child in element if _local(child) == name)


# --- reading the stories --------------------------------------------------------------

@dataclasses.dataclass
class _Paragraph:
    parts: list[str] = dataclasses.field(default_factory=list)
    length: int = 0
    heading: bool = False
    hits: list[_Hit] = dataclasses.field(default_factory=list)
    notes: list[tuple[NoteKind, str, int]] = dataclasses.field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclasses.dataclass
class _Hit:
    """A field that ended: its code, field data (its own first), and where its result stands."""

    instruction: str
    data: tuple[str, ...]
    start: int
    end: int


@dataclasses.dataclass
class _Field:
    instruction: list[str]
    size: int = 0
    coding: bool = True  # between begin and separate: runs are its code, not text
    paragraph: _Paragraph | None = None
    start: int = 0
    data: list[str] = dataclasses.field(default_factory=list)
    hidden: bool = False  # begun inside another field's code (EN.CITE.DATA)
    element: ET.Element | None = None  # the fldSimple or sdt that closes it


class _Story:
    """Walks one story (the body, or one note) into paragraphs with their fields."""

    def __init__(self, headings: frozenset[str], budget: list[int]) -> None:
        self.headings = headings
        self.budget = budget  # fields left for the whole document, shared by its stories
        self.paragraphs: list[_Paragraph] = []
        self.open: list[_Paragraph] = []
        self.fields: list[_Field] = []
        self.coding = 0  # open fields in their code part

    def read(self, root: ET.Element, depth: int = 1) -> list[_Paragraph]:
        """The story's paragraphs; ``depth`` is the root's depth in its part."""
        stack: list[tuple[ET.Element, int]] = [(root, depth)]
        while stack:
            element, depth = stack.pop()
            if depth < 0:  # leaving it
                self._leave(element)
                continue
            if depth > MAX_DEPTH:
                raise WriterFileError(f"elements nested deeper than {MAX_DEPTH}")
            name = _local(element)
            if name in _SKIP or name == _FALLBACK:
                continue
            if self._enter(element, name):
                stack.append((element, -1))
                stack.extend((child, depth + 1) for child in reversed(element))
        return self.paragraphs

    def _enter(self, element: ET.Element, name: str) -> bool:
        """Handles an element on the way in; False when its children are not read."""
        if name == "p":
            paragraph = _Paragraph(heading=self._is_heading(element))
            self.paragraphs.append(paragraph)
            self.open.append(paragraph)
        elif name == "t":
            self._text(element.text or "")
            return False
        elif name in ("tab", "br", "cr"):
            self._text(" ")
        elif name == "noBreakHyphen":
            self._text("-")
        elif name == "instrText":
            self._instruction(element.text or "")
            return False
        elif name == "fldChar":
            self._fld_char(element)
            return False
        elif name == "fldSimple":
            self._begin(element)
            self._separate()
        elif name == "sdt":
            tag = self._sdt_tag(element)
            if tag is not None and self.open:
                self._begin(element, tag)
                self._separate()
        elif name in ("footnoteReference", "endnoteReference"):
            note = _attr(element, "id")
            if note is not None and self.open and not self.coding:
                kind: NoteKind = "footnote" if name == "footnoteReference" else "endnote"
                self.open[-1].notes.append((kind, note, self.open[-1].length))
        return True

    def _leave(self, element: ET.Element) -> None:
        name = _local(element)
        if name == "p":
            if self.open:
                self.open.pop()
        elif name in ("fldSimple", "sdt") and self.fields and self.fields[-1].element is element:
            self._end()

    def _is_heading(self, paragraph: ET.Element) -> bool:
        for properties in _children(paragraph, "pPr"):
            for style in _children(properties, "pStyle"):
                if (_attr(style, "val") or "") in self.headings:
                    return True
            for level in _children(properties, "outlineLvl"):
                if (_attr(level, "val") or "9") not in ("9", ""):
                    return True
        return False

    @staticmethod
    def _sdt_tag(sdt: ET.Element) -> str | None:
        """A Mendeley Cite content control's tag, which is its citation's code."""
        for properties in _children(sdt, "sdtPr"):
            for tag in _children(properties, "tag"):
                value = _attr(tag, "val") or ""
                if value.startswith(fields.MENDELEY_TAG):
                    return value
        return None

    def _text(self, text: str) -> None:
        if self.coding or not self.open or not text:
            return
        paragraph = self.open[-1]
        paragraph.parts.append(text)
        paragraph.length += len(text)

    def _instruction(self, text: str) -> None:
        if not self.fields or not self.fields[-1].coding:
            return
        field = self.fields[-1]
        field.size += len(text)
        if field.size > MAX_INSTRUCTION:
            raise WriterFileError(f"a field code of over {MAX_INSTRUCTION} characters")
        field.instruction.append(text)

    def _fld_char(self, element: ET.Element) -> None:
        kind = _attr(element, "fldCharType")
        if kind == "begin":
            field = self._begin(None)
            for data in _children(element, "fldData"):
                field.data.append(data.text or "")
                field.size += len(data.text or "")
                if field.size > MAX_INSTRUCTION:
                    raise WriterFileError(f"a field's data of over {MAX_INSTRUCTION} characters")
        elif kind == "separate":
            self._separate()
        elif kind == "end" and self.fields and self.fields[-1].element is None:
            self._end()

    def _begin(self, element: ET.Element | None, code: str | None = None) -> _Field:
        if len(self.fields) >= MAX_OPEN_FIELDS:
            raise WriterFileError(f"fields nested deeper than {MAX_OPEN_FIELDS}")
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise WriterFileError(f"more than {MAX_FIELDS} fields")
        instruction = code if code is not None else (
            _attr(element, "instr") or "" if element is not None else "")
        field = _Field(instruction=[instruction], hidden=self.coding > 0, element=element)
        if len(instruction) > MAX_INSTRUCTION:
            raise WriterFileError(f"a field code of over {MAX_INSTRUCTION} characters")
        self.fields.append(field)
        self.coding += 1
        return field

    def _separate(self) -> None:
        if not self.fields or not self.fields[-1].coding:
            return
        field = self.fields[-1]
        field.coding = False
        self.coding -= 1
        if self.open:
            field.paragraph, field.start = self.open[-1], self.open[-1].length

    def _end(self) -> None:
        field = self.fields.pop()
        if field.coding:
            self.coding -= 1
            if self.open:
                field.paragraph, field.start = self.open[-1], self.open[-1].length
        data = tuple(d for d in field.data if d.strip())
        if field.hidden:
            # EN.CITE.DATA inside EN.CITE's code: its data is its parent's.
            if self.fields:
                self.fields[-1].data.extend(data)
            return
        paragraph = field.paragraph
        if paragraph is None:
            return
        end = paragraph.length
        paragraph.hits.append(_Hit("".join(field.instruction), data, field.start, end))


# --- claims ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Cut:
    """What of a paragraph a citation's displayed text takes out of its claim."""

    start: int
    end: int


def _cut(text: str, hit: _Hit) -> _Cut:
    result = text[hit.start:hit.end]
    narrative = _NARRATIVE.match(result)
    if narrative and not narrative["lead"].strip().startswith(("(", "[")):
        return _Cut(hit.start + narrative.start("paren"), hit.start + narrative.end("paren"))
    return _Cut(hit.start, hit.end)


class _Claims:
    """A paragraph with its citations cut out, split into sentences once."""

    def __init__(self, paragraph: _Paragraph, citing: list[_Hit]) -> None:
        text = paragraph.text
        self.cuts = sorted((_cut(text, hit) for hit in citing), key=lambda c: c.start)
        pieces, position = [], 0
        self.starts: list[int] = []
        self.removed: list[int] = []
        gone = 0
        for cut in self.cuts:
            start = max(cut.start, position)
            if start >= cut.end:
                continue
            pieces.append(text[position:start])
            gone += cut.end - start
            self.starts.append(start)
            self.removed.append(gone)
            position = cut.end
        pieces.append(text[position:])
        self.text = "".join(pieces)
        self.spans = pdf.sentence_spans(self.text)
        self.span_starts = [s for s, _ in self.spans]

    def _clean_offset(self, offset: int) -> int:
        index = bisect.bisect_right(self.starts, offset) - 1
        if index < 0:
            return offset
        start, gone = self.starts[index], self.removed[index]
        before = self.removed[index - 1] if index else 0
        return max(start - before, offset - gone)

    def claim_at(self, offset: int) -> str:
        """The sentence at ``offset`` of the paragraph; one a citation opens is the one before."""
        if not self.spans:
            return ""
        point = self._clean_offset(offset)
        index = max(bisect.bisect_left(self.span_starts, point) - 1, 0)
        start, end = self.spans[index]
        return claims.claim_text(self.text, start, end, [])


# --- the document ---------------------------------------------------------------------

def _targets(files: Mapping[str, bytes], part: str) -> dict[str, str]:
    """The parts ``part`` relates to, by the last word of the relationship type."""
    folder, name = posixpath.split(part)
    rels = files.get(posixpath.join(folder, "_rels", f"{name}.rels"))
    if rels is None:
        return {}
    found: dict[str, str] = {}
    for relation in parse_xml(rels, f"the relationships of {part or 'the package'}").iter(_REL):
        kind = (relation.get("Type") or "").rsplit("/", 1)[-1]
        target = relation.get("Target") or ""
        if relation.get("TargetMode") == "External" or not target:
            continue
        path = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
        found.setdefault(kind, posixpath.normpath(path))
    return found


def _heading_styles(styles: bytes | None) -> frozenset[str]:
    """Style ids of headings and the title, and of styles based on them."""
    if styles is None:
        return frozenset(f"Heading{n}" for n in range(1, 10)) | {"Title"}
    root = parse_xml(styles, "word/styles.xml")
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
           headings: frozenset[str], budget: list[int]) -> dict[str, list[_Paragraph]]:
    if path is None or path not in files:
        return {}
    notes: dict[str, list[_Paragraph]] = {}
    for note in parse_xml(files[path], path, walked=True):
        if _local(note) != kind or (_attr(note, "type") or "normal") != "normal":
            continue
        note_id = _attr(note, "id")
        if note_id is not None:
            try:
                notes[note_id] = _Story(headings, budget).read(note, depth=2)
            except WriterFileError as err:
                raise WriterFileError(f"{path}: {err}") from None
    return notes


def read_docx(data: bytes, limits: archive.BundleLimits = archive.BundleLimits()) -> WrittenThesis:
    """The thesis in a .docx: its citation fields, their claims, its text and the items."""
    files = archive.read_bundle(data, limits)
    main = _targets(files, "").get("officeDocument", "word/document.xml")
    if main not in files:
        raise WriterFileError(f"not a Word document: no {main}")
    related = _targets(files, main)
    folder = posixpath.dirname(main)
    headings = _heading_styles(files.get(related.get("styles", posixpath.join(folder, "styles.xml"))))
    budget = [MAX_FIELDS]
    root = parse_xml(files[main], main, walked=True)
    body = next((b for b in root if _local(b) == "body"), None)
    try:
        paragraphs = _Story(headings, budget).read(body, depth=2) if body is not None else []
    except WriterFileError as err:
        raise WriterFileError(f"{main}: {err}") from None
    notes: dict[NoteKind, dict[str, list[_Paragraph]]] = {
        "footnote": _notes(files, related.get("footnotes", posixpath.join(folder, "footnotes.xml")),
                           "footnote", headings, budget),
        "endnote": _notes(files, related.get("endnotes", posixpath.join(folder, "endnotes.xml")),
                          "endnote", headings, budget),
    }
    return _Reader(paragraphs, notes).thesis()


#: The reason a typed citation beside the reference manager's fields is listed with.
TYPED_REASON = ("a citation typed by hand in a document whose citations are its reference "
                "manager's fields: only the fields are read; insert it as a field to have "
                "it checked")


def _typed(where: str, paragraph: _Paragraph) -> list[Skipped]:
    """The author-year citations typed in ``paragraph`` outside any field's result.

    A thesis written with Zotero, Citavi or Paperpile is read from its fields; a
    citation typed beside them ("(Meyer, 2015, S. 3)", "Meyer (2015)") is no field and
    would otherwise vanish without a word: the rules of the page find it, and it is
    listed under "Not taken as citations" with :data:`TYPED_REASON`.
    """
    text = paragraph.text
    if not text.strip() or paragraph.heading:
        return []
    masked = list(text)
    for hit in paragraph.hits:
        masked[hit.start:hit.end] = " " * (hit.end - hit.start)
    found = []
    for marker in markers.find_markers("".join(masked)):
        if any(ref.authors and ref.year for ref in marker.refs):
            found.append(Skipped(where, " ".join(marker.text.split())[:200], TYPED_REASON))
    return found


class _Reader:
    """Turns the stories' paragraphs and fields into the written thesis."""

    def __init__(self, paragraphs: list[_Paragraph],
                 notes: dict[NoteKind, dict[str, list[_Paragraph]]]) -> None:
        self.paragraphs = paragraphs
        self.notes = notes
        self.citations: list[WrittenCitation] = []
        self.skipped: list[Skipped] = []
        self.library: dict[str, LibraryItem] = {}
        # A citation field's hit (kept alive), what it cites, and its displayed text.
        self.parsed: dict[int, tuple[_Hit, fields.Citation, str]] = {}

    def _read_hits(self, where: str, paragraph: _Paragraph) -> list[_Hit]:
        """The paragraph's citation fields (unreadable ones skipped), parsed once."""
        citing = []
        text = paragraph.text
        for hit in paragraph.hits:
            program = fields.program_of(hit.instruction)
            if program is None:
                continue
            shown = " ".join(text[hit.start:hit.end].split())
            try:
                self.parsed[id(hit)] = (hit, fields.citation_of(program, hit.instruction, hit.data), shown)
            except (fields.Unreadable, WriterFileError) as err:
                self.skipped.append(Skipped(
                    where, shown or " ".join(hit.instruction.split())[:80], str(err)))
                continue
            citing.append(hit)
        return citing

    def thesis(self) -> WrittenThesis:
        numbered = [p for p in self.paragraphs if p.text.strip()]
        number_of = {id(p): n for n, p in enumerate(numbered, 1)}
        # Where each note's mark stands in the body, and the number it shows.
        marks: dict[tuple[NoteKind, str], tuple[_Paragraph, int, int]] = {}
        counters: dict[NoteKind, int] = {"footnote": 0, "endnote": 0}
        for paragraph in self.paragraphs:
            for kind, note, offset in paragraph.notes:
                if (kind, note) not in marks and note in self.notes[kind]:
                    counters[kind] += 1
                    marks[(kind, note)] = (paragraph, offset, counters[kind])
        body_claims: dict[int, _Claims] = {}
        typed: list[Skipped] = []
        in_references = False
        for paragraph in self.paragraphs:
            where = f"paragraph {number_of.get(id(paragraph), 0)}"
            in_references = in_references or references._is_heading(paragraph.text.strip())
            if not in_references:
                typed.extend(_typed(where, paragraph))
            citing = self._read_hits(where, paragraph)
            body_claims[id(paragraph)] = _Claims(paragraph, citing)
            for hit in citing:
                claim = body_claims[id(paragraph)].claim_at(hit.start)
                self._add(hit, claim, where, paragraph, in_footnote=False)
        # A note's text stands after the paragraph holding its mark (as on a printed
        # page, before the next paragraph; never after the reference list), a note
        # nothing marks at the end.
        after: dict[int, list[tuple[str, str]]] = {}
        unmarked: list[tuple[str, str]] = []
        for kind in ("footnote", "endnote"):
            ordered = sorted(self.notes[kind].items(),
                             key=lambda n: marks[(kind, n[0])][2] if (kind, n[0]) in marks
                             else counters[kind] + 1)
            for note, note_paragraphs in ordered:
                mark = marks.get((kind, note))
                where = f"{kind} {mark[2]}" if mark else f"{kind} id {note} (not referenced)"
                text = " ".join(" ".join(p.text.split()) for p in note_paragraphs).strip()
                if text:
                    block = (f"{mark[2] if mark else note} {text}", where)
                    if mark and mark[0].text.strip():
                        after.setdefault(id(mark[0]), []).append(block)
                    else:
                        unmarked.append(block)
                for paragraph in note_paragraphs:
                    typed.extend(_typed(where, paragraph))
                    citing = self._read_hits(where, paragraph)
                    own = _Claims(paragraph, citing)
                    for hit in citing:
                        if mark:
                            at, offset, _ = mark
                            claim = body_claims[id(at)].claim_at(offset)
                            self._add(hit, claim, where, at, in_footnote=True)
                        else:
                            self._add(hit, own.claim_at(hit.start), where, paragraph,
                                      in_footnote=True)
        if self.parsed:  # typed citations beside the fields: listed, never dropped
            self.skipped.extend(typed)
        texts: list[str] = []
        blocks: list[str] = []
        for number, paragraph in enumerate(numbered, 1):
            texts.append(paragraph.text.strip())
            blocks.append(f"paragraph {number}")
            for note_text, where in after.get(id(paragraph), ()):
                texts.append(note_text)
                blocks.append(where)
        for note_text, where in unmarked:
            texts.append(note_text)
            blocks.append(where)
        text = "\n\n".join(texts)
        return WrittenThesis(format="docx", pages=((1, text),), citations=tuple(self.citations),
                             library=tuple(self.library.values()), skipped=tuple(self.skipped),
                             blocks=tuple(blocks))

    def _add(self, hit: _Hit, claim: str, where: str, paragraph: _Paragraph,
             in_footnote: bool) -> None:
        _, citation, shown = self.parsed[id(hit)]
        marker = shown or citation.formatted or f"{citation.program} field"
        for cited in citation.cited:
            if cited.item is not None:
                self._keep(cited.item)
        if paragraph.heading:
            self.skipped.append(Skipped(where, marker, "a citation in a heading: no claim to check"))
            return
        if not claim:
            self.skipped.append(Skipped(where, marker, "no sentence around the citation"))
            return
        groups: list[list[fields.Cited]] = []
        for cited in citation.cited:
            if groups and (groups[-1][0].locator, groups[-1][0].prefix) == (cited.locator, cited.prefix):
                groups[-1].append(cited)
            else:
                groups.append([cited])
        for group in groups:
            self.citations.append(WrittenCitation(
                keys=tuple(dict.fromkeys(c.key for c in group)), claim=claim, marker=marker,
                where=where, locator=group[0].locator, prenote=group[0].prefix,
                in_footnote=in_footnote))

    def _keep(self, item: LibraryItem) -> None:
        """The first item of a key wins; what it lacks a later copy may give."""
        first = self.library.get(item.key)
        if first is None:
            self.library[item.key] = item
            return
        self.library[item.key] = dataclasses.replace(
            first, title=first.title or item.title, authors=first.authors or item.authors,
            year=first.year or item.year, doi=first.doi or item.doi, kind=first.kind or item.kind)
