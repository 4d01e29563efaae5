"""A Word thesis's paragraphs and fields into its citations: each field's claim (the
sentence it stands in, every citation's displayed text cut out; a note's citation claims
the body sentence of its mark), the library items, and citations typed by hand beside
the fields listed as not taken (:data:`TYPED_REASON`)."""

from __future__ import annotations

import bisect
import dataclasses
import re

from citerun.pipeline import pdf
from citerun.pipeline.citations import claims, markers, references
from citerun.pipeline.writer import fields
from citerun.pipeline.writer.docx_story import _Hit, _Paragraph, NoteKind
from citerun.pipeline.writer.limits import DocxLimits
from citerun.pipeline.writer.model import (
    LibraryItem,
    Skipped,
    WriterFileError,
    WrittenCitation,
    WrittenThesis,
)


# A name's own full stop and the sentence's ("et al.."), never an ellipsis.
_DOUBLED_STOP = re.compile(r"(?<=[^\W\d_])\.\s*\.(?![.\w])")
_NARRATIVE = re.compile(r"^(?P<lead>[^()\[\]]*?[^\W\d_][^()\[\]]*?)\s*(?P<paren>[(\[][^()\[\]]*[)\]])\s*$")


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
        # "as outlined by Carrozzino et al. (2021)." cut to its names: one full stop
        return _DOUBLED_STOP.sub(".", claims.claim_text(self.text, start, end, []))



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
                 notes: dict[NoteKind, dict[str, list[_Paragraph]]], limits: DocxLimits) -> None:
        self.paragraphs = paragraphs
        self.notes = notes
        self.limits = limits
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
                cited = fields.citation_of(program, hit.instruction, hit.data, self.limits)
                self.parsed[id(hit)] = (hit, cited, shown)
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
