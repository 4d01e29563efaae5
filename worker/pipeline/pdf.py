"""Turn PDF bytes into clean page texts, and page texts into overlapping chunks.

This is the first half of the ``parse_document`` stage, kept free of any database so that
it is a pure function of the bytes: the task that calls it stores the result, and a task
that is retried on another pod gets exactly the same pages and chunks again.

Three shapes follow from what the later stages need:

- Page numbers are the evidence the report shows, so they survive every step. Text is
  cleaned per page (running headers and footers, bare page numbers, hyphenation at line
  ends) and a chunk carries the first and last page its sentences come from.
- A bad document is an expected input, not a crash. :class:`DocumentError` carries a
  ``reason`` from a small fixed set, checked from cheapest to dearest (size, magic bytes,
  open, password, pages, text layer), so that the run can report the document as
  unavailable and go on with the rest.
- Chunks are cut on sentence boundaries because both retrieval (BM25 and vectors) and
  the judge read whole sentences; :func:`sentences` is public so that claim extraction
  splits the thesis with the very same rules.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import re
import typing

import pymupdf

from citerun import errors

DocumentErrorReason = typing.Literal[
    "too_large", "not_pdf", "corrupt", "encrypted", "empty", "no_text"
]

_DEFAULT_MESSAGES: dict[DocumentErrorReason, str] = {
    "too_large": "the document is larger than the size limit",
    "not_pdf": "the document is not a PDF file (it does not start with %PDF-)",
    "corrupt": "the PDF is damaged and cannot be read",
    "encrypted": "the PDF is protected by a password",
    "empty": "the PDF has no pages",
    "no_text": (
        "the PDF has no text layer on any page (probably a scan); run OCR on it first"
    ),
}


class DocumentError(errors.CiterunError):
    """The document cannot be used as a PDF source."""

    reason: DocumentErrorReason

    def __init__(self, reason: DocumentErrorReason, message: str | None = None) -> None:
        self.reason = reason
        super().__init__(message or _DEFAULT_MESSAGES[reason])


@dataclasses.dataclass(frozen=True)
class Page:
    """The cleaned text of one page; ``number`` is 1-based, as printed in a report."""

    number: int
    text: str


@dataclasses.dataclass(frozen=True)
class ParsedDocument:
    """What a PDF says about itself, and its cleaned text page by page."""

    title: str | None
    authors: tuple[str, ...]
    year: int | None
    pages: tuple[Page, ...]

    @property
    def page_count(self) -> int:
        return len(self.pages)


@dataclasses.dataclass(frozen=True)
class Chunk:
    """A run of whole sentences; ``page_start`` and ``page_end`` are 1-based, inclusive."""

    ordinal: int
    text: str
    page_start: int
    page_end: int


# A PDF reader accepts the header anywhere in the first 1024 bytes (ISO 32000-1, 7.5.2
# implementation note), and some producers do write junk before it.
_MAGIC = b"%PDF-"
_MAGIC_WINDOW = 1024

# Ligatures are expanded (no TEXT_PRESERVE_LIGATURES) so that "ﬁnd" matches "find".
_TEXT_FLAGS = pymupdf.TEXT_MEDIABOX_CLIP

# How many lines at each edge of a page may be a running header or footer.
_EDGE_LINES = 2
# A line is a running header/footer when it sits at an edge of at least this share of
# pages (and of at least _MIN_REPEATS pages): odd/even running heads sit on half each.
_REPEAT_SHARE = 0.5
_MIN_REPEATS = 2

_PAGE_NUMBER = re.compile(
    r"(?:(?:page|seite|p\.|s\.)\s*)?(?:\d{1,4}|(?=[ivxlc])c{0,3}(?:x[cl]|l?x{0,3})(?:i[xv]|v?i{0,3}))"
    r"(?:\s*(?:/|of|von)\s*\d{1,4})?"
    r"|[-–—]\s*\d{1,4}\s*[-–—]",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=[^\W_])")
_YEAR = re.compile(r"(?:D:)?((?:1[5-9]|20)\d\d)")


def parse_pdf(data: bytes, *, max_bytes: int) -> ParsedDocument:
    """Parse a PDF into cleaned pages and its title, authors and year.

    Raises :class:`DocumentError` with the matching ``reason`` when the document is too
    large, not a PDF, damaged, password-protected, has no pages or has no text layer.
    """
    if len(data) > max_bytes:
        raise DocumentError(
            "too_large",
            f"the document is {len(data):,} bytes, over the limit of {max_bytes:,} bytes",
        )
    if _MAGIC not in data[:_MAGIC_WINDOW]:
        raise DocumentError("not_pdf")
    try:
        # pymupdf's annotations are partial: these calls are untyped upstream.
        doc = pymupdf.open(stream=data, filetype="pdf")  # type: ignore[no-untyped-call]
    except (pymupdf.FileDataError, RuntimeError) as err:
        raise DocumentError("corrupt", f"the PDF is damaged and cannot be opened: {err}") from err
    with doc:
        if doc.needs_pass:
            raise DocumentError("encrypted")
        if doc.page_count == 0:
            raise DocumentError("empty")
        try:
            raw_pages = [_page_lines(doc[i]) for i in range(doc.page_count)]
            first_page_title = _biggest_line(doc[0])
        except (pymupdf.FileDataError, RuntimeError) as err:
            raise DocumentError("corrupt", f"the PDF has an unreadable page: {err}") from err
        metadata = doc.metadata or {}

    if not any(line for blocks in raw_pages for block in blocks for line in block):
        raise DocumentError(
            "no_text",
            f"none of the {len(raw_pages)} pages has a text layer (probably a scan); "
            "run OCR on it first",
        )
    pages = tuple(
        Page(number=index + 1, text=_clean(blocks))
        for index, blocks in enumerate(_drop_headers_and_footers(raw_pages))
    )
    return ParsedDocument(
        title=_metadata_title(metadata.get("title") or "") or first_page_title,
        authors=_split_authors(metadata.get("author") or ""),
        year=_metadata_year(metadata.get("creationDate") or ""),
        pages=pages,
    )


# --- page text -----------------------------------------------------------------------

_Blocks = list[list[str]]


def _page_lines(page: pymupdf.Page) -> _Blocks:
    """The page's text blocks in reading order, each as its list of non-empty lines.

    MuPDF starts a new block where the indent changes, so a reference entry with a
    hanging indent comes out as two blocks. A block is merged back into the one before
    when the indent is all that changed: it starts right below (under a quarter line
    of gap, same column) while the block before ends mid-sentence.
    """
    blocks: _Blocks = []
    previous: tuple[tuple[float, float, float, float], int] | None = None
    for block in page.get_text("blocks", flags=_TEXT_FLAGS, sort=True):  # type: ignore[no-untyped-call]
        if block[6] != 0:  # an image block
            continue
        lines = [_normalize_spaces(line) for line in str(block[4]).split("\n")]
        lines = [line for line in lines if line]
        if not lines:
            continue
        box = (float(block[0]), float(block[1]), float(block[2]), float(block[3]))
        if previous and _continues(*previous, blocks[-1][-1], box):
            blocks[-1].extend(lines)
        else:
            blocks.append(lines)
        previous = (box, len(lines))
    return blocks


def _continues(
    above: tuple[float, float, float, float],
    above_lines: int,
    above_last_line: str,
    box: tuple[float, float, float, float],
) -> bool:
    line_height = (above[3] - above[1]) / max(above_lines, 1)
    gap = box[1] - above[3]
    same_column = box[0] < above[2] and above[0] < box[2]
    indent_changed = abs(box[0] - above[0]) > 1.0
    last_word = above_last_line.rsplit(" ", 1)[-1]
    ends_sentence = last_word.endswith(("!", "?", ":")) or (
        last_word.endswith(".") and last_word.rstrip(".").casefold() not in ABBREVIATIONS
    )
    return (
        same_column
        and indent_changed
        and -2.0 <= gap < 0.25 * line_height
        and not ends_sentence
    )


def _normalize_spaces(text: str) -> str:
    return _SPACES.sub(" ", _INVISIBLE.sub("", text)).strip()


def _edge_key(line: str) -> str:
    """Running heads differ only in their numbers ("Chapter 2 · 17"), so ignore those."""
    return _DIGITS.sub("#", line.casefold())


def _edge_positions(blocks: _Blocks) -> list[tuple[int, int]]:
    """(block, line) positions of the first and last few lines of a page."""
    positions = [(b, i) for b, lines in enumerate(blocks) for i in range(len(lines))]
    if len(positions) <= 2 * _EDGE_LINES:
        return positions
    return positions[:_EDGE_LINES] + positions[-_EDGE_LINES:]


def _drop_headers_and_footers(pages: list[_Blocks]) -> list[_Blocks]:
    counts: collections.Counter[str] = collections.Counter()
    for blocks in pages:
        counts.update({_edge_key(blocks[b][i]) for b, i in _edge_positions(blocks)})
    threshold = max(_MIN_REPEATS, _REPEAT_SHARE * len(pages))
    repeated = {key for key, n in counts.items() if n >= threshold}

    cleaned: list[_Blocks] = []
    for blocks in pages:
        drop = {
            (b, i)
            for b, i in _edge_positions(blocks)
            if _edge_key(blocks[b][i]) in repeated or _PAGE_NUMBER.fullmatch(blocks[b][i])
        }
        kept = [
            [line for i, line in enumerate(lines) if (b, i) not in drop]
            for b, lines in enumerate(blocks)
        ]
        cleaned.append([lines for lines in kept if lines])
    return cleaned


def _join_hyphenated(match: re.Match[str]) -> str:
    """ "exam-" + "ple" is one word; "post-" + "Soviet" and "Covid-" + "19" keep the hyphen."""
    following = match.string[match.end()]
    return "" if following.islower() else "-"


def _clean(blocks: _Blocks) -> str:
    """Blocks become paragraphs separated by a blank line; lines inside are joined."""
    paragraphs = []
    for lines in blocks:
        text = _LINE_END_HYPHEN.sub(_join_hyphenated, "\n".join(lines))
        paragraphs.append(text.replace("\n", " "))
    return "\n\n".join(paragraphs)


# --- metadata ------------------------------------------------------------------------

_JUNK_TITLES = re.compile(
    r"^(?:untitled|unbenannt|title|document\d*|microsoft word - .*|.*\.(?:docx?|tex|pdf|odt))$",
    re.IGNORECASE,
)


def _metadata_title(raw: str) -> str | None:
    title = _normalize_spaces(raw)
    if len(title) < 3 or _JUNK_TITLES.match(title):
        return None
    return title


def _split_authors(raw: str) -> tuple[str, ...]:
    """Split an author field: "A; B", "A and B", "A, B" (but keep "Smith, John")."""
    text = _normalize_spaces(raw)
    if not text:
        return ()
    if ";" in text:
        parts = text.split(";")
    else:
        parts = re.split(r"\s+(?:and|und|&)\s+", text)
        if len(parts) == 1 and "," in text:
            comma_parts = text.split(",")
            # "Smith, John" is one author; "John Smith, Jane Doe" are two.
            if all(" " in part.strip() for part in comma_parts):
                parts = comma_parts
    return tuple(part.strip(" ,") for part in parts if part.strip(" ,"))


def _metadata_year(raw: str) -> int | None:
    match = _YEAR.match(raw.strip())
    return int(match.group(1)) if match else None


def _biggest_line(page: pymupdf.Page) -> str | None:
    """The first page's line(s) in the biggest font, when that font stands out.

    A cheap title heuristic for PDFs whose metadata has none: consecutive lines in the
    biggest size are one (wrapped) title; a page whose biggest font is no bigger than
    its body text has no title we can tell apart.
    """
    lines: list[tuple[float, str]] = []
    page_dict = page.get_text("dict", flags=_TEXT_FLAGS, sort=True)  # type: ignore[no-untyped-call]
    for block in page_dict["blocks"]:
        for line in block.get("lines", ()):
            spans = [s for s in line["spans"] if s["text"].strip()]
            if not spans:
                continue
            text = _normalize_spaces(" ".join(s["text"] for s in spans))
            if len(text) >= 3 and not _PAGE_NUMBER.fullmatch(text):
                lines.append((round(max(s["size"] for s in spans), 1), text))
    if not lines:
        return None
    chars_by_size: collections.Counter[float] = collections.Counter()
    for size, text in lines:
        chars_by_size[size] += len(text)
    body_size = chars_by_size.most_common(1)[0][0]
    biggest = max(size for size, _ in lines)
    if biggest < body_size + 1:
        return None
    title: list[str] = []
    for size, text in lines:
        if size >= biggest - 0.5:
            title.append(text)
        elif title:
            break
    return " ".join(title)[:300] or None


# --- sentences and chunks ------------------------------------------------------------

# Lower-cased words that end with a period without ending the sentence. Single letters
# (initials, "S." for Seite, "p.") are handled by a rule of their own.
ABBREVIATIONS = frozenset(
    {
        "al", "e.g", "i.e", "cf", "vs", "fig", "figs", "tab", "eq", "eqs", "sec", "ch",
        "chap", "vol", "vols", "no", "nos", "pp", "ed", "eds", "dr", "prof", "mr", "mrs",
        "ms", "st", "approx", "ca", "resp", "ibid", "op", "cit", "et", "jr", "sr", "dept",
        "univ", "inc", "ltd", "co", "vgl", "z.b", "d.h", "u.a", "bzw", "abb", "kap",
        "hrsg", "aufl", "bd", "jg", "nr", "s.o", "s.u", "usw", "u.ä", "sog", "ggf",
        "inkl", "evtl", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
        "oct", "nov", "dec",
    }
)

# A candidate end: . ! ? (or an ellipsis), then closing quotes/brackets, then space,
# then something a sentence can start with.
_SENTENCE_END = re.compile(r"""[.!?…]+["'”’»)\]]*(?=\s+["'“‘„«(\[]?[A-ZÄÖÜ0-9])""")
_PARAGRAPH = re.compile(r"\n\s*\n")
_WORD_BEFORE = re.compile(r"([^\s(\[\"'“„]+)$")
_SECTION_NUMBER = re.compile(r"(?:\d{1,3}\.)*\d{1,3}")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``, stripped of outer spaces.

    A blank line always ends a sentence (headings are their own sentence). Otherwise a
    sentence ends at ``.``, ``!`` or ``?`` followed by space and an upper-case letter or
    digit, except after an abbreviation ("et al.", "e.g.", "Fig.", "vgl.", "S."), an
    initial ("J. Smith") or a bare section number ("2. Methods" is one sentence).
    """
    spans: list[tuple[int, int]] = []
    paragraph_start = 0
    for paragraph in [*_PARAGRAPH.finditer(text), None]:
        paragraph_end = paragraph.start() if paragraph else len(text)
        start = paragraph_start
        for end_match in _SENTENCE_END.finditer(text, paragraph_start, paragraph_end):
            end = end_match.end()
            if _is_sentence_end(text, start, end_match.start()):
                _add_span(spans, text, start, end)
                start = end
        _add_span(spans, text, start, paragraph_end)
        if paragraph:
            paragraph_start = paragraph.end()
    return spans


def _is_sentence_end(text: str, start: int, period: int) -> bool:
    if text[period] != ".":
        return True
    word_match = _WORD_BEFORE.search(text, start, period)
    if not word_match:
        return True
    word = word_match.group(1)
    bare = word.rstrip(".").casefold()
    if bare in ABBREVIATIONS or (len(bare) == 1 and bare.isalpha()):
        return False
    # "2." or "3.1." alone at the start of a sentence is a heading number.
    return not (
        _SECTION_NUMBER.fullmatch(word.rstrip(".")) and not text[start:word_match.start()].strip()
    )


def _add_span(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        spans.append((start, end))


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each with its inner whitespace collapsed to one space."""
    return [" ".join(text[start:end].split()) for start, end in sentence_spans(text)]


@dataclasses.dataclass(frozen=True)
class _Sentence:
    text: str
    page_start: int
    page_end: int


def _page_sentences(pages: typing.Iterable[Page]) -> list[_Sentence]:
    """Sentences of all pages; one that runs over a page break keeps both page numbers."""
    parts: list[str] = []
    starts: list[tuple[int, int]] = []  # (offset in the joined text, page number)
    offset = 0
    for page in pages:
        text = page.text.strip()
        if not text:
            continue
        if parts:
            previous = parts[-1]
            # A word hyphenated across the page break: "exam-" | "ple".
            if re.search(r"[^\W\d_]-$", previous) and text[0].islower():
                parts[-1] = previous[:-1]
                offset -= 1
            else:
                parts.append(" ")
                offset += 1
        starts.append((offset, page.number))
        parts.append(text)
        offset += len(text)
    joined = "".join(parts)

    offsets = [page_offset for page_offset, _ in starts]

    def page_at(position: int) -> int:
        return starts[max(bisect.bisect_right(offsets, position) - 1, 0)][1]

    return [
        _Sentence(" ".join(joined[s:e].split()), page_at(s), page_at(e - 1))
        for s, e in sentence_spans(joined)
    ]


def _split_long(sentence: _Sentence, limit: int) -> list[_Sentence]:
    """Cut a sentence longer than ``limit`` at word boundaries (a huge word stays whole)."""
    pieces: list[_Sentence] = []
    words: list[str] = []
    length = 0
    for word in sentence.text.split(" "):
        if words and length + 1 + len(word) > limit:
            pieces.append(dataclasses.replace(sentence, text=" ".join(words)))
            words, length = [], 0
        length += len(word) + (1 if words else 0)
        words.append(word)
    if words:
        pieces.append(dataclasses.replace(sentence, text=" ".join(words)))
    return pieces


def chunk_pages(
    pages: typing.Iterable[Page], *, target_chars: int = 900, overlap_chars: int = 150
) -> tuple[Chunk, ...]:
    """Pack whole sentences into chunks of about ``target_chars`` characters.

    A chunk never cuts a word; it only cuts a sentence that alone is longer than
    ``target_chars``. Each chunk after the first repeats the last sentences of the one
    before, up to ``overlap_chars`` characters, so that a claim whose evidence straddles
    a cut is still found in one piece. Chunks may span a page break and then carry both
    page numbers. Defaults: 900 characters is about 200 tokens, a paragraph, small
    enough for a precise vector and a short judge prompt.
    """
    if target_chars <= 0:
        raise ValueError("target_chars must be positive")
    if not 0 <= overlap_chars < target_chars:
        raise ValueError("overlap_chars must be at least 0 and less than target_chars")
    units = [
        piece
        for sentence in _page_sentences(pages)
        for piece in _split_long(sentence, target_chars)
    ]

    chunks: list[Chunk] = []
    current: list[_Sentence] = []
    fresh = 0  # sentences in `current` that no earlier chunk holds

    def length(group: list[_Sentence]) -> int:
        return sum(len(s.text) for s in group) + max(len(group) - 1, 0)

    def emit() -> None:
        chunks.append(
            Chunk(
                ordinal=len(chunks),
                text=" ".join(s.text for s in current),
                page_start=min(s.page_start for s in current),
                page_end=max(s.page_end for s in current),
            )
        )

    for unit in units:
        if fresh and length(current) + 1 + len(unit.text) > target_chars:
            emit()
            overlap: list[_Sentence] = []
            for previous in reversed(current):
                if length([previous, *overlap]) > overlap_chars:
                    break
                overlap.insert(0, previous)
            # The overlap must leave room for the next sentence, or it is dropped.
            if length(overlap) + 1 + len(unit.text) > target_chars:
                overlap = []
            current = overlap
            fresh = 0
        current.append(unit)
        fresh += 1
    if fresh:
        emit()
    return tuple(chunks)
