"""Which ``.tex`` of a bundle is the thesis's main file, found the way LaTeX editors find
it (issue 47): a ``% !TEX root`` magic comment first; else the files that begin a
document (``\\begin{document}``) and load a class (``\\documentclass``, its options over
any number of lines, after comments), directly or through the ``\\input`` preamble they
read before the document begins; a file another one includes is no main file, nor a
``subfiles`` or ``standalone`` one; of several left, the one with a conventional name
(``main``, ``thesis``, ...) at the bundle's top.

Only each file's head is read (:data:`HEAD_BYTES`): a zip need not be inflated to find
its main file (the web asks before it accepts an upload). A bundle where two files
qualify is refused with their names (:class:`AmbiguousMain`), so that the writer names
one; one with none is refused with the files that came closest.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping

from citerun.pipeline.writer.model import WriterFileError

#: How much of each .tex is read to find the main file.
HEAD_BYTES = 65536
#: How deep a preamble's ``\\input`` is followed to find its ``\\documentclass``.
PREAMBLE_DEPTH = 4
#: Conventional names of a thesis's main file (lower case, without ``.tex``).
CONVENTIONAL = ("main", "thesis", "dissertation", "diss", "master", "masterthesis",
                "bachelor", "bachelorthesis", "arbeit", "root", "document", "paper")
NOT_MAIN_CLASSES = frozenset({"subfiles", "standalone"})

COMMENT = re.compile(r"(?<!\\)%[^\n]*")
_CLASS = re.compile(r"\\documentclass\s*(?:\[[^\]]*\])?\s*\{\s*([^}\s]*)\s*\}")
_BEGIN = re.compile(r"\\begin\s*\{\s*document\s*\}")
INPUT = re.compile(r"\\(?:input|include|subfile|InputIfFileExists)\s*\{\s*([^}]+?)\s*\}"
                    r"|\\input\s+([^\s{}\\%]+)")
_TEX_ROOT = re.compile(r"^[ \t]*%+[ \t]*!\s*TEX\s+root\s*=\s*(\S[^\n]*?)\s*$",
                       re.IGNORECASE | re.MULTILINE)
_TEX = (".tex", ".ltx")


class AmbiguousMain(WriterFileError):
    """More than one .tex (``candidates``) could be the main file."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


def is_tex(path: str) -> bool:
    return path.lower().endswith(_TEX)


def resolve(name: str, beside: str, paths: Iterable[str]) -> str | None:
    """The bundle's file that ``name`` (as written in ``beside``) means: beside it, else
    from the bundle's top; with ``.tex`` added when it has no suffix of its own."""
    name = name.strip().strip('"')
    known = set(paths)
    for base in (posixpath.dirname(beside), ""):
        path = posixpath.normpath(posixpath.join(base, name)).lstrip("/")
        for candidate in (path, path + ".tex"):
            if candidate in known:
                return candidate
    return None


def find_main(paths: Iterable[str], head: Callable[[str], str]) -> str:
    """The main file among ``paths`` (the bundle's files), reading each .tex's head
    through ``head``. Raises :class:`AmbiguousMain` when several qualify and
    :class:`WriterFileError` when none does."""
    every = sorted(paths)
    tex = [p for p in every if is_tex(p)]
    if not tex:
        raise WriterFileError("the bundle holds no .tex file")
    raw: dict[str, str] = {}

    def text(path: str) -> str:
        if path not in raw:
            raw[path] = head(path)
        return raw[path]

    def clean(path: str) -> str:
        return COMMENT.sub("", text(path))

    roots = set()
    for path in tex:
        for found in _TEX_ROOT.finditer(text(path)[:4096]):
            root = resolve(found.group(1), path, every)
            if root is not None and is_tex(root):
                roots.add(root)
    if len(roots) == 1:
        return roots.pop()

    included: set[str] = set()
    for path in tex:
        for found in INPUT.finditer(clean(path)):
            target = resolve(found.group(1) or found.group(2), path, every)
            if target is not None and target != path:
                included.add(target)

    def document_class(path: str, depth: int, seen: set[str]) -> str | None:
        """The class ``path`` loads before its document begins, itself or through what
        it inputs there."""
        body = clean(path)
        begin = _BEGIN.search(body)
        preamble = body[:begin.start()] if begin else body
        found = _CLASS.search(preamble)
        if found:
            return found.group(1)
        if depth >= PREAMBLE_DEPTH:
            return None
        for loaded in INPUT.finditer(preamble):
            target = resolve(loaded.group(1) or loaded.group(2), path, every)
            if target is not None and target not in seen and is_tex(target):
                seen.add(target)
                cls = document_class(target, depth + 1, seen)
                if cls is not None:
                    return cls
        return None

    classes = {p: document_class(p, 0, {p}) for p in tex}
    mains = [p for p in tex if _BEGIN.search(clean(p)) and classes[p] is not None
             and classes[p] not in NOT_MAIN_CLASSES]
    if not mains:  # a class in a file whose document begins in another it inputs
        mains = [p for p in tex if classes[p] is not None
                 and classes[p] not in NOT_MAIN_CLASSES and p not in included]
    if len(mains) > 1:
        top = [p for p in mains if p not in included]
        mains = top or mains
    if len(mains) > 1:
        named = [p for p in mains if "/" not in p and
                 posixpath.splitext(p)[0].lower() in CONVENTIONAL]
        if len(named) == 1:
            return named[0]
    if len(mains) == 1:
        return mains[0]
    if not mains and len(tex) == 1:
        return tex[0]
    if not mains:
        raise WriterFileError(
            f"no .tex file of the bundle begins a document with a \\documentclass "
            f"({listed(tex)}); name the main file")
    raise AmbiguousMain(f"{len(mains)} .tex files could be the main file "
                        f"({listed(mains)}); name the main file", mains)


def listed(paths: list[str], most: int = 10) -> str:
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")


def find_main_in(heads: Mapping[str, str]) -> str:
    """:func:`find_main` over the heads of a bundle's .tex files (path -> text)."""
    return find_main(heads, lambda path: heads.get(path, ""))


def named(name: str, paths: Iterable[str]) -> str | None:
    """The bundle's file a writer named as the main one: its path, with or without
    ``.tex``, or a file name only one .tex of the bundle has (``main.tex`` for
    ``thesis/main.tex``); None: no such file."""
    every = list(paths)
    path = posixpath.normpath(name.strip().replace("\\", "/").lstrip("/")) if name.strip() else ""
    if not path or path == ".":
        return None
    for candidate in (path, path + ".tex"):
        if candidate in every:
            return candidate
    for wanted in (path, path + ".tex"):
        same = [p for p in every if is_tex(p) and posixpath.basename(p) == wanted]
        if len(same) == 1:
            return same[0]
    return None
