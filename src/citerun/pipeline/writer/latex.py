"""A LaTeX thesis (a bundle's .tex files and .bib) into a :class:`~.model.WrittenThesis`.

The source states what the printed page only shows: ``\\parencite[45]{smith2020}``
names its library key and its locator. This module finds every cite command of natbib
and biblatex (multi-cites with several ``[pre][post]{keys}`` groups too), the sentence
of the body each stands in (a citation in a footnote, or a ``\\footcite``, stands for the
body sentence the footnote mark is in), and the libraries the thesis names
(``\\bibliography``, ``\\addbibresource``).

TeX is never executed. The reader is a single linear scan with an explicit stack of
groups, not a recursive parser: pylatexenc's walker reads about 70 KB of LaTeX a second
and recurses once per brace group (a file of 2,000 nested braces exhausts Python's
stack), both too costly for a hostile file under the parse stage's 30 s. pylatexenc
still gives the table of text macros (``\\ss``, ``\\ldots``, ``\\alpha``) and bib.py's
decoding of titles. Bounds (:class:`~.limits.LatexLimits`, settings): ``\\input`` chains
at most ``max_depth`` deep, every file and macro expansion read counts against
``max_total_chars``, and any argument is looked for within
:data:`~.latex_tables.ARG_WINDOW` characters, so the work is linear in the text.
What is not read (a path leaving the bundle, a missing file, a file including itself)
is reported as :class:`~.model.Skipped`.

The reader is cut along its seams into sibling modules, each layer on the one before:
``latex_tables`` (bounds, command tables, patterns), ``latex_text`` (arguments, notes,
locators, ``thebibliography``), ``latex_blocks`` (the blocks it writes and how a block
becomes claims), ``latex_scan`` (state, files, the scan), ``latex_commands`` (text and
cite commands), ``latex_macros`` (the thesis's macros and conditionals); this module
dispatches each control sequence and reads a bundle.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator, Mapping, Sequence

from citerun.pipeline.citations import quotations
from citerun.pipeline.pdf import splitting
from citerun.pipeline.writer import bib as bibtex
from citerun.pipeline.writer import latex_main
from citerun.pipeline.writer.formats import LIBRARY_DIR
from citerun.pipeline.writer.latex_blocks import (
    _cut, _Frame, _render, _sentence_for, _with_quotation,
)
from citerun.pipeline.writer.latex_macros import _Macros
from citerun.pipeline.writer.latex_tables import (
    _ACCENTS, _ARG_CONDITIONALS, _BABEL_GERMAN, _BEGIN_DOCUMENT, _CITE_NAME, _CITES, _DECIDED,
    _DEFINITIONS, _DOCUMENT_COMMANDS, _DROPPED, _HEADINGS, _IF_NAME, _INCLUDES,
    _BARE_LENGTH, _LENGTH_REGISTERS, _LOADS, _NAME, _NOT_CITES, _NOTES, _QUOTE_MARKS, _SPECIAL_GERMAN, _TEXT, _TEXT_LAST,
)
from citerun.pipeline.writer.latex_text import (
    _decode, _newlines, _skip_macro_space, _skip_spaces, _Source, clean_claim,
)
from citerun.pipeline.writer.limits import BibLimits, LatexLimits
from citerun.pipeline.writer.model import (
    LibraryItem, LibraryLimits, Skipped, WriterFileError, WrittenCitation, WrittenThesis,
)


class _Reader(_Macros):
    """One scan of a thesis: each control sequence dispatched to what reads it, and
    the result: its citations with their claims and its plain text."""

    # -- macros ------------------------------------------------------------------------

    def macro(self, src: _Source, start: int, depth: int) -> int:
        """Handle the control sequence at ``start`` (its backslash); the position after."""
        text = src.text
        match = _NAME.match(text, start + 1)
        if match is None:
            return start + 1
        name = match.group()
        i = match.end()
        bare = name.rstrip("*")
        if len(name) == 1 and not name.isalpha():
            return self.control_symbol(src, name, i)
        if bare in _CITES:
            return self.cite(src, start, bare, i)
        if name in self.macros:
            return self.expand(src, start, name, i, depth)
        if bare in _INCLUDES:
            return self.include_command(src, start, bare, i, depth)
        if bare in _DEFINITIONS:
            return self.define(src, start, bare, i)
        if bare in _DOCUMENT_COMMANDS:
            return self.define_document_command(src, start, i)
        if bare in _LOADS:
            return self.load(src, start, bare, i, depth)
        if bare in ("IfFileExists", "InputIfFileExists"):
            return self.if_file_exists(src, start, bare, i, depth)
        if bare in _DECIDED or bare in _ARG_CONDITIONALS:
            return self.arg_conditional(src, start, bare, i, depth)
        if bare == "newif":  # \newif\ifdraft: a definition, not a conditional
            found = _NAME.match(text, _skip_spaces(text, i) + 1)
            return found.end() if found and text.startswith("\\", _skip_spaces(text, i)) else i
        if _IF_NAME.fullmatch(bare):
            return self.tex_if(src, bare, i)
        if bare in ("else", "fi"):
            return self.tex_else_fi(src, bare, i)
        if bare == "endinput":
            return len(text)
        if bare in ("bibliography", "addbibresource", "addglobalbib", "addsectionbib"):
            return self.library(src, start, i)
        if bare == "begin":
            return self.begin(src, start, i)
        if bare == "end":
            return self.end(src, start, i)
        if bare in _HEADINGS or bare == "caption":
            return self.titled(src, start, bare, i)
        if bare in _NOTES:
            return self.footnote(src, bare, i)
        if bare in _LENGTH_REGISTERS:  # "\vskip 2mm", "\parindent=0pt"
            found = _BARE_LENGTH.match(text, i)
            return found.end() if found else i
        if bare in ("item", "par", "clearpage", "newpage", "cleardoublepage", "bigskip",
                    "medskip", "smallskip", "appendix"):
            self.brk()
            if bare == "item":
                return self.drop_args(src, "[", i, start)
            return i
        if bare in ("newline", "linebreak"):
            self.emit(" ")
            return i
        if bare in _TEXT_LAST:
            return self.text_last(src, start, bare, i)
        if bare in _DROPPED:
            return self.drop_args(src, _DROPPED[bare], i, start)
        if bare in ("verb", "lstinline", "mintinline"):
            return self.verb(src, bare, i)
        if name in _ACCENTS:  # \c{c}, \v{s}, \H{o}
            return self.accent(text, name, i)
        if bare in _TEXT:
            self.emit(_TEXT[bare])
            return _skip_macro_space(text, i)
        if _CITE_NAME.search(bare) and bare not in _NOT_CITES:
            return self.unknown_cite(src, start, bare, i)
        # Any other macro: its name is dropped, its groups read as text; optional
        # arguments that only place or size ("\\newthought[2cm]") are dropped too.
        return self.layout_args(src, _skip_macro_space(text, i))

    # -- the result ----------------------------------------------------------------------

    def result(self, library: Sequence[LibraryItem]) -> tuple[tuple[WrittenCitation, ...], str]:
        by_key = {item.key: item for item in library}
        citations: list[WrittenCitation] = []
        texts: list[str] = []
        self.wheres: list[str] = []  # where each paragraph of the text stands
        for block in self.blocks:
            text, cuts, cites = _render(block, by_key)
            page_text = clean_claim(_cut(text, 0, len(text), cuts))
            if page_text:
                texts.append(page_text)
                self.wheres.append(self.starts.get(block, self.main))
            if not cites:
                continue
            spans = splitting.sentence_spans(text)
            quoted = quotations.find_quotations(text) if _QUOTE_MARKS.search(text) else []
            span_starts = [s for s, _ in spans]
            quote_starts = [q.start for q in quoted]
            for offset, cite, textual in cites:
                span = _sentence_for(spans, offset, textual)
                if span and quoted:
                    span = _with_quotation(spans, span_starts, quoted, quote_starts, span,
                                           self.limits.max_quoted_chars)
                claim = clean_claim(_cut(text, *span, cuts)) if span else ""
                if not claim:
                    self.skip(cite.where, cite.marker, "a citation with no sentence around it")
                    continue
                citations.append(WrittenCitation(
                    keys=cite.keys, claim=claim, marker=cite.marker, where=cite.where,
                    locator=cite.locator, prenote=cite.prenote, in_footnote=cite.in_footnote))
        if self.not_listed:
            self.skipped.append(Skipped(where=self.main, text="", reason=(
                f"{self.not_listed:,} more things skipped, not listed one by one")))
        return tuple(citations), "\n\n".join(texts)


class _Texts(Mapping[str, str]):
    """The bundle's TeX files decoded when first read: a bundle of 300 MB of chapters
    that the thesis never includes costs no decoding."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self._files = {path: data for path, data in files.items()
                       if path.lower().endswith((".tex", ".ltx", ".sty", ".cls", ".def",
                                                 ".cfg", ".clo"))}
        self._texts: dict[str, str] = {}

    def __getitem__(self, path: str) -> str:
        if path not in self._texts:
            self._texts[path] = _decode(self._files[path])
        return self._texts[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def head(self, path: str) -> str:
        """The file's first 64 KiB, where a ``\\documentclass`` stands."""
        return _decode(self._files[path][:65536])


def _choose_main(files: _Texts, main: str | None) -> str:
    """The main .tex: the one given, else the one :func:`latex_main.find_main` finds."""
    if main is not None:
        path = posixpath.normpath(main.strip().lstrip("/")) if main.strip() else ""
        found = latex_main.named(path, files)
        if found is None:
            raise WriterFileError(f"the main file {main!r} is not in the bundle")
        return found
    return latex_main.find_main(files, files.head)


def read_latex(files: Mapping[str, bytes], main: str | None = None,
               bib: Sequence[LibraryItem] = (),
               limits: LibraryLimits = LibraryLimits(),
               latex_limits: LatexLimits = LatexLimits(),
               bib_limits: BibLimits = BibLimits()) -> WrittenThesis:
    """The thesis in a bundle of LaTeX files (path inside the bundle -> bytes).

    ``main`` names the main .tex (else the one with ``\\documentclass``); ``bib`` are
    library items given besides the .bib files the thesis names. A key no library holds
    stays a citation (it is reported unresolved later); ``\\nocite`` is no citation.
    ``limits`` bound each .bib read (``bib_limits`` its entries), ``latex_limits`` the
    reading of the LaTeX.
    """
    texts = _Texts(files)
    main_path = _choose_main(texts, main)
    reader = _Reader(texts, main_path, latex_limits)
    text = texts[main_path]
    has_document = _BEGIN_DOCUMENT.search(text) is not None
    if _BABEL_GERMAN.search(text[:200_000]):
        reader.special = _SPECIAL_GERMAN
    reader.frames.append(_Frame("base", None if has_document else reader.body))
    reader.open_files.append(main_path)
    reader.scan(_Source(main_path, text, _newlines(text)), 0)
    library, skipped = _libraries(files, reader, limits, bib_limits)
    merged: dict[str, LibraryItem] = {}
    for item in (*library, *reader.bibitems, *bib):
        merged.setdefault(item.key, item)
    items = tuple(merged.values())
    citations, plain = reader.result(items)
    return WrittenThesis(format="latex", pages=((1, plain),), citations=citations,
                         library=items, skipped=(*reader.skipped, *skipped),
                         blocks=tuple(reader.wheres))


def _libraries(files: Mapping[str, bytes], reader: _Reader, limits: LibraryLimits,
               bib_limits: BibLimits) -> tuple[list[LibraryItem], list[Skipped]]:
    """The items of the .bib files the thesis names; every .bib of the bundle when it
    names none (a thesis whose \\bibliography sits in a file not read)."""
    bibs = sorted(p for p in files if p.lower().endswith(".bib"))
    paths: list[str] = []
    skipped: list[Skipped] = []
    for name, where in reader.libraries:
        path, why = reader.resolve(name, reader.main, ".bib", bibs)
        if path is None:
            skipped.append(Skipped(where=where, text=name, reason=f"library {name!r}: {why}"))
        elif path not in paths:
            paths.append(path)
    if not reader.libraries:  # the --bib libraries (under LIBRARY_DIR) are read besides
        paths = [p for p in bibs if not p.startswith(LIBRARY_DIR)]
    # The same file given again with --bib (the CLI puts it under library/, read besides):
    # read once, so that its items and its skipped entries are not listed twice.
    given = {files[p] for p in files if p.startswith(LIBRARY_DIR)}
    items: list[LibraryItem] = []
    for path in paths:
        if not path.startswith(LIBRARY_DIR) and files[path] in given:
            continue
        found, skips = bibtex.read_bibtex(_decode(files[path]), limits, bib_limits)
        items.extend(found)
        skipped.extend(dataclasses.replace(s, where=f"{path} {s.where}") for s in skips)
    return items, skipped
