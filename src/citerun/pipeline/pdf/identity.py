"""What a source is (title, authors, year, DOI, arXiv id), read from its first page.

The page's layout is what counts: the PDF's info fields are used only where the page
agrees with them (:func:`identify`), since they are often a template's ("Untitled",
"Microsoft Word - draft.docx") or the typesetter's.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import typing

from citerun.pipeline import layout, normalize

# A date in the PDF's info fields: "D:20190412..." or a bare year.
_YEAR = re.compile(rf"(?:D:)?({normalize.YEAR})")

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
ARXIV_ID = re.compile(r"\barXiv\s*:\s*(\d{4}\.\d{4,5})(?:v\d+)?", re.IGNORECASE)
_COPYRIGHT_YEAR = re.compile(rf"(?:©|\(c\)|copyright)\s*(?:©\s*)?({normalize.RECENT_YEAR})",
                             re.IGNORECASE)
_VENUE_YEAR = re.compile(
    r"(?:proceedings|conference|workshop|symposium|journal|published|accepted|received|"
    rf"\b[A-Z]{{2,}}\s*['’]\d\d\b)[^\n]{{0,120}}?\b({normalize.RECENT_YEAR})\b"
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
        if re.search(rf"{normalize.RECENT_YEAR}|\d+\(\d+\)", text):  # a venue or date line
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
    doi = normalize.DOI.search(raw_text)
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
    return normalize.fold_words(text, transliterate=False)
