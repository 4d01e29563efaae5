"""Citations in footnotes, as German humanities and law theses cite.

The body sentence carries a raised number ("... deutlich.¹") and the note at the page
bottom names the work: the full reference at first mention ("Vgl. Müller, Jana:
Gründächer in der Stadt, Berlin 2019, S. 45."), later a short form ("Müller 2019, S. 47
f.", "Schmidt (2018), S. 12 ff.", "Koch, Wasserhaushalt urbaner Böden, S. 60."), "Ebd."
(the work cited just before), "a.a.O." (the work of that author cited before) or
"Ders."/"Dies." (the author cited just before, maybe another work), several works
separated by ";". What such a citation supports is the body sentence, not the note.

The extraction sees page text only, with each page's footnotes last (the layout puts
them there, :func:`citerun.pipeline.layout_reading.read_document`). :func:`scan` finds them:
the page's last lines that open with consecutive note numbers, after a paragraph
break, the first of them marked in the body of its page or the page before. It cuts
them out of the body and reads each note's citations in document order, so "Ebd." and
"a.a.O." resolve against the notes before; a short title or "a.a.O." may also resolve
against the reference list. :func:`pair` ties each note to the raised mark of its
number in the body. Each citation's :class:`~citerun.pipeline.citations.model.Ref` is
keyed ``mueller2019`` (the reference list's author-year key) when a year is known, so
the mapping finds the entry by surname and year. Every pattern here reads one note
part of bounded length; the whole is linear in the text.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import re

import rapidfuzz.fuzz

from citerun.pipeline import layout, normalize
from citerun.pipeline.citations import authors, model, patterns

# A note's first line: its number, plain ("12 Vgl. ...") or raised ("¹² Vgl. ..."), then
# text; not "12.5", "3)" or a year.
_RAISED = layout.SUPERSCRIPT_DIGITS
_FROM_RAISED = str.maketrans(_RAISED, "0123456789")
_NOTE_OPEN = re.compile(
    rf"^\s*(?:(?P<plain>[1-9]\d{{0,2}})|(?P<raised>[{_RAISED[1:]}][{_RAISED}]{{0,2}}))"
    rf"(?![\d{_RAISED}.,;:)\]/%-])\s*(?=\S)")
# A raised mark in the body, glued to the word before it.
_MARK = re.compile(rf"(?<=[^\s{_RAISED}])(?P<n>[{_RAISED}]{{1,3}})(?![{_RAISED}])")
# Longer notes are read only this far: a note is a sentence or two, a hostile one is not.
MAX_NOTE_CHARS = 2000
MAX_PART_CHARS = 600
# Notes of one page: a page holds a few dozen at most.
_MAX_NOTES_PER_PAGE = 80

# A page prefix (patterns.PAGE_PREFIXES) or a margin number's / column's.
_LOC_PREFIX = rf"(?P<prefix>{patterns.PAGE_PREFIX}|Sp\.|Rn\.|Rdnr\.|Rdn\.|Randnr\.|Rz\.)"
_LOCATOR = re.compile(rf"(?:,\s*|\s+|^){_LOC_PREFIX}\s*(?P<loc>{patterns.PAGES})\s*\.?\s*$")
_PAGE_PREFIXES = frozenset(patterns.PAGE_PREFIXES)
_IBID = re.compile(r"(?<![\w.])(?:ebd|ebenda|ibid|ibidem|ib)(?:\.|(?![\w.]))", re.IGNORECASE)
_SAME_AUTHOR = re.compile(
    r"(?<![\w.])(?:ders\.|dies\.|derselbe|dieselbe|dieselben|idem|eadem)(?=[\s,;]|$)", re.IGNORECASE)
_OP_CIT = re.compile(r"(?<![\w.])(?:a\.\s?a\.\s?O\.?|aaO\.?|op\.\s?cit\.?|loc\.\s?cit\.?)", re.IGNORECASE)
# Words that open a note's part before the work: "Vgl. hierzu", "Siehe auch", "So auch".
_LEAD = re.compile(
    r"^(?:(?:vgl\.|vergleiche|siehe|s\.|so|auch|hierzu|dazu|ferner|etwa|näher|ausführlich|"
    r"grundlegend|kritisch|ähnlich|anders|weiterführend|insbesondere|zum|zur|folgenden|kritik|"
    r"statt|vieler|aller|cf\.|see|also|e\.g\.|z\.\s?b\.)\s+)+", re.IGNORECASE)
_GIVEN = rf"{patterns.CAP}[\w'’-]*\.?(?:\s+{patterns.CAP}[\w'’-]*\.?){{0,2}}"
_INVERTED_NAME = rf"{patterns.SURNAME}\s*,\s*{_GIVEN}"
# The full form: "Müller, Jana: Title, Place 2019" / "Weber, Anna/Fischer, Thomas: Title".
_FULL = re.compile(
    rf"(?:^|(?<=\s))(?P<names>{_INVERTED_NAME}(?:\s*(?:/|und|u\.)\s*{_INVERTED_NAME}){{0,5}})"
    r"\s*:\s*(?P<rest>\S.*)$")
# The short-title form: "Koch, Wasserhaushalt urbaner Böden".
_SHORT_TITLE = re.compile(
    rf"^(?P<names>{patterns.SURNAME}(?:\s*/\s*{patterns.SURNAME}){{0,3}})\s*,\s*(?P<title>[^,]{{3,200}})$")
# The full form with commas: "Müller, Jana, Gründächer in der Stadt, Berlin 2019".
_COMMA_FULL = re.compile(rf"^(?P<surname>{patterns.SURNAME})\s*,\s*{_GIVEN}\s*,\s*(?P<rest>\S.*)$")
_SLASH = re.compile(r"\s*/\s*")
# Title similarity (rapidfuzz, 0-100) at which a short title names a known work.
_TITLE_SIMILARITY = 85.0


@dataclasses.dataclass(frozen=True)
class Cited:
    """One work a note cites: what the mapping reads (``ref``), the locator ("45 f.",
    "Rn. 12"), the part of the note as written and the form it took ("full", "short",
    "title", "ebd", "aao", "ders")."""

    ref: model.Ref
    locator: str | None
    text: str
    form: str


@dataclasses.dataclass(frozen=True)
class Footnote:
    """A note closing ``page``: its number, text and citations; ``unresolved`` are the
    parts that name a work this module could not tell ("Ebd." with nothing before)."""

    number: int
    page: int
    text: str
    cited: tuple[Cited, ...]
    unresolved: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Scan:
    """The body pages with their notes cut out, and the notes in document order."""

    pages: tuple[tuple[int, str], ...]
    notes: tuple[Footnote, ...]

    @property
    def citing(self) -> tuple[Footnote, ...]:
        return tuple(note for note in self.notes if note.cited)


@dataclasses.dataclass(frozen=True)
class _Work:
    ref: model.Ref
    title: str  # folded words of the title (or the whole entry) for short-title matches


def _number(match: re.Match[str]) -> int:
    return int(match["plain"] or match["raised"].translate(_FROM_RAISED))


def _marks(text: str) -> set[int]:
    return {int(m["n"].translate(_FROM_RAISED)) for m in _MARK.finditer(text)}


def _note_block(lines: list[str], marked: collections.abc.Callable[[int], bool]) -> list[tuple[int, int]]:
    """``(line index, number)`` of the notes closing a page: the longest run of lines
    opening with consecutive numbers up to the page's end, its first line after a
    paragraph break and its number marked in the body (``marked``)."""
    opens = [(index, _number(m)) for index, line in enumerate(lines)
             if (m := _NOTE_OPEN.match(line))]
    if not opens:
        return []
    chain = [opens[-1]]
    for index, number in reversed(opens[:-1]):
        if len(chain) >= _MAX_NOTES_PER_PAGE:
            break
        if number == chain[0][1] - 1:
            chain.insert(0, (index, number))
        # Otherwise a wrapped line of a note that opens with a number ("45 f."), or body.
    while chain and not (chain[0][0] > 0 and not lines[chain[0][0] - 1].strip()):
        chain.pop(0)
    if not chain or not marked(chain[0][1]):
        return []
    return chain


def scan(pages: collections.abc.Sequence[tuple[int, str]],
         listed: collections.abc.Sequence[model.ReferenceEntry] = ()) -> Scan:
    """The notes of every page, cut out of its text, with their citations resolved in
    document order (``listed``: the reference list, for short titles and "a.a.O.")."""
    body: list[tuple[int, str]] = []
    raw_notes: list[tuple[int, int, str]] = []  # (number, page, text)
    previous_marks: set[int] = set()
    for page_number, text in pages:
        lines = text.split("\n")
        page_marks = _marks(text)
        block = _note_block(lines, lambda n: n in page_marks or n in previous_marks)
        if not block:
            body.append((page_number, text))
            previous_marks = page_marks
            continue
        start = block[0][0]
        kept = "\n".join(lines[:start]).rstrip()
        body.append((page_number, kept))
        previous_marks = _marks(kept)
        bounds = [index for index, _ in block] + [len(lines)]
        for (index, number), end in zip(block, bounds[1:]):
            opened = _NOTE_OPEN.match(lines[index])
            assert opened is not None
            first = lines[index][opened.end():]
            note = " ".join(" ".join([first, *lines[index + 1:end]]).split())
            raw_notes.append((number, page_number, note))
    return Scan(tuple(body), tuple(_Reader(listed).read(raw_notes)))


def pair(notes: collections.abc.Sequence[Footnote],
         marks: collections.abc.Sequence[tuple[int, int]]) -> dict[int, Footnote]:
    """Which note each raised mark points at: ``marks`` are ``(number, page)`` in
    reading order; the answer maps a mark's index to its note, the note of the mark's
    number on the mark's page or the page after (a note carried over). A note is
    pointed at once."""
    open_notes: dict[tuple[int, int], Footnote] = {(n.number, n.page): n for n in notes}
    paired: dict[int, Footnote] = {}
    for index, (number, page) in enumerate(marks):
        for at in (page, page + 1):
            note = open_notes.pop((number, at), None)
            if note is not None:
                paired[index] = note
                break
    return paired


def _locator(match: re.Match[str]) -> str:
    """ "45 f.", "12-14", "Rn. 15 f.": pages without their prefix, other kinds with it."""
    text = re.sub(r"\s*[-–—]\s*", "-", match["loc"].strip())
    text = re.sub(r"\s*(ff?\.)$", r" \1", text)
    return text if match["prefix"] in _PAGE_PREFIXES else f"{match['prefix']} {text}"


def _parts(note: str) -> list[str]:
    """A note's parts, one work each: split at semicolons outside parentheses."""
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(note):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char == ";" and depth == 0:
            parts.append(note[start:index])
            start = index + 1
    parts.append(note[start:])
    return [part.strip() for part in parts if part.strip()]


def _group(text: str) -> str | None:
    """The author group that ends ``text`` ("Vgl. hierzu Weber/Fischer" -> "Weber und
    Fischer"), read by the same bounded walk the body's markers use; None also for the
    place before a year that follows a title ("Müller, Jana, Gründächer, Berlin 2019")."""
    text = _SLASH.sub(" und ", text.rstrip(" ,(")).rstrip()
    found = authors.authors_before(text, len(text), comma_list=False)
    if found is None:
        return None
    before = text[:found[0]].rstrip()
    if before.endswith(",") and len(before.split()) > 3:
        return None
    return found[1]


class _Reader:
    """Reads notes in order, remembering the works cited so far."""

    def __init__(self, listed: collections.abc.Sequence[model.ReferenceEntry]) -> None:
        self.by_surname: dict[str, list[_Work]] = {}
        for entry in listed:
            if entry.authors:
                key = entry.author_year_key or model.normalize_key(entry.authors[0])
                self._know(_Work(model.Ref(key, entry.authors, entry.year),
                                 normalize.fold_words(entry.text)))
        self.recent: dict[str, model.Ref] = {}  # folded first surname -> last cited work
        self.last: Cited | None = None

    def _know(self, work: _Work) -> None:
        works = self.by_surname.setdefault(normalize.fold(work.ref.authors[0]), [])
        if all(w.ref.key != work.ref.key for w in works):
            works.append(work)

    def read(self, notes: list[tuple[int, int, str]]) -> list[Footnote]:
        read: list[Footnote] = []
        for number, page, text in notes:
            cited: list[Cited] = []
            unresolved: list[str] = []
            for part in _parts(text[:MAX_NOTE_CHARS]):
                found, looked = self._part(part[:MAX_PART_CHARS])
                cited.extend(found)
                if looked and not found:
                    unresolved.append(part)
                for one in found:
                    self.last = one
                    if one.ref.authors:
                        self.recent[normalize.fold(one.ref.authors[0])] = one.ref
            read.append(Footnote(number, page, text, tuple(cited), tuple(unresolved)))
        return read

    def _part(self, part: str) -> tuple[list[Cited], bool]:
        """The works one part cites, and whether it looked like a citation at all."""
        loc_match = _LOCATOR.search(part)
        locator = _locator(loc_match) if loc_match else None
        core = (part[:loc_match.start()] if loc_match else part).strip(" ,.;")
        if _IBID.search(core):
            if self.last is None:
                return [], True
            return [Cited(self.last.ref, locator or self.last.locator, part, "ebd")], False
        same = _SAME_AUTHOR.search(core)
        if same:
            if self.last is None:
                return [], True
            rest = core[same.end():].strip(" ,.")
            ref = self._same_author(self.last.ref, rest)
            return ([Cited(ref, locator, part, "ders")] if ref else []), True
        op_cit = _OP_CIT.search(core)
        if op_cit:
            group = _group(core[:op_cit.start()])
            ref = self._recent(authors.surnames(group)) if group else None
            return ([Cited(ref, locator, part, "aao")] if ref else []), True
        full = _FULL.search(core)
        if full:
            ref = self._full(full)
            if ref is not None:
                return [Cited(ref, locator, part, "full")], True
        for year in patterns.ANY_YEAR.finditer(core):
            group = _group(core[:year.start()])
            refs = authors.author_year_refs(group, year[0]) if group else []
            if refs:
                return [Cited(ref, locator, part, "short") for ref in refs], True
        inverted = _COMMA_FULL.match(_LEAD.sub("", core))
        if inverted:
            ref = self._comma_full(inverted)
            if ref is not None:
                return [Cited(ref, locator, part, "full")], True
        short = _SHORT_TITLE.match(_LEAD.sub("", core))
        if short:
            names = tuple(_SLASH.split(short["names"]))
            ref = self._by_title(names[0], short["title"])
            if ref is not None:
                return [Cited(ref, locator, part, "title")], True
        return [], False

    def _full(self, full: re.Match[str]) -> model.Ref | None:
        names = tuple(name.split(",")[0].strip() for name in
                      re.split(r"\s*(?:/|\bund\b|\bu\.)\s*", full["names"]) if name.strip())
        if not names or normalize.fold(names[0]) in patterns.NOT_SURNAMES:
            return None
        rest = full["rest"]
        years = [m for m in patterns.ANY_YEAR.finditer(rest)]
        if years:
            year = years[-1]
            comma = rest.rfind(",", 0, year.start())
            title = rest[:comma] if comma > 0 else rest[:year.start()]
            key = f"{normalize.fold(names[0])}{year['y']}{year['s'] or ''}"
            ref = model.Ref(key, names, int(year["y"]))
        else:
            title = rest.split(",")[0]
            ref = model.Ref(model.normalize_key(f"{names[0]} {title}")[:60], names, None)
        self._know(_Work(ref, normalize.fold_words(title)))
        return ref

    def _comma_full(self, match: re.Match[str]) -> model.Ref | None:
        """ "Müller, Jana, Gründächer in der Stadt, Berlin 2019": the full form with a
        comma after the given name, its year the last one."""
        years = list(patterns.ANY_YEAR.finditer(match["rest"]))
        surname = match["surname"]
        if not years or normalize.fold(surname) in patterns.NOT_SURNAMES:
            return None
        year = years[-1]
        rest = match["rest"]
        comma = rest.rfind(",", 0, year.start())
        ref = model.Ref(f"{normalize.fold(surname)}{year['y']}{year['s'] or ''}", (surname,),
                        int(year["y"]))
        self._know(_Work(ref, normalize.fold_words(rest[:comma] if comma > 0 else rest)))
        return ref

    def _recent(self, names: collections.abc.Sequence[str]) -> model.Ref | None:
        """The work last cited with this first author, else the list's one work by it."""
        if not names:
            return None
        folded = normalize.fold(names[0])
        if folded in self.recent:
            return self.recent[folded]
        works = self.by_surname.get(folded, [])
        return works[0].ref if len(works) == 1 else None

    def _by_title(self, surname: str, title: str) -> model.Ref | None:
        """The known work by ``surname`` whose title the short title names."""
        works = self.by_surname.get(normalize.fold(surname), [])
        wanted = normalize.fold_words(title)
        if not works or not wanted:
            return None
        best = max(works, key=lambda w: rapidfuzz.fuzz.partial_ratio(wanted, w.title))
        if len(works) == 1 or rapidfuzz.fuzz.partial_ratio(wanted, best.title) >= _TITLE_SIMILARITY:
            return best.ref
        return None

    def _same_author(self, previous: model.Ref, rest: str) -> model.Ref | None:
        """ "Ders., Title", "Dies., Title, 2017", "Ders., a.a.O." or "Ders." alone."""
        if not previous.authors:
            return None
        if not rest:
            return previous
        if _OP_CIT.search(rest):
            return self._recent(previous.authors)
        years = list(patterns.ANY_YEAR.finditer(rest))
        if years:
            year = years[-1]
            key = f"{normalize.fold(previous.authors[0])}{year['y']}{year['s'] or ''}"
            return model.Ref(key, previous.authors, int(year["y"]))
        return self._by_title(previous.authors[0], rest.split(",")[0])
