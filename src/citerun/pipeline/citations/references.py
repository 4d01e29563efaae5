"""Find the reference list of a thesis and split it into entries.

The list is found by its heading, in English, German, Portuguese, Spanish, French or
Italian, on a line of its own (:data:`REFERENCE_HEADINGS`, the one list of those names);
of several candidates the one followed by the most reference-like text wins (a table of
contents, an early "Literature" chapter or a table cell do not). It ends at an
appendix, a declaration or a letter-numbered section; a footnote closing a page of the
list ("19The ...") stays body text. Entries are split by the labels at line starts
(``[12]``, ``12.``, ``[AB12]``: the longest run n, n+1, ... wins; ``[n]`` may count
down) or, author-year, by the paragraphs the layout found (hanging indents, gaps),
joined where a paragraph cannot open an entry, in time linear in the list;
:mod:`~citerun.pipeline.citations.entries` parses each one.
"""

from __future__ import annotations

import re

from citerun.pipeline import layout
from citerun.pipeline.citations import entries, model, patterns

# Reference-list headings in English, German, Portuguese, Spanish, French and Italian,
# as written; an accented letter may be written without its accent too. The one-word
# headings are those a one-letter misspelling of counts too ("Refrences").
ONE_WORD_HEADINGS = ("references", "bibliography", "literature", "bibliografía", "bibliographie",
                     "referencias", "literaturverzeichnis")
REFERENCE_HEADINGS = (
    *ONE_WORD_HEADINGS,
    "reference", "references cited", "reference cited", "reference list", "list of references",
    "selected bibliography", "works cited", "literature cited", "cited literature",
    "literatur", "quellenverzeichnis", "quellen", "quellen- und literaturverzeichnis",
    "literatur- und quellenverzeichnis",
    "bibliografía citada", "referências", "referências bibliográficas",
    "referencias bibliográficas", "références", "références bibliographiques",
    "riferimenti", "riferimenti bibliografici", "fontes", "fuentes", "obras citadas",
)
_ACCENTED = "áéêí"
_UNACCENTED = str.maketrans(_ACCENTED, "aeei")


def _heading_pattern(name: str) -> str:
    """A heading name as a regex: an accent optional, any space between the words (none
    after a hyphen: "Quellen-und Literaturverzeichnis")."""
    pattern = ""
    for word in name.split(" "):
        if pattern:
            pattern += r"\s*" if pattern.endswith("-") else r"\s+"
        pattern += "".join(f"[{c}{c.translate(_UNACCENTED)}]" if c in _ACCENTED else re.escape(c)
                           for c in word)
    return pattern


# Optionally numbered: "7 References", "VI. BIBLIOGRAPHY", "A Bibliography".
_HEADING = re.compile(
    r"^\s*(?:(?:\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4}|[A-Z])\.?\s+)?"
    rf"(?:{'|'.join(_heading_pattern(name) for name in REFERENCE_HEADINGS)})\s*:?\s*$",
    re.IGNORECASE,
)
# What ends a reference list: an appendix, a declaration, a CV, a checklist.
_STOP_HEADING = re.compile(
    r"^\s*(?:(?:[A-Z]|\d{1,2})\.?\s+)?(?:appendix|appendices|anhang|anh[äa]nge|ap[êe]ndices?|anexos?|"
    r"annexes?|appendice|appendici|allegat[oi]|ap[ée]ndices?|supplementary(?:\s+\w+){0,2}|"
    r"supplemental(?:\s+\w+){0,2}|eidesstattliche\s+(?:erkl[äa]rung|versicherung)|"
    r"selbstst[äa]ndigkeitserkl[äa]rung|declaration(?:\s+of\s+\w+)?|erkl[äa]rung|"
    r"curriculum\s+vitae|lebenslauf|checklist|author\s+biograph(?:y|ies)|"
    r"list\s+of\s+(?:figures|tables|abbreviations)|abbildungsverzeichnis|tabellenverzeichnis)"
    r"(?:\s+[A-Z0-9]{1,3})?\s*[:.]?\s*$",
    re.IGNORECASE,
)
# An appendix section headed by a letter: "A Background & Terminology", "B.1 Data".
_LETTER_HEADING = re.compile(r"^\s*[A-H](?:\.\d{1,2})?\.?\s+[A-Z][^.!?]{2,80}$")
_BRACKET_LABEL = re.compile(r"^[ \t]*\[(?P<n>\d{1,4})\][ \t]*", re.MULTILINE)
_BRACKET_LABEL_ANY = re.compile(r"(?:^|(?<=\s))\[(?P<n>\d{1,4})\]\s*")
_DOT_LABEL_LINE = re.compile(r"^[ \t]*(?P<n>\d{1,4})[.)](?:[ \t]+|$)", re.MULTILINE)
_DOT_LABEL_ANY = re.compile(rf"(?:^|(?<=\s))(?P<n>\d{{1,4}})[.)]\s+(?={patterns.CAP})")
_BARE_LABEL_LINE = re.compile(rf"^[ \t]*(?P<n>\d{{1,4}})[ \t]+(?={patterns.CAP})", re.MULTILINE)
_ALPHA_LABEL = re.compile(r"^[ \t]*\[(?P<n>[A-Za-z][A-Za-z+]{0,7}\d{2,4}[a-z]?)\][ \t]*", re.MULTILINE)
_ENTRY_IN_LINE = re.compile(
    rf"(?<=[.)])\s+(?={patterns.SURNAME}\s*,\s*(?:{patterns.CAP}\.|{patterns.CAP}[a-zäöüßé]+\s*(?:\(|,|;|/|und\b|and\b|&)))"
)
# How far after a heading the list is sampled to tell a reference list from a chapter.
_HEADING_SAMPLE = 3000


# A heading misspelt by one letter ("REFFERENCES", "Refrences", "Bibliograpy"): only a
# line that is that one word alone (optionally numbered), never a running head (the
# layout drops those) nor a sentence, and it must still be followed by a list.
_MISSPELT = tuple(name.translate(_UNACCENTED) for name in ONE_WORD_HEADINGS)
_ONE_WORD_HEADING = re.compile(r"^\s*(?:(?:\d{1,2}|[IVX]{1,4})\.?\s+)?(?P<w>[^\W\d_]{8,24})\s*:?\s*$")


def _one_edit_apart(a: str, b: str) -> bool:
    """One letter inserted, dropped, replaced, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[i + 1:] == shorter[i:]


def _is_heading(line: str) -> bool:
    if _HEADING.match(line):
        return True
    word = _ONE_WORD_HEADING.match(line)
    if word is None or not (word["w"].isupper() or word["w"].istitle()):
        return False
    folded = word["w"].casefold()
    # The first letter is kept: "Preferences" is a word of its own, not a misspelling.
    return any(folded[0] == known[0] and _one_edit_apart(folded, known) for known in _MISSPELT)


def _heading_score(text: str) -> int:
    """How much the text after a heading looks like a reference list: year-ish items."""
    sample = text[:_HEADING_SAMPLE]
    return len(patterns.ANY_YEAR.findall(sample)) + 2 * len(
        [line for line in sample.split("\n") if patterns.ENTRY_LINE_START.match(line)
         or patterns.GIVEN_FIRST_START.match(line) or _BRACKET_LABEL.match(line)
         or _ALPHA_LABEL.match(line) or _DOT_LABEL_LINE.match(line)]
    )


def _is_stop(line: str, previous_blank: bool) -> bool:
    if _STOP_HEADING.match(line):
        return True
    return previous_blank and bool(_LETTER_HEADING.match(line)) and not patterns.ANY_YEAR.search(line)


def find_reference_section(
    pages: list[tuple[int, str]],
) -> tuple[list[tuple[int, str]], str, int | None]:
    """Split the pages into the body (before the list and after it) and the list text.

    Every line that is a reference heading on its own is a candidate; the one followed
    by the most reference-like text wins (ties: the later one), so a table of contents,
    an early "Literature" chapter or a table cell that says "Bibliography" does not.
    The list ends at an appendix, a declaration or a similar heading; what follows it
    is body again (an appendix may cite too).
    """
    lines: list[tuple[int, str]] = []  # (page index, line)
    page_first: set[int] = set()  # indices of each page's first line
    for page_index, (_, text) in enumerate(pages):
        page_first.add(len(lines))
        lines.extend((page_index, line) for line in text.split("\n"))
    best: tuple[int, int] | None = None  # (score, line index)
    for index, (_, line) in enumerate(lines):
        if len(line) <= 60 and _is_heading(line):
            following = "\n".join(text for _, text in lines[index + 1:index + 80])
            score = _heading_score(following)
            if score >= 3 and (best is None or score >= best[0]):
                best = (score, index)
    if best is None:
        return pages, "", None
    heading = best[1]
    end = len(lines)
    for index in range(heading + 1, len(lines)):
        opens = index in page_first or not lines[index - 1][1].strip()
        if index > heading + 3 and _is_stop(lines[index][1], opens):
            end = index
            break
    notes = _footnotes_in(lines, heading + 1, end)
    reference_text = "\n".join(line for i, (_, line) in enumerate(lines) if heading < i < end and i not in notes)
    body: list[tuple[int, str]] = []
    for page_index, (number, _) in enumerate(pages):
        kept = [line for i, (p, line) in enumerate(lines)
                if p == page_index and (not heading <= i < end or i in notes)]
        if kept:
            body.append((number, "\n".join(kept)))
    return body, reference_text, pages[lines[heading][0]][0]


_GLUED_WORD = re.compile(r"[A-Z][a-z]")


def _opens_footnote(line: str) -> bool:
    """A footnote's first line by the layout's rule (:data:`layout.FOOTNOTE_START`), with
    a plain number glued to the text ("19The Kaggle ..."): a list's own labels ("19.",
    "[19]", "19 Smith") never are."""
    line = line.lstrip()
    start = layout.FOOTNOTE_START.match(line)
    return start is not None and (start["number"] is None or bool(_GLUED_WORD.match(line, start.end("number"))))


def _footnotes_in(lines: list[tuple[int, str]], start: int, end: int) -> set[int]:
    """Lines of ``start:end`` that are a footnote closing a page (the layout puts a
    page's footnotes last): on the page where the list begins, a note of the body text
    ("19The Kaggle competitions. See Wang et al. (2020).") would otherwise be read as
    the tail of a reference entry, and its citation lost."""
    notes: set[int] = set()
    index = start
    while index < end:
        page = lines[index][0]
        stop = index
        while stop < end and lines[stop][0] == page:
            stop += 1
        # The page's last paragraph inside the list, if it opens like a footnote.
        first = stop
        while first > index and lines[first - 1][1].strip():
            first -= 1
        if index < first < stop and _opens_footnote(lines[first][1]):
            notes.update(range(first, stop))
        index = stop
    return notes


# A list labelled "[n]" at line starts may skip this many numbers where an entry was
# not read (a line lost at a page edge): the chain goes on, and the gap is reported.
_MAX_LABEL_GAP = 25


def _longest_chain(matches: list[tuple[int, int, str]],
                   max_gap: int = 1, step: int = 1) -> list[tuple[int, int, str]]:
    """The longest run of labels numbered n, n+1, n+2 ... in reading order (n, n-1, ...
    with ``step`` -1); with ``max_gap`` > 1 a run may skip up to ``max_gap - 1`` numbers
    between two labels. O(len(matches) * max_gap)."""
    best_end: dict[int, tuple[int, int]] = {}  # number -> (chain length, match index)
    back: list[int] = []
    top = (0, -1)
    for index, (_, _, label) in enumerate(matches):
        number = int(label)
        before = max((best_end[number - k * step] for k in range(1, max_gap + 1)
                      if number - k * step in best_end), default=None)
        length = before[0] + 1 if before else 1
        back.append(before[1] if before else -1)
        if length > best_end.get(number, (0, -1))[0]:
            best_end[number] = (length, index)
        if length > top[0]:
            top = (length, index)
    chain: list[tuple[int, int, str]] = []
    index = top[1]
    while index >= 0:
        chain.append(matches[index])
        index = back[index]
    return chain[::-1]


def _split_numbered(text: str) -> list[tuple[str, str]] | None:
    """Entries of a numbered list as (label, text), if the list is numbered n, n+1, ...

    Labels at a line start are tried first ("[12]", "12.", "12 Smith"), then anywhere
    (a list flattened into one line). The longest consecutive chain wins, so "vol. 3."
    or "4. Aufl." inside an entry does not cut it, and a list whose first page was
    missed still splits; "[n]" labels may count down too (a list newest first).
    """
    for pattern in (_ALPHA_LABEL, _BRACKET_LABEL, _DOT_LABEL_LINE, _BRACKET_LABEL_ANY,
                    _DOT_LABEL_ANY, _BARE_LABEL_LINE):
        found = [(m.start(), m.end(), m["n"]) for m in pattern.finditer(text)
                 if pattern is _ALPHA_LABEL or not re.fullmatch(patterns.YEAR, m["n"])]
        if pattern is _ALPHA_LABEL:
            bounds = found if len(found) >= 2 else []
        else:
            bounds = _longest_chain(found, _MAX_LABEL_GAP if pattern is _BRACKET_LABEL else 1)
            if pattern is _BRACKET_LABEL and len(bounds) < len(found):
                # A list sorted newest first counts down: "[412]", "[411]", ...
                down = _longest_chain(found, _MAX_LABEL_GAP, step=-1)
                bounds = down if len(down) >= 5 and len(down) > len(bounds) else bounds
        if len(bounds) >= 2 and (pattern is not _BARE_LABEL_LINE or len(bounds) >= 5):
            return [
                (label, " ".join(text[end:(bounds[i + 1][0] if i + 1 < len(bounds) else len(text))].split()))
                for i, (_, end, label) in enumerate(bounds)
            ]
    return None


# Software named in lower case: "pdfplumber. 2023. ..."
_SOFTWARE = re.compile(rf"^[\w.-]{{2,40}}\.\s+{patterns.YEAR}")


def _starts_entry(text: str) -> bool:
    """Whether a paragraph can open a reference entry (not a wrapped continuation)."""
    stripped = text.lstrip()
    if not stripped:
        return False
    if stripped[0].isupper() or stripped[0] in "[„“\"'(":
        return True
    # "van der Berg, A." and software named in lower case
    return stripped.split(" ", 1)[0].casefold() in patterns.PARTICLES or bool(_SOFTWARE.match(stripped))


_NAME_WORD = re.compile(rf"^(?:{patterns.CAP}[\w'’.-]*|[A-Z]{{1,3}}\.?|and|&|und|et|al\.?|eds?\.?|"
                        rf"{patterns.PARTICLE_WORD})$")


def _looks_like_authors(paragraph: str) -> bool:
    """Whether a paragraph opens with names ("Jeffrey Dean and Sanjay Ghemawat. 2004."),
    not with a title wrapped from the entry before ("Simplified data processing ...")."""
    head = paragraph.lstrip()
    if head[:1] == "[" or _SOFTWARE.match(head):
        return True
    segment = re.split(r"(?<![A-Z])\.\s|\(|:|\d", head, maxsplit=1)[0]
    words = [w for w in re.split(r"[\s,;]+", segment) if w][:12]
    if not words:
        return False
    return sum(1 for w in words if _NAME_WORD.match(w)) >= 0.6 * len(words)


def _split_author_year(text: str) -> list[str]:
    """Author-year entries: a paragraph each (geometry put the blank lines there), a
    paragraph that cannot open an entry joined to the one before, and a surname-led
    line or run after a complete entry inside a paragraph.

    Linear in the text: a list with no cue to cut on (no year in its entries, labels
    counting down, a line per entry with nothing at its start) is one long entry, and
    it is read without copying or searching again what was read before (issue 27).
    """
    groups: list[list[str]] = []  # paragraphs joined into one, read as one
    dated: list[bool] = []  # whether a group's paragraphs hold a year
    for paragraph in re.split(r"\n\s*\n", text):
        if not paragraph.strip():
            continue
        if groups and (
            not _starts_entry(paragraph)
            or not _looks_like_authors(paragraph)
            or not dated[-1]
            # A suffix of the joined text without its "\n" lies in the last paragraph.
            or groups[-1][-1].rstrip().endswith(("-", ",", "&", " and", " und"))
        ):
            groups[-1].append(paragraph)
            dated[-1] = dated[-1] or bool(patterns.ANY_YEAR.search(paragraph))
        else:
            groups.append([paragraph])
            dated.append(bool(patterns.ANY_YEAR.search(paragraph)))
    texts: list[str] = []
    for group in groups:
        current = _Growing()
        previous_line = ""
        for line in "\n".join(group).split("\n"):
            line = line.strip()
            if not line:
                continue
            if (
                current
                and current.has_year()
                and previous_line.endswith(".")
                and (patterns.ENTRY_LINE_START.match(line) or patterns.GIVEN_FIRST_START.match(line))
                and line.split(" ", 1)[0].casefold() not in patterns.NOT_SURNAMES
            ):
                texts.append(current.text())
                current = _Growing()
            # Several entries run together on one line (a PDF block joined into one).
            position = 0
            for cut in _ENTRY_IN_LINE.finditer(line):
                piece = line[position:cut.start()]
                # A space joins them: the candidate holds a year if either part does.
                if current.has_year() or patterns.ANY_YEAR.search(piece):
                    texts.append(f"{current.text()} {piece}".strip())
                    current = _Growing()
                    position = cut.end()
            current.add(line[position:])
            previous_line = line
        if current:
            texts.append(current.text())
    return [" ".join(entry.split()) for entry in texts if len(entry.strip()) > 3]


_HYPHENATED_END = re.compile(r"[^\W\d_]-$")
# A year match spans four digits, a letter and the character after them: one starting
# more than this far from the end cannot change when a hyphen ends the text and the
# next line is glued on.
_YEAR_REACH = 7


class _Growing:
    """An entry's text as it grows line by line, a word hyphenated at the line end
    joined ("Bhagavat-" "ula"), other lines by a space: the lines are kept in a list
    and joined once, and :meth:`has_year` searches only what came since it was last
    asked, so an entry of n lines costs O(n) however long it gets, not O(n²)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._dated = False  # a year was found that later lines cannot undo
        self._clean = 0  # no year starts before this offset, nor can one later

    def __bool__(self) -> bool:
        return self._length > 0

    def _suffix(self, count: int) -> str:
        """The last ``count`` characters (what was added since the last search)."""
        taken: list[str] = []
        need = count
        for part in reversed(self._parts):
            if need <= 0:
                break
            taken.append(part[-need:] if len(part) > need else part)
            need -= len(part)
        return "".join(reversed(taken))

    def add(self, line: str) -> None:
        if not self._length:
            self._parts, self._length = [line], len(line)
        elif _HYPHENATED_END.search(self._suffix(3)) and line[:1].islower():
            self._parts[-1] = self._parts[-1][:-1]  # "Bhagavat-" "ula"
            self._parts.append(line)
            self._length += len(line) - 1
        else:
            self._parts += [" ", line]
            self._length += 1 + len(line)

    def has_year(self) -> bool:
        """Whether the text holds a year (:data:`patterns.ANY_YEAR`), as a search of the
        whole text would say."""
        if self._dated:
            return True
        start = max(0, self._clean - 1)  # one character before, for the look-behind
        window = self._suffix(self._length - start)
        found = patterns.ANY_YEAR.search(window, self._clean - start)
        if found is not None:
            self._dated = start + found.start() + _YEAR_REACH <= self._length
            return True
        self._clean = max(self._clean, self._length - _YEAR_REACH + 1)
        return False

    def text(self) -> str:
        return "".join(self._parts)


def parse_reference_list(text: str) -> tuple[model.ReferenceEntry, ...]:
    """Split the text after the reference heading into entries and parse each one."""
    numbered = _split_numbered(text)
    if numbered is not None:
        return tuple(entries.parse_entry(t, i, label) for i, (label, t) in enumerate(numbered, 1))
    return tuple(entries.parse_entry(t, i) for i, t in enumerate(_split_author_year(text), 1))

