"""Reading LaTeX text without a parser: a file's decoding, positions named as
"file:line" (:class:`_Source`), arguments (spaces, stars, ``[...]``, ``{...}``), comments,
inline math and notes as text, locators, a claim tidied, and a hand-made reference list
(``thebibliography``)."""

from __future__ import annotations

import bisect
import dataclasses
import re
import unicodedata

from citerun.pipeline.citations import entries
from citerun.pipeline.writer.latex_tables import (
    ARG_WINDOW, _ACCENTS, _BIBITEM, _COMMENT, _CONTROL_SYMBOLS, _EMPTY_BRACKETS,
    _NEWBLOCK, _NOTE_CITE, _PAGES, _RAW_TOKEN, _SPACE_AFTER_OPEN, _SPACE_BEFORE, _SPACES, _TEXT,
)
from citerun.pipeline.writer.model import LibraryItem


def _decode(data: bytes) -> str:
    """A .tex file's text: UTF-8 (a BOM dropped), else Latin-1 as inputenc's latin1."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def locator_of(postnote: str) -> str | None:
    """The locator of a postnote without its page prefix: "p. 45" -> "45",
    "pp. 45--47" -> "45-47", "S. 45 f." -> "45 f.", "45ff" -> "45 ff."; any other
    postnote ("Rn. 12", "chap. 3") as written."""
    text = _SPACES.sub(" ", postnote).strip()
    if not text:
        return None
    match = _PAGES.fullmatch(text)
    if not match:
        return text
    locator = match.group("a")
    if match.group("b"):
        locator += "-" + match.group("b")
    if match.group("f"):
        locator += f" {match.group('f').lower()}."
    return locator


# A name's own full stop and the sentence's ("Inc.."), never an ellipsis ("...").
_DOUBLED_STOP = re.compile(r"(?<=[^\W\d_])\.\.(?!\.)")


def clean_claim(text: str) -> str:
    """A claim's text tidied after its citations were cut: "data (see )." -> "data (see)."."""
    text = _SPACES.sub(" ", text)
    text = _EMPTY_BRACKETS.sub("", text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER_OPEN.sub(r"\1", text)
    text = _DOUBLED_STOP.sub(".", text)  # "Inc." before the sentence's full stop
    return _SPACES.sub(" ", text).strip()


@dataclasses.dataclass
class _Source:
    """The text being scanned and how a position in it is named ("ch1.tex:12")."""

    path: str
    text: str
    newlines: list[int]
    line: int | None = None  # a macro expansion: every position is the use's line

    def __post_init__(self) -> None:
        self._next: dict[str, tuple[int, int]] = {}

    def find(self, sub: str, start: int, limit: int) -> int:
        """``text.find(sub, start)`` if it is before ``limit``, else -1; the last answer
        for each ``sub`` is kept, so that a file of a million unclosed ``\\verb|`` or
        ``[`` costs one pass, not one pass each."""
        seen = self._next.get(sub)
        if seen is not None and seen[0] <= start and (seen[1] < 0 or seen[1] >= start):
            found = seen[1]
        else:
            found = self.text.find(sub, start)
            self._next[sub] = (start, found)
        return found if 0 <= found < limit else -1

    def where(self, pos: int) -> str:
        line = self.line if self.line is not None else bisect.bisect_right(self.newlines, pos) + 1
        return f"{self.path}:{line}"


def _newlines(text: str) -> list[int]:
    return [m.start() for m in re.finditer("\n", text)]


def _skip_spaces(text: str, i: int) -> int:
    """Past spaces and at most one line break, as TeX reads between arguments."""
    n = len(text)
    newline = False
    while i < n and text[i] in " \t\r\n":
        if text[i] == "\n":
            if newline:
                break
            newline = True
        i += 1
    return i


def _skip_macro_space(text: str, i: int) -> int:
    """A control word eats the spaces after it (``\\ss{}`` and ``\\ss `` alike)."""
    if text.startswith("{}", i):
        return i + 2
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    return i


def _skip_star(text: str, i: int) -> int:
    return i + 1 if text.startswith("*", i) else i


def _skip_optional(src: _Source, i: int) -> tuple[str | None, int]:
    """An optional ``[...]`` argument at ``i`` (spaces before it skipped): its text and
    the position after it, or None and ``i``. Brackets inside braces do not close it."""
    text = src.text
    j = _skip_spaces(text, i)
    if not text.startswith("[", j):
        return None, i
    end = j
    for _ in range(10):
        end = src.find("]", end + 1, j + ARG_WINDOW)
        if end < 0:
            return None, i
        inner = text[j + 1:end]
        if inner.count("{") == inner.count("}"):
            return inner, end + 1
    return None, i


def read_group(text: str, i: int) -> tuple[str | None, int]:
    """The brace group at ``i`` (spaces before it skipped): its text and the position
    after it; ``(None, -1)`` when there is none, ``(None, p)`` when it opens at ``p - 1``
    and does not close within :data:`ARG_WINDOW` characters."""
    j = _skip_spaces(text, i)
    if not text.startswith("{", j):
        return None, -1
    depth = 0
    limit = min(len(text), j + ARG_WINDOW)
    for token in _RAW_TOKEN.finditer(text, j, limit):
        char = token.group()
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[j + 1:token.start()], token.end()
    return None, j + 1


def _uncomment(tex: str | None) -> str | None:
    """An argument without its comments (keys written one per line, each annotated)."""
    return _COMMENT.sub("", tex) if tex and "%" in tex else tex


_FRACTION = re.compile(r"\\(?:[dtc]?frac|sqrt)(?![A-Za-z])")


def _fractions(tex: str) -> str:
    """``\\frac{1}{2\\pi}`` as "1/(2\\pi)", ``\\sqrt{x}`` as "√(x)" (issue 46: not "12π"):
    each part in parentheses unless it is one symbol or number."""
    def part(arg: str) -> str:
        arg = _fractions(arg.strip())
        return arg if re.fullmatch(r"\w+|\\[A-Za-z]+", arg) else f"({arg})"

    out: list[str] = []
    position = 0
    for _ in range(200):
        found = _FRACTION.search(tex, position)
        if found is None:
            break
        i = found.end()
        if found.group() == "\\sqrt":
            i = _skip_optional_text(tex, i)
        first, end = read_group(tex, i)
        if first is None:
            out.append(tex[position:found.end()])
            position = found.end()
            continue
        if found.group() == "\\sqrt":
            out.append(tex[position:found.start()] + "√" + part(first))
            position = end
            continue
        second, end2 = read_group(tex, end)
        if second is None:
            out.append(tex[position:end])
            position = end
            continue
        out.append(f"{tex[position:found.start()]}{part(first)}/{part(second)}")
        position = end2
    out.append(tex[position:])
    return "".join(out)


def _skip_optional_text(tex: str, i: int) -> int:
    """Past a ``[..]`` at ``i`` (``\\sqrt[3]{x}``'s index)."""
    if tex.startswith("[", i):
        end = tex.find("]", i)
        return end + 1 if end > 0 else i
    return i


def math_text(tex: str) -> str:
    """Inline math as text: symbols as characters (``\\alpha`` α, ``\\leq`` ≤), fractions
    as "a/(b)", other macros and braces dropped ("p \\leq 0.05" -> "p ≤ 0.05")."""
    if "cite" in tex:  # a cite command in a formula (listed as not taken): no text
        tex = _NOTE_CITE.sub("", tex)
    if "frac" in tex or "sqrt" in tex:
        tex = _fractions(tex)

    def symbol(match: re.Match[str]) -> str:
        name = match.group(1)
        return _TEXT.get(name, _CONTROL_SYMBOLS.get(name, ""))

    text = re.sub(r"\\([A-Za-z]+|.)\s*", symbol, tex)
    return _SPACES.sub(" ", text.replace("{", "").replace("}", "").replace("~", " ")).strip()


def note_text(tex: str | None) -> str:
    """A pre- or postnote as text: ``p.~45`` -> "p. 45", ``45\\psq`` -> "45 f."."""
    if not tex:
        return ""
    if "cite" in tex:  # jurabib's \\citefield{year}{key} in a wrapper's postnote: no note
        tex = _NOTE_CITE.sub("", tex).lstrip(" ,;:")
    tex = tex.replace("\\psqq", " ff.").replace("\\psq", " f.").replace("\\pno", "p.")
    tex = tex.replace("\\ppno", "pp.").replace("\\nopp", "").replace("--", "–")
    text = re.sub(r"\\([\"'`^~=.])\{?([A-Za-z])\}?",
                  lambda m: unicodedata.normalize("NFC", m.group(2) + _ACCENTS[m.group(1)]), tex)
    return math_text(text.replace("$", ""))


def bibitems(tex: str, first: int, most: int) -> list[LibraryItem]:
    """The first ``most`` entries of a hand-made reference list (``\\bibitem[label]{key}
    text``): each key's entry text read for its authors, year, title and DOI as a PDF's
    reference list is (:func:`~citerun.pipeline.citations.entries.parse_entry`)."""
    items: list[LibraryItem] = []
    found = list(_BIBITEM.finditer(tex))
    for number, item in enumerate(found[:most]):
        end = found[number + 1].start() if number + 1 < len(found) else len(tex)
        key = item.group("key").strip()
        text = _SPACES.sub(" ", note_text(_NEWBLOCK.sub(" ", _COMMENT.sub(
            "", tex[item.end():min(end, item.end() + ARG_WINDOW)])))).strip()
        if not key or not text:
            continue
        entry = entries.parse_entry(text, first + number, label=key)
        items.append(LibraryItem(key=key, title=entry.title, authors=entry.authors,
                                 year=entry.year, doi=entry.doi, origin="bibitem"))
    return items
