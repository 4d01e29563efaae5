"""A BibTeX/BibLaTeX library (Better BibTeX, JabRef, Mendeley, Zotero) into library items.

bibtexparser 2 splits the file into entries (a malformed entry becomes a failed block,
which is reported as :class:`~.model.Skipped`, never fatal to the rest) and resolves
``@string`` macros; names are split with its BibTeX name rules ("von Last, Jr, First",
"First von Last", ``{Institution Name}`` whole), and LaTeX in titles and names
(``{\\"u}``, ``\\&``, protective braces) becomes text through pylatexenc. The ``file``
field is read in the three shapes reference managers write it (see :func:`file_paths`)
because it states which PDF belongs to which entry. A file over the library's
``max_bytes`` or with more than its ``max_items`` entries (:class:`~.model.LibraryLimits`)
is refused before parsing, so its cost is bounded (50,000 short entries parse in about
6 s); the fields decoded and names read of each entry are bounded by
:class:`~.limits.BibLimits`. Both are settings.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from bibtexparser import model as bibmodel
from bibtexparser.entrypoint import parse_string
from bibtexparser.library import Library
from bibtexparser.middlewares.fieldkeys import NormalizeFieldKeys
from bibtexparser.middlewares.names import parse_single_name_into_parts, split_multiple_persons_names
from pylatexenc import latex2text  # type: ignore[import-untyped]

from citerun.pipeline import normalize
from citerun.pipeline.writer.limits import BibLimits
from citerun.pipeline.writer.model import LibraryItem, LibraryLimits, Skipped, WriterFileError

_ENTRY_START = re.compile(r"@\s*([A-Za-z]+)\s*[{(]")
_NOT_ENTRIES = frozenset({"string", "comment", "preamble"})
# A JabRef/Zotero file type: "PDF", "pdf", "application/pdf".
_FILE_TYPE = re.compile(r"[A-Za-z0-9.+-]{1,40}(?:/[A-Za-z0-9.+-]{1,60})?")
_SPACES = re.compile(r"\s+")
_TO_TEXT = latex2text.LatexNodes2Text(math_mode="text", strict_latex_spaces=False)

# bibtexparser logs each failed block at warning level; those are reported as Skipped.
logging.getLogger("bibtexparser").setLevel(logging.ERROR)


def latex_text(value: str, most: int = BibLimits().max_field_chars) -> str:
    """A field's LaTeX as plain text, whitespace collapsed ("{\\"u}ber \\& {BERT}" ->
    "über & BERT"), its first ``most`` characters. Deep nesting (which pylatexenc would
    recurse into) is flattened first, and square brackets that do not pair up read as
    parentheses: pylatexenc tries each ``[`` after a macro as an optional argument and, where
    none closes, backtracks through every way of nesting them (two thousand bytes of
    ``\\cite[`` ran for minutes; issue 48, a fuzz finding)."""
    value = value[:most * 10]
    if _depth(value) > 20:
        value = value.replace("{", "").replace("}", "")
    value = value[:most]
    if "[" in value and not _brackets_pair(value):
        value = value.replace("[", "(").replace("]", ")")
    try:
        text = str(_TO_TEXT.latex_to_text(value))
    except (RecursionError, ValueError, IndexError):
        text = re.sub(r"\\[A-Za-z]+|[{}\\$]", "", value)
    return _SPACES.sub(" ", text).strip()


def _brackets_pair(value: str, deepest: int = 4) -> bool:
    """Whether every ``[`` of ``value`` is closed by a later ``]``, never more than
    ``deepest`` open at once."""
    depth = 0
    for char in value:
        if char == "[":
            depth += 1
            if depth > deepest:
                return False
        elif char == "]" and depth:
            depth -= 1
    return depth == 0


def _depth(value: str) -> int:
    depth = deepest = 0
    for char in value:
        if char == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif char == "}":
            depth = max(0, depth - 1)
    return deepest


def surnames(names: str, limits: BibLimits = BibLimits()) -> tuple[str, ...]:
    """The surnames of a BibTeX name list (the first ``limits.max_names``), particles
    kept ("van Gogh"); a braced name (``{World Health Organization}``) is one whole name."""
    found: list[str] = []
    most = limits.max_field_chars
    for name in split_multiple_persons_names(names[: most * 10])[:limits.max_names]:
        if name.strip().lower() == "others":
            continue
        try:
            parts = parse_single_name_into_parts(name, strict=False)
        except (ValueError, IndexError):
            continue
        surname = latex_text(" ".join([*parts.von, *parts.last]) or " ".join(parts.first), most)
        if surname:
            found.append(surname)
    return tuple(found)


def year_of(entry: bibmodel.Entry) -> int | None:
    """The year from ``year`` ("2020", "{2020}") or biblatex's ``date`` ("2019-05-02")."""
    for key in ("year", "date"):
        year = normalize.field_year(_field(entry, key))
        if year is not None:
            return year
    return None


def doi_of(value: str | None) -> str | None:
    """A DOI without its resolver prefix, LaTeX escapes undone (``\\_`` -> ``_``)."""
    if not value:
        return None
    text = normalize.DOI_RESOLVER.sub("", value.strip().replace("\\_", "_").replace("{", "").replace("}", ""))
    match = normalize.FIELD_DOI.search(text)
    return match.group(0).rstrip(".,;") if match else None


def _split_unescaped(text: str, sep: str) -> list[str]:
    """``text`` split at each ``sep`` not escaped by a backslash (escapes kept)."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            current.append(text[i:i + 2])
            i += 2
            continue
        if char == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(path: str) -> str:
    r"""``C\:\\Users`` -> ``C:\Users``: a backslash escapes ``\ : ;``; others stay."""
    return re.sub(r"\\([\\:;])", r"\1", path.replace(r"\_", "_").replace(r"\&", "&")).strip()


def file_paths(value: str) -> tuple[str, ...]:
    r"""The paths of a ``file`` field, in every shape reference managers write.

    - Zotero (Better BibTeX): a path, several separated by ``;``, ``:`` and ``\``
      escaped: ``files/12/Smith - 2020.pdf``, ``C\:\\Users\\me\\x.pdf``;
    - JabRef and Zotero's own export: ``Description:path:Type``
      (``:papers/x.pdf:PDF``, ``Full Text PDF:files/3/x.pdf:application/pdf``);
    - Mendeley: JabRef's shape with its backslash written ``$\backslash$``
      (``:C$\backslash$:/Users/me/x.pdf:pdf``).
    """
    value = value.replace(r"$\backslash$", "\\").replace("{", "").replace("}", "")
    paths: list[str] = []
    for part in _split_unescaped(value, ";"):
        fields = _split_unescaped(part, ":")
        if len(fields) >= 3 and _FILE_TYPE.fullmatch(fields[-1].strip()):
            raw = ":".join(fields[1:-1])
        elif len(fields) == 2 and len(fields[0].strip()) == 1 and fields[0].strip().isalpha():
            raw = ":".join(fields)  # an unescaped drive letter: "C:/x.pdf"
        elif len(fields) == 2 and _FILE_TYPE.fullmatch(fields[1].strip()) and "." in fields[0]:
            raw = fields[0]  # "path:PDF"
        elif len(fields) == 2:
            raw = fields[1]  # "Description:path"
        else:
            raw = ":".join(fields)
        path = _unescape(raw)
        if path:
            paths.append(path)
    return tuple(dict.fromkeys(paths))


def _field(entry: bibmodel.Entry, key: str) -> str | None:
    field = entry.fields_dict.get(key)
    if field is None or not isinstance(field.value, str):
        return None
    return field.value


def item_of(entry: bibmodel.Entry, limits: BibLimits = BibLimits(),
            memo: dict[tuple[str, str], Any] | None = None) -> LibraryItem:
    """One parsed entry as a library item. ``memo`` keeps what a library's entries share
    (a crossref parent's names, an @string's title) decoded once for all of them."""
    most = limits.max_field_chars
    seen: dict[tuple[str, str], Any] = {} if memo is None else memo

    def once(kind: str, value: str, decode: Callable[[str], Any]) -> Any:
        if (kind, value) not in seen:
            seen[(kind, value)] = decode(value)
        return seen[(kind, value)]

    names = _field(entry, "author") or _field(entry, "editor") or ""
    title = _field(entry, "title")
    files = _field(entry, "file") or ""
    return LibraryItem(
        key=entry.key.strip(),
        title=once("title", title, lambda t: latex_text(t, most) or None) if title else None,
        authors=once("names", names, lambda n: surnames(n, limits)),
        year=year_of(entry), doi=doi_of(_field(entry, "doi")),
        files=once("files", files, lambda f: file_paths(f[: most * 10])) if files else (),
        kind=entry.entry_type.lower() or None, origin="bibtex",
        arxiv=_plain(arxiv_of(entry), most), pmid=_plain(_field(entry, "pmid"), most),
        pmcid=_plain(_field(entry, "pmcid"), most), isbn=_plain(_field(entry, "isbn"), most),
        url=_plain(_field(entry, "url"), most))


def arxiv_of(entry: bibmodel.Entry) -> str | None:
    """The arXiv id an entry states: biblatex's ``eprint`` with ``eprinttype = arxiv``,
    BibTeX's with ``archiveprefix = arXiv`` (or none: arXiv's own export), Mendeley's
    ``arxivid``; as written (the open-access lookup normalises it)."""
    own = _field(entry, "arxivid")
    if own:
        return own
    eprint = _field(entry, "eprint")
    kind = (_field(entry, "eprinttype") or _field(entry, "archiveprefix") or "arxiv")
    return eprint if eprint and "arxiv" in kind.lower() else None


def _plain(value: str | None, most: int) -> str | None:
    """A field's value without braces and surrounding space, cut to ``most``."""
    text = value.replace("{", "").replace("}", "").strip()[:most] if value else ""
    return text or None


def _chars(item: LibraryItem) -> int:
    """The characters an item gives to store: key, title, surnames, file paths, ids."""
    return (len(item.key) + len(item.title or "") + sum(map(len, item.authors))
            + sum(map(len, item.files)) + len(item.doi or "") + sum(
                len(x or "") for x in (item.arxiv, item.pmid, item.pmcid, item.isbn, item.url)))


def _line(block: bibmodel.Block) -> str:
    """Where a block starts, 1-based as an editor shows it."""
    return f"line {block.start_line + 1}" if block.start_line is not None else "line ?"


def _error_text(error: Exception) -> str:
    """bibtexparser's reason for a failed block, one line."""
    text = getattr(error, "abort_reason", None) or getattr(error, "message", None) or str(error)
    return _SPACES.sub(" ", str(text)).strip()[:200] or type(error).__name__


def read_bibtex(text: str, limits: LibraryLimits = LibraryLimits(),
                bib_limits: BibLimits = BibLimits()
                ) -> tuple[tuple[LibraryItem, ...], tuple[Skipped, ...]]:
    """Every entry of a .bib as a library item, and what was skipped with the reason.

    Raises :class:`~.model.WriterFileError` for a file over ``limits.max_bytes`` or with
    more than ``limits.max_items`` entries (counted before parsing). A malformed entry or
    a second entry under a key already seen is skipped (the first one is kept).
    ``bib_limits`` bound what is read of each entry.
    """
    max_bytes, max_entries = limits.max_bytes, limits.max_items
    size = len(text.encode("utf-8", errors="replace")) if len(text) * 4 > max_bytes else len(text)
    if size > max_bytes:
        raise WriterFileError(f".bib file of {size:,} bytes is over the limit of {max_bytes:,}")
    entries = sum(1 for m in _ENTRY_START.finditer(text) if m.group(1).lower() not in _NOT_ENTRIES)
    if entries > max_entries:
        raise WriterFileError(
            f".bib file has {entries:,} entries, over the limit of {max_entries:,}")
    try:
        # Field names are case-insensitive in BibTeX and biber: JabRef 2.x and BibDesk
        # write "Title = {...}", "Author", "File". @string macros are resolved by
        # bibtexparser's default stack (their names case-insensitively, as BibTeX does).
        library = parse_string(text, append_middleware=[NormalizeFieldKeys()])
    except (RecursionError, ValueError, IndexError) as err:
        raise WriterFileError(f".bib file cannot be parsed: {err}") from None
    items: list[LibraryItem] = []
    skipped: list[Skipped] = []
    by_key = {entry.key.strip().lower(): entry for entry in library.entries}
    _concatenate(library, bib_limits.max_field_chars * 10, bib_limits.max_joined_chars)
    for block in library.failed_blocks:
        where = _line(block)
        raw = _SPACES.sub(" ", block.raw or "")[:200]
        if isinstance(block, bibmodel.DuplicateBlockKeyBlock):
            reason = f"a second entry with the key {block.key!r}; the first is kept"
        else:
            reason = f"malformed entry: {_error_text(block.error)}"
        skipped.append(Skipped(where=where, text=raw, reason=reason))
    memo: dict[tuple[str, str], Any] = {}
    given, most = 0, max(bib_limits.max_items_chars, 2 * len(text))
    for entry in library.entries:
        if not entry.key.strip():
            skipped.append(Skipped(where=_line(entry),
                                   text=_SPACES.sub(" ", entry.raw or "")[:200],
                                   reason="an entry without a key"))
            continue
        item = item_of(_with_crossref(entry, by_key), bib_limits, memo)
        given += _chars(item)
        if given > most:
            raise WriterFileError(
                f".bib file's entries give over {most:,} characters of keys, titles, names and "
                "file paths, over the limit (BibLimits.max_items_chars, "
                "CITERUN_LIMITS__WRITER__BIB__MAX_ITEMS_CHARS, or twice the file's "
                f"characters): its entries repeat big @string macros or a crossref parent "
                f"(at {item.key!r}, {_line(entry)})")
        items.append(item)
    return tuple(items), tuple(skipped)


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _concatenate(library: Library, longest: int, most_joined: int) -> None:
    """Resolves BibTeX's ``#`` concatenations (``"Proc. " # conf # { 2020}``), which
    bibtexparser leaves as written: each part a quoted or braced string, a number, or an
    ``@string`` macro (names case-insensitive, the month macros predefined as BibTeX
    has them; an ``@string`` may join those defined before it, as in BibTeX). A value
    with an unknown macro, or over ``longest`` characters as written, is kept as
    written. Raises :class:`~.model.WriterFileError` for a value that would join to over
    ``most_joined`` characters (``BibLimits.max_joined_chars``), before joining it: a
    field naming a big ``@string`` a thousand times, or an ``@string`` doubling itself,
    was gigabytes from a small file (issue 48)."""
    macros = {m: m.capitalize() for m in _MONTHS}
    for key, string in library.strings_dict.items():
        written = str(string.value).strip()
        joined = (_joined(written, macros, most_joined, f"the @string {key!r}")
                  if len(written) <= longest else None)
        macros[key.lower()] = written.strip('"{}') if joined is None else joined
    for entry in library.entries:
        for field in entry.fields:
            value = field.value
            if (not isinstance(value, str) or getattr(field, "enclosing", None) != "no-enclosing"
                    or len(value) > longest):
                continue
            resolved = _joined(value, macros, most_joined,
                               f"the field {field.key!r} of {entry.key!r}")
            if resolved is not None:
                field.value = resolved


def _joined(value: str, macros: dict[str, str], most: int, what: str) -> str | None:
    parts: list[str] = []
    size = 0
    for part in _split_unescaped_outside(value):
        part = part.strip()
        if len(part) >= 2 and part[0] == part[-1] == '"' or part[:1] == "{" and part[-1:] == "}":
            piece = part[1:-1]
        elif part.isdigit():
            piece = part
        elif part.lower() in macros:
            piece = macros[part.lower()]
        else:
            return None
        size += len(piece)
        if size > most:
            raise WriterFileError(
                f"{what} joins @string macros with # into over {most:,} characters, over "
                "the limit (BibLimits.max_joined_chars, "
                "CITERUN_LIMITS__WRITER__BIB__MAX_JOINED_CHARS)")
        parts.append(piece)
    return "".join(parts)


def _split_unescaped_outside(value: str) -> list[str]:
    """``value`` split at each ``#`` outside braces and quotes."""
    parts: list[str] = []
    depth, quoted, start = 0, False, 0
    for i, char in enumerate(value):
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif char == '"' and depth == 0:
            quoted = not quoted
        elif char == "#" and depth == 0 and not quoted:
            parts.append(value[start:i])
            start = i + 1
    parts.append(value[start:])
    return parts


#: Fields a crossref'd parent does not lend its child: they name the parent itself
#: (biber maps the parent's title to the child's booktitle; a DOI, file or id is the
#: parent's own).
_NOT_INHERITED = frozenset({"title", "subtitle", "titleaddon", "shorttitle", "doi", "file",
                            "url", "ids", "crossref", "xref", "key", "entryset", "eprint",
                            "eprinttype", "archiveprefix", "arxivid", "pmid", "pmcid"})


def _with_crossref(entry: bibmodel.Entry, by_key: dict[str, bibmodel.Entry]) -> bibmodel.Entry:
    """The entry with the fields it lacks taken from its ``crossref`` parent (one level,
    as BibTeX resolves it; the key compared case-insensitively): an ``@inproceedings``
    gets its year and editors from the ``@proceedings`` it names."""
    parent_key = _field(entry, "crossref")
    parent = by_key.get(parent_key.strip().lower()) if parent_key else None
    if parent is None or parent is entry:
        return entry
    own = {field.key for field in entry.fields}
    lent = [field for field in parent.fields
            if field.key not in own and field.key not in _NOT_INHERITED]
    if not lent:
        return entry
    return bibmodel.Entry(entry_type=entry.entry_type, key=entry.key,
                          fields=[*entry.fields, *lent], start_line=entry.start_line,
                          raw=entry.raw)
