"""What the LaTeX scan writes into: blocks of text (paragraphs, headings, captions,
footnotes) holding cite commands as read, the streams and the stack of open frames; and
a block rendered into its text with the sentence each citation stands in."""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from citerun.pipeline.citations import quotations
from citerun.pipeline.writer.latex_tables import (
    _NAMES, _NOUN_BEFORE, _PAREN, _SPACES,
)
from citerun.pipeline.writer.model import LibraryItem


@dataclasses.dataclass
class _Cite:
    """A cite command as read, before its sentence is known."""

    keys: tuple[str, ...]
    marker: str
    where: str
    locator: str | None
    prenote: str | None
    prints: str  # _PAREN, _NAMES or _FOOT
    in_footnote: bool


class _Block:
    """A run of text that is one paragraph (or heading, caption, footnote, table row).

    It joins the document's blocks when its first piece comes, so blocks stay in the
    order their text starts (an empty paragraph before a heading is not placed first).
    """

    def __init__(self, kind: str, blocks: list[_Block]) -> None:
        self.kind = kind
        self.pieces: list[str | _Cite] = []
        self.space = True  # whether the text so far ends in a space (or is empty)
        self._blocks = blocks

    def _piece(self, piece: str | _Cite) -> None:
        if not self.pieces:
            self._blocks.append(self)
        self.pieces.append(piece)

    def add(self, text: str) -> None:
        text = _SPACES.sub(" ", text)
        if self.space:
            text = text.lstrip(" ")
        if text:
            self._piece(text)
            self.space = text.endswith(" ")

    def cite(self, cite: _Cite) -> None:
        self._piece(cite)


class _Stream:
    """Where text of one kind goes: the body, a footnote, a heading, a float."""

    def __init__(self, kind: str, blocks: list[_Block]) -> None:
        self.kind = kind
        self._blocks = blocks
        self.block = _Block(kind, blocks)

    def brk(self) -> None:
        """End the paragraph: text after this is another block."""
        if self.block.pieces:
            self.block = _Block(self.kind, self._blocks)


@dataclasses.dataclass
class _Frame:
    """An open group (``{``), environment or argument, as the scan's explicit stack."""

    kind: str  # "base", "group", "env", "raw", "footnote", "heading", "caption"
    stream: _Stream | None
    anchor: _Block | None = None  # a footnote's cites stand in this body block
    in_footnote: bool = False
    env: str | None = None
    depth: int = 0  # a raw frame's brace depth
    on_close: Callable[[], None] | None = None
    layout_after: int = 0  # optional arguments after its closing brace, dropped (\marginnote)

    def group(self) -> _Frame:
        """A brace group inside this frame: its text goes where this frame's goes."""
        return _Frame("group", self.stream, self.anchor, self.in_footnote)


def _render(block: _Block, library: Mapping[str, LibraryItem]) -> tuple[
        str, list[tuple[int, int]], list[tuple[int, _Cite, bool]]]:
    """A block's text, the placeholder ranges to cut, and where each cite stands.

    A citation that prints names ("\\textcite") gives the authors' surnames, as the page
    shows them; one that stands as a noun of its sentence (a numeric "\\cite{x} showed",
    "the work of \\cite{x}") gives its authors too, or its key where the library has none
    (issue 40): a claim never has a hole where its citation stood. Only where the
    sentence lacks them (issue 46): a cite after the authors' names ("Alt et al.
    \\cite{x} give", "Smith and Jones~\\cite{x}") is not given them again, and one that
    ends its sentence after a preposition English leaves at a sentence's end ("... which
    host they are running on \\cite{x}.") is no noun; after one that is never left there
    ("proposed by \\cite{x}.", "wie die von \\cite{x}.") it is.
    """
    out: list[str] = []
    length = 0
    cuts: list[tuple[int, int]] = []
    cites: list[tuple[int, _Cite, bool]] = []
    pieces = block.pieces
    following = _next_text(pieces)
    for index, piece in enumerate(pieces):
        if isinstance(piece, str):
            out.append(piece)
            length += len(piece)
            continue
        named = piece.prints != _NAMES and _after_names("".join(out[-4:]), piece.keys, library)
        textual = not piece.in_footnote and not named and (
            piece.prints == _NAMES or _opens_sentence(out, following[index]))
        if not textual and not piece.in_footnote and not named and piece.prints == _PAREN \
                and _NOUN_BEFORE.search("".join(out[-3:])) and not (
                    _STRANDED.search("".join(out[-3:])) and _ends_sentence(following[index])):
            # "Basierend auf der Arbeit von \cite{x} werden ...": the citation is a noun of
            # its sentence; the claim names it (its authors, else its key), leaving no hole.
            word = _names(piece.keys, library) or ", ".join(piece.keys)
            before = "" if not out or out[-1].endswith(" ") else " "
            then = pieces[index + 1] if index + 1 < len(pieces) else None
            after = "" if isinstance(then, str) and then.startswith(" ") else " "
            out.append(before)
            length += len(before)
            cites.append((length, piece, False))
            out.append(word + after)
            length += len(word) + len(after)
            continue
        if not textual:
            cites.append((length, piece, False))
            continue
        # The subject of its sentence: named by its authors as the page shows them, else
        # (a numeric "\\cite{x} showed") by its authors or key, never a hole in the claim.
        names = _names(piece.keys, library)
        before = "" if not out or out[-1].endswith(" ") else " "
        word = names or ", ".join(piece.keys)
        after = "" if index + 1 < len(pieces) and isinstance(pieces[index + 1], str) and \
            str(pieces[index + 1]).startswith(" ") else " "
        out.append(before)
        length += len(before)
        cites.append((length, piece, True))
        if not word[:1].isupper():  # a key in lower case: a capital, cut again, ends the
            cuts.append((length, length + 1))  # sentence before it for the splitter
            word = "X" + word
        out.append(word + after)
        length += len(word) + len(after)
    return "".join(out), cuts, cites


def _next_text(pieces: Sequence[str | _Cite]) -> list[str]:
    """For each piece, the first character of the text after it, past cites and blanks
    ("" at the block's end): one pass, so a sentence of 8,192 cites costs no more."""
    found = [""] * len(pieces)
    following = ""
    for index in range(len(pieces) - 1, -1, -1):
        found[index] = following
        piece = pieces[index]
        if isinstance(piece, str) and piece.strip():
            following = piece.lstrip()[0]
    return found


def _opens_sentence(out: list[str], following: str) -> bool:
    """Whether a cite stands where a sentence starts and goes on in lower case (its
    ``following`` text's first character; "... end. \\cite{x} showed"): it is the
    sentence's subject."""
    before = "".join(out[-3:]).rstrip()
    if before and before[-1] not in ".!?:":
        return False
    return following.islower()


# What ends a run of names a citation stands after: "et al.", "and colleagues",
# "Smith's"; "usw." is not one.
_ET_AL = re.compile(r"(?:\bet\s+al\.?|\bu\.\s*a\.|\band\s+(?:colleagues|co-?workers)|"
                    r"\bund\s+(?:Kollegen|Mitarbeiter)|\bet\s+al\.?[’']s)\s*$")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_LAST_WORD = re.compile(r"([^\W\d_][\w'’-]*?)(?:[’']s?)?\s*$")


# Prepositions English strands at a sentence's end ("the host they are running on",
# "what it is made of"): a cite after one of them there is no noun of the sentence.
_STRANDED = re.compile(r"(?<![^\W\d_])(?:on|in|of|to|with|from|for|at|about|into|upon)\s*$",
                       re.IGNORECASE)


def _after_names(before: str, keys: Iterable[str], library: Mapping[str, LibraryItem]) -> bool:
    """Whether the text ``before`` a cite ends in its authors' names, as a writer names
    them before a numeric citation: "Alt et al.", "Smith and Jones", "Müller's"."""
    before = before[-200:].rstrip()
    if not before:
        return False
    if _ET_AL.search(before):
        return True
    last = _LAST_WORD.search(before)
    if last is None or not last.group(1)[:1].isupper():
        return False
    word = last.group(1).casefold()
    for key in keys:
        item = library.get(key)
        if item is not None and any(
                word == name or word in name.split("-") for author in item.authors
                for name in _WORD.findall(author.casefold())):
            return True
    return False


def _ends_sentence(following: str) -> bool:
    """Whether a cite ends its sentence: only cites, then a full stop (or the block's
    end), follow it (``following``: the first character of the text after it)."""
    return not following or following in ".!?"


def _names(keys: Iterable[str], library: Mapping[str, LibraryItem]) -> str | None:
    """"Smith", "Smith and Jones", "Smith et al." for each key; None if one is unknown."""
    parts: list[str] = []
    for key in keys:
        item = library.get(key)
        if item is None or not item.authors:
            return None
        authors = item.authors
        if len(authors) == 1:
            parts.append(authors[0])
        elif len(authors) == 2:
            parts.append(f"{authors[0]} and {authors[1]}")
        else:
            parts.append(f"{authors[0]} et al.")
    return " and ".join(parts) or None


def _cut(text: str, start: int, end: int, cuts: list[tuple[int, int]]) -> str:
    """``text[start:end]`` without the placeholder ranges."""
    out: list[str] = []
    pos = start
    for cut_start, cut_end in cuts:
        if cut_end <= pos or cut_start >= end:
            continue
        out.append(text[pos:max(pos, cut_start)])
        pos = max(pos, cut_end)
    out.append(text[pos:end])
    return "".join(out)


def _sentence_for(spans: list[tuple[int, int]], offset: int,
                  textual: bool) -> tuple[int, int] | None:
    """The sentence a cite at ``offset`` stands in. Between two sentences a citation
    that prints names belongs to the one after it, any other to the one before
    ("data.\\footcite{x} Next")."""
    if not spans:
        return None
    starts = [s for s, _ in spans]
    k = bisect.bisect_right(starts, offset) - 1
    if k >= 0 and spans[k][0] < offset < spans[k][1]:
        return spans[k]
    before = spans[k] if k >= 0 and spans[k][1] <= offset else (
        spans[k - 1] if k >= 1 else None)
    after_index = k + 1 if k < 0 or spans[k][0] < offset else k
    after = spans[after_index] if 0 <= after_index < len(spans) else None
    if textual:
        return after or before
    return before or after


def _with_quotation(spans: list[tuple[int, int]], span_starts: list[int],
                    quoted: Sequence[quotations.Quotation], quote_starts: list[int],
                    span: tuple[int, int], most: int) -> tuple[int, int]:
    """The claim's span widened back to the opening mark of a quotation of several
    sentences that ends in it ("„First. Second.“ \\cite{x}": the whole quotation is the
    claim, so that it is checked verbatim, not its last sentence), if it is at most ``most``
    characters long. Quotations do not
    overlap: the one the span's start is in is found by bisection."""
    start, end = span
    q = bisect.bisect_left(quote_starts, start) - 1
    if q >= 0:
        quotation = quoted[q]
        if quotation.start < start <= quotation.end and start - quotation.start <= most:
            opening = quotation.start - 1  # the opening mark
            k = bisect.bisect_right(span_starts, opening) - 1
            start = min(start, spans[k][0] if k >= 0 else opening)
    return start, end
