"""Turn PDF bytes into clean page texts, and page texts into overlapping chunks.

This is the first half of the ``parse_document`` stage, kept free of any database so that
it is a pure function of the bytes: the task that calls it stores the result, and a task
that is retried on another pod gets exactly the same pages and chunks again.

Three shapes follow from what the later stages need:

- Page numbers are the evidence the report shows, so they survive every step. The
  page's lines come from :mod:`citerun.pipeline.layout` in reading order (columns,
  no running heads, page numbers or margin stamps) with their boxes; the text keeps
  line starts, joins words hyphenated at line ends, and a chunk carries the first and
  last page its sentences come from.
- What a source is (title, authors, year, DOI, arXiv id) is read from its first page's
  layout; the PDF's info fields count only where the page agrees (:func:`identify`).
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
from citerun.pipeline import layout

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
    """The cleaned text of one page; ``number`` is 1-based, as printed in a report.

    ``text`` keeps line starts (one line per line of the page, in reading order) and
    separates paragraphs by a blank line; ``lines`` are the same lines with their boxes
    (points, origin at the page's top-left), ``width`` and ``height`` the page's size;
    ``image`` a small grey JPEG of the page (see :data:`RENDER_MAX_PAGES`), which the
    report shows with the evidence highlighted.
    """

    number: int
    text: str
    lines: tuple[layout.Line, ...] = ()
    width: float = 0.0
    height: float = 0.0
    image: bytes | None = None


@dataclasses.dataclass(frozen=True)
class ParsedDocument:
    """What a PDF says about itself, and its cleaned text page by page.

    ``title``, ``authors`` (as printed, "Given Surname"), ``year``, ``doi`` and
    ``arxiv_id`` are read from the first page's layout; the PDF's info fields are used
    only where they agree with the page (see :func:`identify`).
    """

    title: str | None
    authors: tuple[str, ...]
    year: int | None
    pages: tuple[Page, ...]
    doi: str | None = None
    arxiv_id: str | None = None

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

_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=[^\W_])")
_YEAR = re.compile(r"(?:D:)?((?:1[5-9]|20)\d\d)")


# Pages are rendered for the report only for documents up to this many pages: a cited
# paper or chapter (about 40 ms and 20 KB a page), not a 300-page book or the thesis.
RENDER_MAX_PAGES = 60
# 0.6 x 72 dpi = 43 dpi grey: enough to recognise the page and see the highlighted lines.
_RENDER_ZOOM = 0.6
_RENDER_QUALITY = 50


def _render(doc: pymupdf.Document) -> dict[int, bytes]:
    """Every page as a small grey JPEG, by 1-based page number."""
    images: dict[int, bytes] = {}
    matrix = pymupdf.Matrix(_RENDER_ZOOM, _RENDER_ZOOM)  # type: ignore[no-untyped-call]
    for index in range(doc.page_count):
        pixmap = doc[index].get_pixmap(matrix=matrix, colorspace=pymupdf.csGRAY, alpha=False)
        jpeg = pixmap.tobytes("jpeg", jpg_quality=_RENDER_QUALITY)  # type: ignore[no-untyped-call]
        images[index + 1] = bytes(jpeg)
    return images


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
            layouts = layout.read_document(doc)
            first_page_raw = doc[0].get_text(flags=layout.TEXT_FLAGS)  # type: ignore[no-untyped-call]
            images = _render(doc) if doc.page_count <= RENDER_MAX_PAGES else {}
        except (pymupdf.FileDataError, RuntimeError) as err:
            raise DocumentError("corrupt", f"the PDF has an unreadable page: {err}") from err
        metadata = doc.metadata or {}

    if not any(page.lines for page in layouts):
        raise DocumentError(
            "no_text",
            f"none of the {len(layouts)} pages has a text layer (probably a scan); "
            "run OCR on it first",
        )
    pages = tuple(
        Page(number=p.number, text=_clean(p.text()), lines=p.lines, width=p.width, height=p.height,
             image=images.get(p.number))
        for p in layouts
    )
    identity = identify(layouts[0], str(first_page_raw), metadata)
    return ParsedDocument(
        title=identity.title,
        authors=identity.authors,
        year=identity.year,
        pages=pages,
        doi=identity.doi,
        arxiv_id=identity.arxiv_id,
    )


# --- page text ----------------------------------------------------------------------


def _join_hyphenated(match: re.Match[str]) -> str:
    """ "exam-" + "ple" is one word; "post-" + "Soviet" and "Covid-" + "19" keep the hyphen."""
    following = match.string[match.end()]
    return "" if following.islower() else "-"


def _clean(text: str) -> str:
    """Words hyphenated at a line end are joined; line starts and paragraphs stay."""
    return _LINE_END_HYPHEN.sub(_join_hyphenated, text)


# --- source identity ---------------------------------------------------------------

_JUNK_TITLES = re.compile(
    r"^(?:untitled|unbenannt|title|document\d*|microsoft word - .*|.*\.(?:docx?|tex|pdf|odt))$",
    re.IGNORECASE,
)
# First-page lines that are printed big but are not the title.
_NOT_TITLE = re.compile(
    r"^(?:research\s+article|original\s+article|review(?:\s+article)?|article|letter|"
    r"proceedings\b|journal\b|volume\b|vol\.|open\s+access|arxiv\b|preprint\b|doi\b|"
    r"abstract\b|contents\b|https?://)",
    re.IGNORECASE,
)
DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+[^\s\"<>.,;)\]])")
ARXIV_ID = re.compile(r"\barXiv\s*:\s*(\d{4}\.\d{4,5})(?:v\d+)?", re.IGNORECASE)
ARXIV_ABS = re.compile(r"\b(?:arxiv\.org/abs/|abs/)(\d{4}\.\d{4,5})", re.IGNORECASE)
_COPYRIGHT_YEAR = re.compile(r"(?:©|\(c\)|copyright)\s*(?:©\s*)?((?:19|20)\d\d)", re.IGNORECASE)
_VENUE_YEAR = re.compile(
    r"(?:proceedings|conference|workshop|symposium|journal|published|accepted|received|"
    r"\b[A-Z]{2,}\s*['’]\d\d\b)[^\n]{0,120}?\b((?:19|20)\d\d)\b"
    r"|\b[A-Z]{2,}\s*['’](\d\d)\b",
    re.IGNORECASE,
)
_NAME_MARKERS = re.compile(r"[\d*∗†‡§¶⋄♦♣♠♥□■○●◦α-ωΑ-Ω,;|]+")
_NAME = re.compile(
    r"^(?:[A-ZÀ-ÖØ-ÞŁŚŻŹČŠŽ][\w'’.-]*\.?\s+){1,3}"
    r"(?:(?:van|von|der|den|de|del|della|di|da|du|le|la)\s+)*[A-ZÀ-ÖØ-ÞŁŚŻŹČŠŽ][\w'’-]+$"
)
_ORGANISATION = re.compile(
    r"\b(?:university|universit[äà]t|universidad|universidade|universit[ée]|institute?|"
    r"college|school|department|dept|laboratory|lab|labs|centre|center|research|inc|ltd|"
    r"corporation|hospital|foundation|academy|allen|google|microsoft|usa|china|germany|"
    r"abstract|introduction|keywords)\b",
    re.IGNORECASE,
)


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who wrote a document and what it is called, as its first page shows it."""

    title: str | None
    authors: tuple[str, ...]
    year: int | None
    doi: str | None
    arxiv_id: str | None


def _metadata_title(raw: str) -> str | None:
    title = layout.normalize_spaces(raw)
    if len(title) < 3 or _JUNK_TITLES.match(title):
        return None
    return title


def _split_authors(raw: str) -> tuple[str, ...]:
    """Split an author field: "A; B", "A and B", "A, B" (but keep "Smith, John")."""
    text = layout.normalize_spaces(raw)
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


def _title_lines(lines: typing.Sequence[layout.Line], height: float) -> list[int]:
    """Indices of the title: the biggest horizontal lines in the top half of the page."""
    chars: collections.Counter[float] = collections.Counter()
    for line in lines:
        chars[line.size] += len(line.text)
    if not chars:
        return []
    body = chars.most_common(1)[0][0]
    smaller = collections.Counter({size: n for size, n in chars.items() if size < body - 1})
    if smaller and sum(smaller.values()) >= 20:  # a short page: the title outweighs the body
        body = min(body, smaller.most_common(1)[0][0]) if chars[body] < 2 * sum(smaller.values()) else body
    candidates = [
        i
        for i, line in enumerate(lines)
        if line.bbox[1] < 0.55 * height
        and len(line.text) >= 3
        and not _NOT_TITLE.match(line.text)
        and not layout.PAGE_NUMBER.fullmatch(line.text)
        and re.search(r"[^\W\d_]{2}", line.text)
    ]
    if not candidates:
        return []
    biggest = max(lines[i].size for i in candidates)
    if biggest < body + 1:
        return []
    first = next(i for i in candidates if lines[i].size >= biggest - 0.5)
    chosen = [first]
    for i in range(first + 1, len(lines)):
        # A wrapped title continues in a similar size right below.
        if lines[i].size >= biggest - 1.5 and lines[i].bbox[1] - lines[i - 1].bbox[3] < lines[i].size:
            chosen.append(i)
        else:
            break
    return chosen


def _author_names(lines: typing.Sequence[layout.Line]) -> list[str]:
    """Names from the lines below the title, up to the abstract or an affiliation."""
    names: list[str] = []
    for line in lines[:12]:
        text = line.text
        if re.match(r"^\s*(?:abstract|a b s t r a c t|keywords|summary)\b", text, re.IGNORECASE):
            break
        # "TAL AUGUST, University of Washington" (ACM): the name before the comma.
        if re.match(r"^[A-Z][A-Z.\s-]+,\s", text):
            text = text.split(",")[0].title()
        elif "@" in text or _ORGANISATION.search(text) and not names:
            continue
        if re.search(r"(?:19|20)\d\d|\d+\(\d+\)", text):  # a venue or date line
            if names:
                break
            continue
        for part in re.split(r"\s*(?:,|\band\b|&|\s{2,})\s*|" + _NAME_MARKERS.pattern, text):
            part = (part or "").strip(" .")
            if part and _NAME.match(part) and not _ORGANISATION.search(part):
                names.append(part)
    return list(dict.fromkeys(names))


def _first_page_year(lines: typing.Sequence[layout.Line], raw: str) -> int | None:
    text = "\n".join(line.text for line in lines) + "\n" + raw
    for pattern in (_COPYRIGHT_YEAR,):
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    venue = _VENUE_YEAR.search(text)
    if venue:
        if venue.group(1):
            return int(venue.group(1))
        return 2000 + int(venue.group(2))
    return None


def identify(first: layout.PageLayout, raw_text: str, metadata: dict[str, str]) -> Identity:
    """Title, authors, year, DOI and arXiv id of a document from its first page.

    The title is the biggest horizontal text in the page's upper half (a rotated arXiv
    stamp is not horizontal; a journal's name is skipped), the authors are the names
    right below it. The PDF's info fields are used only when they agree with the page:
    a title the page does not contain ("AI Magazine") or an author the page does not
    name (the typesetter) is ignored. The year is a copyright or venue year on the
    page, else the arXiv id's (``2209.xxxxx`` is 2022), else the file's creation year.
    """
    lines = first.lines
    page_words = _fold_words(raw_text + " " + " ".join(line.text for line in lines))
    title_index = _title_lines(lines, first.height)
    title = " ".join(lines[i].text for i in title_index)[:300] or None
    meta_title = _metadata_title(metadata.get("title") or "")
    if meta_title and _fold_words(meta_title) and _fold_words(meta_title) in page_words:
        title = title if title and len(title) > len(meta_title) + 20 else meta_title
    authors: tuple[str, ...] = ()
    if title_index:
        authors = tuple(_author_names(lines[title_index[-1] + 1:]))
    meta_authors = _split_authors(metadata.get("author") or "")
    if meta_authors:
        surnames = [(a.split(",")[0] if "," in a else (a.split() or [""])[-1]) for a in meta_authors]
        if all(_fold_words(name) in page_words for name in surnames if name):
            authors = meta_authors
    arxiv = ARXIV_ID.search(raw_text)
    doi = DOI.search(raw_text)
    year = _first_page_year(lines, raw_text)
    if year is None and arxiv:
        year = 2000 + int(arxiv.group(1)[:2])
    if year is None:
        year = _metadata_year(metadata.get("creationDate") or "")
    return Identity(
        title=title,
        authors=authors,
        year=year,
        doi=doi.group(1).rstrip(".").lower() if doi else None,
        arxiv_id=arxiv.group(1) if arxiv else None,
    )


def _fold_words(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.casefold()))


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
_WORD_DELIMITERS = frozenset(" \t\n\r\f\v([\"'“„")
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
    # The word before the period, found by walking back (a regex anchored at the
    # period would retry at every position of a long word: quadratic).
    word_start = period
    while word_start > start and text[word_start - 1] not in _WORD_DELIMITERS:
        word_start -= 1
    if word_start == period:
        return True
    word = text[word_start:period]
    bare = word.rstrip(".").casefold()
    if bare in ABBREVIATIONS or (len(bare) == 1 and bare.isalpha()):
        return False
    # "2." or "3.1." alone at the start of a sentence is a heading number.
    return not (
        _SECTION_NUMBER.fullmatch(word.rstrip(".")) and not text[start:word_start].strip()
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
