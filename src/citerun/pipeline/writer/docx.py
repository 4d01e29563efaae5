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

import base64
import binascii
import bisect
import dataclasses
import io
import json
import posixpath
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import defusedxml  # type: ignore[import-untyped]
import defusedxml.ElementTree as SafeET  # type: ignore[import-untyped]

from citerun.pipeline import pdf
from citerun.pipeline.citations import claims
from citerun.pipeline.writer import archive, csl
from citerun.pipeline.writer.model import (
    LibraryItem,
    Skipped,
    WriterFileError,
    WrittenCitation,
    WrittenThesis,
)

#: Elements nested deeper than this refuse the part: Word's deepest real nesting (tables
#: in tables in text boxes) stays under a hundred.
MAX_DEPTH = 256
#: Elements of one part beyond which it is refused: the tree is held in memory (about
#: 100 bytes an element); a 300-page thesis has about a million.
MAX_ELEMENTS = 4_000_000
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
_NOT_CITATIONS = ("ADDIN ZOTERO_BIBL", "ADDIN EN.REFLIST", "ADDIN CSL_BIBLIOGRAPHY",
                  "ADDIN MENDELEY BIBLIOGRAPHY", "ADDIN CITAVI BIBLIOGRAPHY",
                  "ADDIN CITAVI.BIBLIOGRAPHY", "ADDIN EN.CITE.DATA")
_MENDELEY_TAG = "MENDELEY_CITATION_v3_"
_NARRATIVE = re.compile(r"^(?P<lead>[^()\[\]]*?[^\W\d_][^()\[\]]*?)\s*(?P<paren>[(\[][^()\[\]]*[)\]])\s*$")
_OS = re.compile(r"<os>([^<]*)</os>")

NoteKind = Literal["footnote", "endnote"]


# --- XML ------------------------------------------------------------------------------

def parse_xml(data: bytes, what: str, *, walked: bool = False) -> ET.Element:
    """The root of ``data``, parsed without DTDs; refused past :data:`MAX_ELEMENTS`
    (counted before parsing: every element opens with ``<``) or :data:`MAX_DEPTH`.

    A ``walked`` part (a story :class:`_Story` reads) has its depth checked by that
    walk, which visits every element anyway.
    """
    if data.count(b"<") > 2 * MAX_ELEMENTS:
        raise WriterFileError(f"{what}: more than {MAX_ELEMENTS} elements")
    try:
        root = SafeET.fromstring(data, forbid_dtd=True)
    except defusedxml.DefusedXmlException as err:
        raise WriterFileError(f"{what}: refused ({type(err).__name__}: DTDs and entities "
                              "are not read)") from None
    except ET.ParseError as err:
        raise WriterFileError(f"{what}: not well-formed XML ({err})") from None
    if not isinstance(root, ET.Element):
        raise WriterFileError(f"{what}: empty")
    if walked:
        return root
    stack = [(root, 1)]
    elements = 0
    while stack:
        element, depth = stack.pop()
        elements += 1
        if depth > MAX_DEPTH:
            raise WriterFileError(f"{what}: elements nested deeper than {MAX_DEPTH}")
        stack.extend((child, depth + 1) for child in element)
    if elements > MAX_ELEMENTS:
        raise WriterFileError(f"{what}: more than {MAX_ELEMENTS} elements")
    return root


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
                if value.startswith(_MENDELEY_TAG):
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


# --- what one field cites -------------------------------------------------------------

class _Unreadable(Exception):
    """A citation field whose code cannot be read; the reason becomes a Skipped."""


@dataclasses.dataclass(frozen=True)
class _Cited:
    key: str
    item: LibraryItem | None
    locator: str | None
    prefix: str | None


@dataclasses.dataclass(frozen=True)
class _Citation:
    program: str
    cited: tuple[_Cited, ...]
    formatted: str | None  # the citation as the program formatted it, if it says


def _program(instruction: str) -> str | None:
    """Which reference manager's citation a field code is, None for any other field."""
    code = " ".join(instruction.split()[:2]).upper()
    head = instruction.lstrip()
    if head.startswith(_MENDELEY_TAG):
        return "Mendeley"
    if head.upper().startswith("ADDIN CITAVIPLACEHOLDER"):
        return "Citavi"
    if any(code.startswith(other) for other in _NOT_CITATIONS):
        return None
    if code.startswith("ADDIN ZOTERO_ITEM"):
        return "Zotero"
    if code.startswith("ADDIN CSL_CITATION") or code.startswith("CSL_CITATION"):
        return "Mendeley"
    if code.startswith("ADDIN EN.CITE"):
        return "EndNote"
    return None


def _citation(program: str, hit: _Hit) -> _Citation:
    if program in ("Zotero", "Mendeley"):
        return _csl_citation(program, hit.instruction)
    if program == "Citavi":
        return _citavi_citation(hit.instruction)
    return _endnote_citation(hit)


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise _Unreadable(f"{what} is not valid JSON ({str(err)[:120]})") from None


def _base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _Unreadable(f"{what} is not valid base64") from None


def _clean_locator(raw: object) -> str | None:
    """A locator as the PDF rules write it: "45–47" -> "45-47", "45f." -> "45 f."."""
    text = csl._text(raw)
    if not text:
        return None
    text = re.sub(r"\s*[-–—]\s*", "-", text)
    return re.sub(r"\s*(ff?\.)$", r" \1", text)


def _stable_key(cited: Mapping[str, Any]) -> str | None:
    """The item's URI's last part (Zotero's item key, Mendeley's uuid), else its id."""
    uris = cited.get("uris", cited.get("uri"))
    if isinstance(uris, list) and uris and isinstance(uris[0], str):
        parsed = urllib.parse.urlsplit(uris[0].strip())
        last = parsed.path.rstrip("/").rsplit("/", 1)[-1] if parsed.path.strip("/") else ""
        uuid = urllib.parse.parse_qs(parsed.query).get("uuid")
        if uuid and uuid[0].strip():
            return uuid[0].strip()
        if last and not (parsed.query and last == "documents"):
            return last
    for value in (cited.get("id"), (cited.get("itemData") or {}).get("id")
                  if isinstance(cited.get("itemData"), Mapping) else None):
        text = csl._text(value)
        if text:
            return text
    return None


def _csl_citation(program: str, instruction: str) -> _Citation:
    """Zotero's and Mendeley's CSL citation: the JSON object after the field's name."""
    head = instruction.lstrip()
    if head.startswith(_MENDELEY_TAG):
        raw = _base64(head[len(_MENDELEY_TAG):], "the Mendeley Cite tag")
        data = _json(raw.decode("utf-8", errors="replace"), "the Mendeley Cite citation")
    else:
        start = instruction.find("{")
        if start < 0:
            raise _Unreadable(f"the {program} field holds no citation data")
        try:
            data, _ = json.JSONDecoder().raw_decode(instruction, start)
        except (ValueError, RecursionError) as err:
            raise _Unreadable(f"the {program} field's data is not valid JSON "
                              f"({str(err)[:120]})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("citationItems"), list):
        raise _Unreadable(f"the {program} field's data has no citationItems")
    cited: list[_Cited] = []
    for entry in data["citationItems"]:
        if not isinstance(entry, Mapping):
            continue
        key = _stable_key(entry)
        if not key:
            continue
        item_data = entry.get("itemData")
        item = (csl.csl_item(item_data, key=key, origin="field")
                if isinstance(item_data, Mapping) else None)
        label = csl._text(entry.get("label")) or "page"
        locator = _clean_locator(entry.get("locator"))
        if locator and label != "page":
            locator = f"{label} {locator}"
        cited.append(_Cited(key, item, locator, csl._text(entry.get("prefix"))))
    if not cited:
        raise _Unreadable(f"the {program} field names no item")
    formatted = None
    for holder in ("properties", "mendeley"):
        block = data.get(holder)
        if isinstance(block, Mapping):
            formatted = formatted or csl._text(block.get("plainCitation")) or csl._text(
                block.get("formattedCitation"))
    return _Citation(program, tuple(cited), formatted)


# Citavi's placeholder is Json.NET with preserved references: an object seen before is
# written {"$ref": "7"}, pointing at the object that carries "$id": "7".
_MAX_CITAVI_OBJECTS = 200_000


def _citavi_ids(data: object) -> dict[str, Mapping[str, Any]]:
    ids: dict[str, Mapping[str, Any]] = {}
    stack = [data]
    seen = 0
    while stack:
        value = stack.pop()
        seen += 1
        if seen > _MAX_CITAVI_OBJECTS:
            raise _Unreadable("the Citavi placeholder holds too many objects")
        if isinstance(value, Mapping):
            if isinstance(value.get("$id"), str):
                ids[value["$id"]] = value
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return ids


def _deref(value: object, ids: Mapping[str, Mapping[str, Any]]) -> object:
    for _ in range(8):
        if isinstance(value, Mapping) and isinstance(value.get("$ref"), str):
            value = ids.get(value["$ref"])
        else:
            break
    return value


def _citavi_page(page_range: object, ids: Mapping[str, Mapping[str, Any]]) -> str | None:
    """A Citavi ``PageRange``: its ``OriginalString``, or start and end pages."""
    page_range = _deref(page_range, ids)
    if isinstance(page_range, str):
        found = _OS.findall(page_range)
        return _clean_locator(found[-1] if found else page_range)
    if not isinstance(page_range, Mapping):
        return None
    whole = _clean_locator(page_range.get("OriginalString"))
    if whole:
        return whole
    ends = []
    for side in ("StartPage", "EndPage"):
        page = _deref(page_range.get(side), ids)
        text = _clean_locator(page.get("OriginalString")) if isinstance(page, Mapping) else None
        if text and text not in ends:
            ends.append(text)
    return "-".join(ends) or None


def _citavi_names(reference: Mapping[str, Any], ids: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
    for role in ("Authors", "Editors", "Organizations"):
        people = _deref(reference.get(role), ids)
        if not isinstance(people, list):
            continue
        names = []
        for person in people:
            person = _deref(person, ids)
            if isinstance(person, Mapping):
                name = csl._text(person.get("LastName")) or csl._text(person.get("Name"))
                if name:
                    names.append(name)
        if names:
            return tuple(names)
    return ()


def _citavi_citation(instruction: str) -> _Citation:
    """Citavi's ``ADDIN CitaviPlaceholder{base64}``: a WordPlaceholder's ``Entries``."""
    head = instruction.lstrip()
    payload = head[len("ADDIN CitaviPlaceholder"):].strip()
    if payload.startswith("{") and payload.endswith("}"):
        payload = payload[1:-1]
    raw = _base64(payload, "the Citavi placeholder")
    data = _json(raw.decode("utf-8-sig", errors="replace"), "the Citavi placeholder")
    ids = _citavi_ids(data)
    entries = _deref(data.get("Entries"), ids) if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise _Unreadable("the Citavi placeholder has no Entries")
    cited: list[_Cited] = []
    for entry in entries:
        entry = _deref(entry, ids)
        if not isinstance(entry, Mapping):
            continue
        reference = _deref(entry.get("Reference"), ids)
        reference = reference if isinstance(reference, Mapping) else None
        key = csl._text(reference.get("Id")) if reference else None
        key = key or csl._text(entry.get("ReferenceId"))
        if not key:
            continue
        item = None
        if reference is not None:
            title = csl._text(reference.get("Title"))
            subtitle = csl._text(reference.get("Subtitle"))
            year = (csl._year_in(csl._text(reference.get("YearResolved")))
                    or csl._year_in(csl._text(reference.get("Year")))
                    or csl._year_in(csl._text(reference.get("Date"))))
            item = LibraryItem(
                key=key, title=f"{title}: {subtitle}" if title and subtitle else title,
                authors=_citavi_names(reference, ids), year=year,
                doi=csl._doi(reference.get("Doi")),
                kind=csl._text(reference.get("ReferenceType")), origin="field")
        cited.append(_Cited(key, item, _citavi_page(entry.get("PageRange"), ids),
                            csl._text(entry.get("Prefix"))))
    if not cited:
        raise _Unreadable("the Citavi placeholder names no reference")
    formatted = csl._text(data.get("Text")) if isinstance(data, Mapping) else None
    return _Citation("Citavi", tuple(cited), formatted)


def _itertext(element: ET.Element | None) -> str | None:
    return " ".join("".join(element.itertext()).split()) or None if element is not None else None


def _find(element: ET.Element, path: str) -> ET.Element | None:
    """A descendant by a path of local names, ignoring case ("titles/title")."""
    current: ET.Element | None = element
    for step in path.split("/"):
        if current is None:
            return None
        current = next((c for c in current if isinstance(c.tag, str)
                        and c.tag.lower() == step.lower()), None)
    return current


def _endnote_citation(hit: _Hit) -> _Citation:
    """EndNote's ``<EndNote><Cite>`` XML, from the field's data or its code."""
    payload = hit.instruction.lstrip()[len("ADDIN EN.CITE"):].strip()
    for data in hit.data:
        if "<EndNote" in payload:
            break
        payload = _base64(data, "the EndNote field data").decode("utf-8", errors="replace")
    if "<EndNote" not in payload:
        raise _Unreadable("the EndNote field holds no <EndNote> record")
    payload = payload[payload.index("<"):]  # a prolog or DTD before it is the parser's to refuse
    try:
        root = parse_xml(payload.encode("utf-8"), "the EndNote field")
    except WriterFileError as err:
        raise _Unreadable(str(err)) from None
    cited: list[_Cited] = []
    for cite in (c for c in root if isinstance(c.tag, str) and c.tag.lower() == "cite"):
        record = _find(cite, "record")
        key = _itertext(_find(cite, "RecNum")) or (
            _itertext(_find(record, "rec-number")) if record is not None else None)
        if not key:
            continue
        title = authors = year = doi = kind = None
        if record is not None:
            title = _itertext(_find(record, "titles/title"))
            people = _find(record, "contributors/authors")
            names = [_itertext(a) or "" for a in (people if people is not None else [])]
            authors = tuple(n.split(",", 1)[0].strip() for n in names if n.split(",", 1)[0].strip())
            year = csl._year_in(_itertext(_find(record, "dates/year")))
            doi = csl._doi(_itertext(_find(record, "electronic-resource-num")))
            ref_type = _find(record, "ref-type")
            kind = ref_type.get("name") if ref_type is not None else None
        if not authors:
            author = _itertext(_find(cite, "Author"))
            authors = (author,) if author else ()
        year = year or csl._year_in(_itertext(_find(cite, "Year")))
        item = LibraryItem(key=key, title=title, authors=authors, year=year, doi=doi,
                           kind=kind, origin="field")
        cited.append(_Cited(key, item, _clean_locator(_itertext(_find(cite, "Pages"))),
                            _itertext(_find(cite, "Prefix"))))
    if not cited:
        raise _Unreadable("the EndNote field names no record")
    formatted = None
    first = next((c for c in root if isinstance(c.tag, str) and c.tag.lower() == "cite"), None)
    if first is not None:
        formatted = _itertext(_find(first, "DisplayText"))
    return _Citation("EndNote", tuple(cited), formatted)


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
        self.parsed: dict[int, tuple[_Hit, _Citation, str]] = {}

    def _read_hits(self, where: str, paragraph: _Paragraph) -> list[_Hit]:
        """The paragraph's citation fields (unreadable ones skipped), parsed once."""
        citing = []
        text = paragraph.text
        for hit in paragraph.hits:
            program = _program(hit.instruction)
            if program is None:
                continue
            shown = " ".join(text[hit.start:hit.end].split())
            try:
                self.parsed[id(hit)] = (hit, _citation(program, hit), shown)
            except (_Unreadable, WriterFileError) as err:
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
        for paragraph in self.paragraphs:
            where = f"paragraph {number_of.get(id(paragraph), 0)}"
            citing = self._read_hits(where, paragraph)
            body_claims[id(paragraph)] = _Claims(paragraph, citing)
            for hit in citing:
                claim = body_claims[id(paragraph)].claim_at(hit.start)
                self._add(hit, claim, where, paragraph, in_footnote=False)
        note_texts: list[str] = []
        for kind in ("footnote", "endnote"):
            ordered = sorted(self.notes[kind].items(),
                             key=lambda n: marks[(kind, n[0])][2] if (kind, n[0]) in marks
                             else counters[kind] + 1)
            for note, note_paragraphs in ordered:
                mark = marks.get((kind, note))
                where = f"{kind} {mark[2]}" if mark else f"{kind} id {note} (not referenced)"
                text = " ".join(" ".join(p.text.split()) for p in note_paragraphs).strip()
                if text:
                    note_texts.append(f"{mark[2] if mark else note} {text}")
                for paragraph in note_paragraphs:
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
        body = "\n\n".join(p.text.strip() for p in numbered)
        text = "\n\n".join(t for t in (body, *note_texts) if t)
        return WrittenThesis(format="docx", pages=((1, text),), citations=tuple(self.citations),
                             library=tuple(self.library.values()), skipped=tuple(self.skipped))

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
        groups: list[list[_Cited]] = []
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
