"""A Word story (the body, a footnote, an endnote) read into paragraphs: their text,
heading marks, note references and the citation fields in them (complex and simple
fields, Mendeley's content controls, EndNote's field data), with the limits that refuse
a document (:class:`~.limits.DocxLimits`: ``max_depth``, ``max_instruction``,
``max_fields``, ``max_open_fields``)."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Literal

from citerun.pipeline.writer import fields
from citerun.pipeline.writer.limits import DocxLimits
from citerun.pipeline.writer.model import WriterFileError


_NAMESPACES = ("http://schemas.openxmlformats.org/wordprocessingml/2006/main",
               "http://purl.oclc.org/ooxml/wordprocessingml/main")
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_FALLBACK = f"{_MC}Fallback"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
# What holds no text of the page, or a deleted or duplicated copy of it.
_SKIP = frozenset({"pPr", "rPr", "sdtPr", "sectPr", "del", "moveFrom", "delText",
                   "delInstrText", "tblPr", "tcPr", "trPr", "tblGrid", "footnotePr",
                   "endnotePr", "commentRangeStart", "commentRangeEnd"})

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

    def __init__(self, headings: frozenset[str], budget: list[int], limits: DocxLimits) -> None:
        self.headings = headings
        self.budget = budget  # fields left for the whole document, shared by its stories
        self.limits = limits
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
            if depth > self.limits.max_depth:
                raise WriterFileError(f"elements nested deeper than {self.limits.max_depth}")
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
        if field.size > self.limits.max_instruction:
            raise WriterFileError(
                f"a field code of over {self.limits.max_instruction} characters")
        field.instruction.append(text)

    def _fld_char(self, element: ET.Element) -> None:
        kind = _attr(element, "fldCharType")
        if kind == "begin":
            field = self._begin(None)
            for data in _children(element, "fldData"):
                field.data.append(data.text or "")
                field.size += len(data.text or "")
                if field.size > self.limits.max_instruction:
                    raise WriterFileError(
                        f"a field's data of over {self.limits.max_instruction} characters")
        elif kind == "separate":
            self._separate()
        elif kind == "end" and self.fields and self.fields[-1].element is None:
            self._end()

    def _begin(self, element: ET.Element | None, code: str | None = None) -> _Field:
        if len(self.fields) >= self.limits.max_open_fields:
            raise WriterFileError(f"fields nested deeper than {self.limits.max_open_fields}")
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise WriterFileError(f"more than {self.limits.max_fields} fields")
        instruction = code if code is not None else (
            _attr(element, "instr") or "" if element is not None else "")
        field = _Field(instruction=[instruction], hidden=self.coding > 0, element=element)
        if len(instruction) > self.limits.max_instruction:
            raise WriterFileError(
                f"a field code of over {self.limits.max_instruction} characters")
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
