"""The LaTeX reader's state and its linear scan: output to blocks, the bundle's files
resolved and included, groups, comments, paragraph breaks and inline math; what a
control sequence does is left to :meth:`_ReaderBase.macro`."""

from __future__ import annotations

import abc
import posixpath
import re
from collections.abc import Iterable, Mapping

from citerun.pipeline.writer.latex_blocks import _Block, _Frame, _Stream
from citerun.pipeline.writer.latex_tables import (
    ARG_WINDOW, LAYOUT_ARG, _BEGIN_DOCUMENT, _BLANK_REST, _CITE_ANYWHERE,
    _END_DOCUMENT, _GERMAN_SHORTHANDS, _PATH_MACRO, _RAW_TOKEN, _SPACES, _SPECIAL,
)
from citerun.pipeline.writer.latex_text import (
    _newlines, _skip_optional, _Source, _uncomment, math_text,
)
from citerun.pipeline.writer.limits import LatexLimits
from citerun.pipeline.writer.model import LibraryItem, Skipped, WriterFileError


class _ReaderBase(abc.ABC):
    """One scan of a thesis: the state the cite commands, groups and files share,
    its output, the files it reads and the scan itself; what each control
    sequence does is :meth:`macro`, dispatched by :class:`~.latex._Reader`."""

    def __init__(self, files: Mapping[str, str], main: str, limits: LatexLimits) -> None:
        self.files = files
        self.limits = limits
        self.main = main
        self.root = posixpath.dirname(main)
        self.blocks: list[_Block] = []
        self.body = _Stream("body", self.blocks)
        self.frames: list[_Frame] = []
        self.skipped: list[Skipped] = []
        self.libraries: list[tuple[str, str]] = []  # (path, where)
        # name -> (its arguments as (kind, default): "m" mandatory, "o" optional without
        # a default, "O" optional with one, "s" a star; its body)
        self.macros: dict[str, tuple[tuple[tuple[str, str | None], ...], str]] = {}
        self.open_files: list[str] = []
        self.includes = 0
        self.loaded: set[str] = set()  # the bundle's .sty and .cls files read
        self.in_package = 0  # reading a package's definitions: the reader's own commands kept
        # TeX conditionals open in the text being scanned: "true" (at its \else the rest
        # is skipped), "else" or "unknown" (read on, both branches, as before)
        self.conditionals: list[str] = []
        self.invocations: list[str] = []  # user macros being expanded, as written
        self.bibitems: list[LibraryItem] = []  # a hand-made thebibliography's entries
        self.total = 0
        self.stopped = False
        self.special = _SPECIAL
        self.not_listed = 0
        self.at: tuple[_Source, int] | None = None  # where the scan stands
        self.starts: dict[_Block, str] = {}  # where each block's first text stands

    # -- output --------------------------------------------------------------------

    @property
    def top(self) -> _Frame:
        return self.frames[-1]

    def emit(self, text: str) -> None:
        stream = self.top.stream
        if stream is not None and text:
            block = stream.block
            fresh = not block.pieces
            block.add(text)
            if fresh and block.pieces and self.at is not None:
                # A typed citation in it is located by it (issue 46).
                self.starts[block] = self.at[0].where(self.at[1])

    def brk(self) -> None:
        stream = self.top.stream
        if stream is not None:
            stream.brk()

    def skip(self, where: str, text: str, reason: str) -> None:
        self.not_listed += len(self.skipped) >= self.limits.max_skipped
        if len(self.skipped) < self.limits.max_skipped:
            self.skipped.append(Skipped(where=where, text=_SPACES.sub(" ", text[:600])[:300],
                                        reason=reason))

    # -- files -----------------------------------------------------------------------

    def count(self, chars: int) -> None:
        self.total += chars
        if self.total > self.limits.max_total_chars:
            raise WriterFileError(
                f"the thesis's LaTeX with its included files and macros is over "
                f"{self.limits.max_total_chars:,} characters")

    def resolve(self, name: str, current: str, suffix: str,
                universe: Iterable[str] | None = None) -> tuple[str | None, str]:
        """The bundle path ``name`` refers to (among ``universe``, the .tex files by
        default), or None and why not: TeX looks beside the main file, subfiles beside
        themselves; nothing outside the bundle is ever looked at."""
        paths = self.files if universe is None else set(universe)
        raw = self.expand_path(_uncomment(name) or "").strip().strip('"').strip()
        if not raw:
            return None, "an empty file name"
        unknown = _PATH_MACRO.search(raw)
        if unknown:
            return None, (f"the path holds the macro \\{unknown.group(1)}, which the "
                          f"thesis's files do not define as a name")
        if raw.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", raw) or "\\" in raw:
            return None, "an absolute path, outside the bundle"
        leaves = False
        for base in dict.fromkeys((self.root, posixpath.dirname(current))):
            path = posixpath.normpath(posixpath.join(base, raw))
            if path == ".." or path.startswith("../"):
                leaves = True
                continue
            for candidate in (path, path + suffix):
                if candidate in paths:
                    return candidate, ""
        if leaves:
            return None, "a path leaving the bundle"
        return None, "not in the bundle"

    def expand_path(self, name: str) -> str:
        """A file name with the thesis's own macros replaced by their text, as TeX expands
        them (``\\def\\PATH{.}`` and ``\\import{\\PATH/ch1/}{ch1}``; ``\\input{\\chapdir/intro}``)."""
        for _ in range(self.limits.max_depth):
            if "\\" not in name:
                break

            def replace(match: re.Match[str]) -> str:
                macro = self.macros.get(match.group(1))
                return macro[1] if macro is not None and not macro[0] else match.group()

            expanded = _PATH_MACRO.sub(replace, name)
            if expanded == name or len(expanded) > ARG_WINDOW:
                break
            name = expanded
        return _SPACES.sub(" ", name.replace("{", "").replace("}", "")) if "\\" not in name \
            else name

    def include(self, name: str, src: _Source, pos: int, depth: int, marker: str) -> None:
        where = src.where(pos)
        path, why = self.resolve(name, src.path, ".tex")
        if path is None:
            self.skip(where, marker, f"included file {name!r}: {why}")
            return
        if path in self.open_files:
            self.skip(where, marker, f"included file {path!r} includes itself")
            return
        if depth + 1 > self.limits.max_depth:
            self.skip(where, marker,
                      f"included file {path!r}: files nest over {self.limits.max_depth} deep")
            return
        self.includes += 1
        if self.includes > self.limits.max_includes:
            raise WriterFileError(f"the thesis's LaTeX reads included files over "
                                  f"{self.limits.max_includes:,} times")
        text = self.files[path]
        begin = _BEGIN_DOCUMENT.search(text)
        if begin:  # a subfile: its own preamble is not the thesis's (lines kept)
            end = _END_DOCUMENT.search(text, begin.end())
            text = "\n" * text.count("\n", 0, begin.end()) + \
                text[begin.end():end.start() if end else len(text)]
        self.open_files.append(path)
        try:
            self.scan(_Source(path, text, _newlines(text)), depth + 1)
        finally:
            self.open_files.pop()

    # -- the scan --------------------------------------------------------------------

    def scan(self, src: _Source, depth: int, cost: int = 0) -> None:
        """Read ``src`` into the blocks; groups it opens and leaves open end with it.
        ``cost`` is counted besides its length (an expansion's, so that a million
        expansions of an empty macro are bounded too)."""
        text = src.text
        self.count(len(text) + cost)
        base = len(self.frames)
        open_conditionals = len(self.conditionals)
        i, n = 0, len(text)
        while i < n and not self.stopped:
            self.at = (src, i)
            if self.top.kind == "raw":
                i = self._raw(text, i)
                continue
            match = self.special.search(text, i)
            if match is None:
                self.emit(text[i:])
                break
            if match.start() > i:
                self.emit(text[i:match.start()])
            token = match.group()
            i = match.end()
            if token == "\\":
                i = self.macro(src, match.start(), depth)
            elif token == "{":
                self.frames.append(self.top.group())
            elif token == "}":
                if len(self.frames) > base and self.top.kind != "env":
                    after = self.top.layout_after
                    self.close()
                    for _ in range(after):  # \marginnote{..}[-1cm]
                        arg, j = _skip_optional(src, i)
                        if arg is not None and LAYOUT_ARG.fullmatch(arg):
                            i = j
            elif token == "%":
                end = text.find("\n", i)
                i = n if end < 0 else end + 1
                blank = _BLANK_REST.match(text, i)
                if blank:  # the comment's line ended a paragraph
                    self.brk()
                    i = blank.end()
            elif token == "\n":
                blank = _BLANK_REST.match(text, i)
                if blank:
                    self.brk()
                    i = blank.end()
                else:
                    self.emit(" ")
            elif token == "$":
                i = self.math(src, i - 1)
            elif token[0] == '"':
                self.emit(_GERMAN_SHORTHANDS[token])
            else:
                self.emit({"~": " ", "&": " ", "--": "–", "---": "—", "``": "“", "''": "”",
                           ",,": "„"}[token])
        while len(self.frames) > base:
            self.close()
        del self.conditionals[open_conditionals:]

    def close(self) -> None:
        frame = self.frames.pop()
        if frame.on_close is not None:
            frame.on_close()

    def _raw(self, text: str, i: int) -> int:
        """Skip inside a dropped argument that did not close within the window."""
        frame = self.top
        for token in _RAW_TOKEN.finditer(text, i):
            if token.group() == "{":
                frame.depth += 1
            elif token.group() == "}":
                frame.depth -= 1
                if frame.depth == 0:
                    self.frames.pop()
                    return token.end()
        self.frames.pop()
        return len(text)

    def math(self, src: _Source, start: int) -> int:
        """``$...$`` kept as its text ("p < 0.05"); ``$$...$$`` dropped."""
        text = src.text
        if text.startswith("$$", start):
            end = src.find("$$", start + 2, start + ARG_WINDOW)
            if end < 0:
                return start + 2
            self.display_math(src, start, text[start + 2:end])
            return end + 2
        end = start + 1
        while True:
            end = src.find("$", end, start + ARG_WINDOW)
            if end < 0:
                return start + 1
            if text[end - 1] != "\\":
                break
            end += 1
        self.formula_cites(src, start, text[start + 1:end])
        self.emit(math_text(text[start + 1:end]))
        return end + 1

    def formula_cites(self, src: _Source, start: int, tex: str) -> None:
        """A cite command inside a formula is read as none (a formula is no sentence to
        check): listed as not taken, never dropped silently."""
        if (self.top.stream is not None or self.top.in_footnote) and \
                _CITE_ANYWHERE.search(_uncomment(tex) or ""):
            self.skip(src.where(start), src.text[start:start + 200],
                      "a citation inside a formula, which is not text: not read as a citation")

    @abc.abstractmethod
    def display_math(self, src: _Source, start: int, tex: str) -> None:
        """Emit a display formula's mark."""

    @abc.abstractmethod
    def macro(self, src: _Source, start: int, depth: int) -> int:
        """Handle the control sequence at ``start`` (its backslash); the position after."""
