"""Odd but real bibliographies (issue 27): a short body, then a reference list of about
``scale`` x 400 KB of text (at scale 1, 8 to 30 pages of 1 pt type, each under the
worker's cap of 50,000 characters a page).

Each shape is a function of ``scale`` returning the list's lines ("" is a blank gap, as
the layout reads a paragraph break); :func:`thesis_pages` lays it out as a PDF and
parses it as a worker does. The shapes are what real lists look like when a style or a
converter went its own way: an entry per line with nothing at the line start a splitter
keys on, entries running over pages, numbered lists with gaps, duplicates or a
descending order, one surname throughout, lines ending in hyphens, author lists of
hundreds of names or of organisations, ``n.`` numbering, undated entries, entries that
are only a URL or a DOI. :data:`QUADRATIC` names those whose extraction took time
quadratic in the list's length. All are pure functions (no randomness), so a failure
reproduces.
"""

from __future__ import annotations

import collections.abc
import zlib

from citerun.pipeline import pdf
from tests.support import hostile_pdfs, hostile_theses

PAGE_CHARS = 48_000  # under the worker's 50,000 characters a page
LIST_CHARS = 400_000  # scale 1: about 8 pages
_LINE_POINTS = 1.2  # leading of the 1 pt type
_PAGE_LEADINGS = 660  # from the top line at 830 pt down to 38 pt above the page's foot


def _entries_to(chars: float, make: collections.abc.Callable[[int], str]) -> list[str]:
    """Entries ``make(0)``, ``make(1)`` ... until they hold ``chars`` characters."""
    out: list[str] = []
    total = 0
    while total < chars:
        out.append(make(len(out)))
        total += len(out[-1]) + 1
    return out


def _wrapped(text: str, width: int = 90) -> list[str]:
    """A long entry as the lines of a column ``width`` characters wide."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines


def _name(n: int) -> str:
    return hostile_theses.surname(n)


def _apa(n: int) -> str:
    return (f"{_name(n)}, A., & {_name(n + 7)}, B. ({1980 + n % 40}). On street trees in "
            f"{_name(n + 11)}. Urban Studies, {n % 90 + 1}, 1-20.")


# --- the shapes: each returns the list's lines at a scale ----------------------------

def line_per_entry_no_cue(scale: float) -> list[str]:
    """One entry a line, each opening with its title (no surname, year or number at the
    line start) and without a final full stop, no blank lines: nothing to split on."""
    return _entries_to(LIST_CHARS * scale, lambda n: (
        f"on street trees in {_name(n + 11)} and the heat of summer nights, by {_name(n)} "
        f"and {_name(n + 7)}, Urban Studies vol {n % 90 + 1} ({1980 + n % 40}) pages 1-20"))


def long_entries(scale: float) -> list[str]:
    """Entries of about 20 KB each (a conference's whole programme pasted as one entry),
    each over many lines and across pages."""
    lines: list[str] = []
    for n in range(max(1, round(20 * scale))):
        body = " ".join(f"session {k} on street trees in {_name(n + k)} chaired by {_name(k)}"
                        for k in range(330))
        lines += _wrapped(f"{_name(n)}, A. ({1980 + n % 40}). Proceedings of the {n}th meeting: {body}.")
        lines.append("")
    return lines


def hyphen_line_ends(scale: float) -> list[str]:
    """Entries whose every line ends in a hyphen (a converter that kept soft hyphens)."""
    lines: list[str] = []
    for entry in _entries_to(LIST_CHARS * scale, lambda n: _apa(n) + " " + _apa(n + 1)):
        lines += [f"{line}-" for line in _wrapped(entry, 60)]
        lines.append("")
    return lines


def many_authors(scale: float) -> list[str]:
    """Entries each naming 400 authors (a physics collaboration), over many lines."""
    lines: list[str] = []
    for n in range(max(1, round(40 * scale))):
        names = ", ".join(f"{_name(n * 400 + k)}, {chr(65 + k % 26)}." for k in range(400))
        lines += _wrapped(f"{names} ({1980 + n % 40}). Observation of a boson {n}. Physics Letters B, 716, 1-29.")
        lines.append("")
    return lines


def many_organisations(scale: float) -> list[str]:
    """Entries whose authors are hundreds of organisations (a consortium's members)."""
    lines: list[str] = []
    for n in range(max(1, round(40 * scale))):
        names = ", ".join(f"{_name(n * 300 + k)} University Hospital" for k in range(300))
        lines += _wrapped(f"{names} ({1980 + n % 40}). Consortium report {n}. Lancet, 12, 1-9.")
        lines.append("")
    return lines


def same_surname(scale: float) -> list[str]:
    """Every entry by the same author (a list of one scholar's works), a blank line each."""
    lines: list[str] = []
    for entry in _entries_to(LIST_CHARS * scale, lambda n: (
            f"Kalomi, A. ({1980 + n % 40}{chr(97 + n % 26)}). On street trees in {_name(n + 11)}. "
            f"Urban Studies, {n % 90 + 1}, 1-20.")):
        lines += _wrapped(entry)
        lines.append("")
    return lines


def no_gap_author_year(scale: float) -> list[str]:
    """APA entries over two lines each, no blank lines or indents between entries."""
    lines: list[str] = []
    for entry in _entries_to(LIST_CHARS * scale, _apa):
        lines += _wrapped(entry, 70)
    return lines


def url_only(scale: float) -> list[str]:
    """Entries that are only a URL (no year, no authors), a blank line each."""
    lines: list[str] = []
    for entry in _entries_to(LIST_CHARS * scale, lambda n: (
            f"https://example.org/archive/{_name(n).lower()}/street-trees/{n}")):
        lines += [entry, ""]
    return lines


def undated_entries(scale: float) -> list[str]:
    """Web sources without a date ("n.d."), a blank line each: no entry holds a year."""
    lines: list[str] = []
    for entry in _entries_to(LIST_CHARS * scale, lambda n: (
            f"{_name(n)}, A. (n.d.). Street trees in {_name(n + 11)}. Retrieved from "
            f"https://example.org/trees/t{n}")):
        lines += _wrapped(entry)
        lines.append("")
    return lines


def doi_only(scale: float) -> list[str]:
    """Entries that are only a DOI, one a line, no blank lines."""
    return _entries_to(LIST_CHARS * scale, lambda n: f"doi:10.{1000 + n % 9000}/ust.{n}")


def _bracketed(numbers: collections.abc.Iterable[int]) -> list[str]:
    """``[n]`` entries of about 275 characters, so that 400 KB hold under 1,600 (a label
    that reads as a year, "[1999]", is not taken for one)."""
    return [f"[{n}] {_apa(n)} Translated and reprinted in {_name(n + 3)}, C. (Ed.), Readings on "
            f"urban heat, vol. {n % 7 + 1} (pp. {n % 300 + 1}-{n % 300 + 30}). Cambridge: Polity "
            f"Press, abridged, with a new preface. (Original work published in German.)"
            for n in numbers]


def _count(scale: float) -> int:
    """How many ``[n]`` entries hold ``scale`` x 400 KB."""
    return len(_entries_to(LIST_CHARS * scale, lambda n: _bracketed([n])[0]))


def bracket_gaps(scale: float) -> list[str]:
    """[n] labels rising with a gap of 30 after every ten (lines lost at page edges)."""
    return _bracketed(n + 30 * (n // 10) for n in range(1, _count(scale) + 1))


def bracket_duplicates(scale: float) -> list[str]:
    """[n] labels, each number twice (two lists pasted together, interleaved)."""
    count = _count(scale)
    return _bracketed(n // 2 + 1 for n in range(count))


def bracket_descending(scale: float) -> list[str]:
    """[n] labels counting down (a list sorted newest first)."""
    count = _count(scale)
    return _bracketed(range(count, 0, -1))


def bracket_interleaved(scale: float) -> list[str]:
    """[n] labels of two runs interleaved: 1, 1001, 2, 1002, ..."""
    count = _count(scale)
    half = count // 2
    return _bracketed(x for n in range(1, half + 1) for x in (n, n + 5000))


def dot_numbered(scale: float) -> list[str]:
    """``n.`` numbered entries over two lines each."""
    lines: list[str] = []
    for entry in _entries_to(LIST_CHARS * scale, lambda n: f"{n + 1}. {_apa(n + 1)}"):
        lines += _wrapped(entry, 70)
    return lines


def dot_numbered_restarting(scale: float) -> list[str]:
    """``n.`` numbered lists restarting at 1 every 20 entries (one list per chapter)."""
    lines: list[str] = []
    for entry in _entries_to(LIST_CHARS * scale, lambda n: f"{n % 20 + 1}. {_apa(n)}"):
        lines += _wrapped(entry, 70)
    return lines


SHAPES: dict[str, collections.abc.Callable[[float], list[str]]] = {
    "line_per_entry_no_cue": line_per_entry_no_cue,
    "long_entries": long_entries,
    "hyphen_line_ends": hyphen_line_ends,
    "many_authors": many_authors,
    "many_organisations": many_organisations,
    "same_surname": same_surname,
    "no_gap_author_year": no_gap_author_year,
    "url_only": url_only,
    "undated_entries": undated_entries,
    "doi_only": doi_only,
    "bracket_gaps": bracket_gaps,
    "bracket_duplicates": bracket_duplicates,
    "bracket_descending": bracket_descending,
    "bracket_interleaved": bracket_interleaved,
    "dot_numbered": dot_numbered,
    "dot_numbered_restarting": dot_numbered_restarting,
}

# Extraction took 38 s, 16 s and 185 s of CPU on these at scale 1 (4x per doubling):
# each is one author-year entry of many lines (nothing to cut on), or one paragraph of
# many (no year to end one), that the splitter copied and searched again per line.
QUADRATIC = ("line_per_entry_no_cue", "bracket_descending", "undated_entries")


# --- the PDF ------------------------------------------------------------------------

def _escape(line: str) -> bytes:
    return line.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _page_stream(lines: list[str]) -> bytes:
    """A content stream of 1 pt Helvetica lines; a blank line is a gap of two leadings."""
    out = [b"BT /F1 1 Tf %.1f TL 20 830 Td" % _LINE_POINTS]
    for line in lines:
        out.append(b"T* T*" if not line else b"(" + _escape(line) + b") Tj T*")
    out.append(b"ET")
    return b"\n".join(out)


def _pages(lines: list[str]) -> list[list[str]]:
    """The lines cut into pages of at most :data:`PAGE_CHARS` characters and as many
    leadings as fit between the top line and the page's foot (a gap takes two)."""
    pages: list[list[str]] = [[]]
    chars = leadings = 0
    for line in lines:
        if pages[-1] and (chars + len(line) + 1 > PAGE_CHARS or leadings + 2 > _PAGE_LEADINGS):
            pages.append([])
            chars = leadings = 0
        pages[-1].append(line)
        chars += len(line) + 1
        leadings += 1 if line else 2
    return pages


BODY = ("Street trees cool a city at night, as Kalomi (1980) found and later work confirmed "
        "(Kalone, 1981). The effect is largest where the canopy is dense [1].")


def write_pdf(lines: list[str]) -> bytes:
    """A PDF: a body page citing two works, then "References" and the list's lines."""
    pages = [[BODY, "", "References", ""] + page if index == 0 else page
             for index, page in enumerate(_pages(lines))]
    count = len(pages)
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % count,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for index, page in enumerate(pages):
        stream = zlib.compress(_page_stream(page), 6)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * index))
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream
                       + b"\nendstream")
    return hostile_pdfs.raw_pdf(objects)


def thesis_pages(shape: str, scale: float = 1) -> list[tuple[int, str]]:
    """The shape's thesis written as a PDF and parsed as a worker parses it."""
    parsed = pdf.parse_pdf(write_pdf(SHAPES[shape](scale)), max_bytes=50_000_000)
    return [(p.number, p.text) for p in parsed.pages]
