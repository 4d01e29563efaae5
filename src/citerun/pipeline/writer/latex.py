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
decoding of titles. Bounds: ``\\input`` chains at most :data:`MAX_DEPTH` deep, every
file and macro expansion read counts against :data:`MAX_TOTAL_CHARS`, and any argument
is looked for within :data:`ARG_WINDOW` characters, so the work is linear in the text.
What is not read (a path leaving the bundle, a missing file, a file including itself)
is reported as :class:`~.model.Skipped`.
"""

from __future__ import annotations

import bisect
import dataclasses
import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from pylatexenc import latex2text  # type: ignore[import-untyped]

from citerun.pipeline.citations import entries, quotations
from citerun.pipeline.pdf import splitting
from citerun.pipeline.writer import bib as bibtex
from citerun.pipeline.writer.formats import LIBRARY_DIR
from citerun.pipeline.writer.model import (
    LibraryItem,
    Skipped,
    WriterFileError,
    WrittenCitation,
    WrittenThesis,
)

#: How deep ``\\input`` files (and macros expanding into macros) may nest.
MAX_DEPTH = 20
#: Characters of LaTeX read in all, every included file and expansion counted.
MAX_TOTAL_CHARS = 20 * 1024 * 1024
#: ``\\input``/``\\include`` files read in all, each reading counted (issue 41: 20 tiny
#: files each reading the next ten times, 2.4 KB, took 18.6 s of CPU to reach the text cap).
MAX_INCLUDES = 5_000
#: How far an argument (``[p. 45]``, ``{smith2020,jones2019}``) is looked for.
ARG_WINDOW = 4_000
#: A ``\\newcommand`` body longer than this is not expanded.
MAX_MACRO_BODY = 2_000
#: Macros defined beyond this many are not expanded.
MAX_MACROS = 10_000
#: Skipped things listed one by one; beyond this they are counted.
MAX_SKIPPED = 1_000
#: A quotation of several sentences is taken whole into its claim up to this length.
MAX_QUOTED_CHARS = 10_000
#: Entries of a hand-made reference list (``thebibliography``) read.
MAX_BIBITEMS = 5_000
#: Key groups of one multi-cite (``\\cites[..]{a}[..]{b}...``) read.
MAX_CITE_GROUPS = 100

# What each cite command prints in the text: "paren" nothing of the sentence (a
# parenthesis, a number, a footnote mark), "names" the authors ("Smith et al. (2020)
# showed"), "foot" a footnote. A "multi" command takes several groups.
_PAREN, _NAMES, _FOOT = "paren", "names", "foot"
_CITES: dict[str, str] = {
    **dict.fromkeys(("cite", "Cite", "citep", "Citep", "citealp", "Citealp", "citeyear",
                     "citeyearpar", "citenum", "parencite", "Parencite", "autocite",
                     "Autocite", "supercite", "fullcite", "citetitle", "citedate",
                     "citeurl", "citeurldate", "citeurlhtml", "cites", "Cites", "parencites",
                     "Parencites", "autocites", "Autocites", "supercites"), _PAREN),
    **dict.fromkeys(("citet", "Citet", "citealt", "Citealt", "citeauthor", "Citeauthor",
                     "citefullauthor", "textcite", "Textcite", "textcites", "Textcites"),
                    _NAMES),
    **dict.fromkeys(("footcite", "Footcite", "footcitetext", "footfullcite", "smartcite",
                     "Smartcite", "footcites", "Footcites", "footcitetexts", "smartcites",
                     "Smartcites", "footcitetitle", "footciteauthor", "footciteyear",
                     "footcitet", "footcitep"), _FOOT),
}
_MULTI = frozenset(name for name in _CITES if name.endswith("cites") or name.endswith("citetexts"))

_HEADINGS = frozenset({"part", "chapter", "section", "subsection", "subsubsection",
                       "paragraph", "subparagraph", "addchap", "addsec", "minisec",
                       "frametitle"})
_INCLUDES = frozenset({"input", "include", "subfile", "import", "subimport", "inputfrom",
                       "subinputfrom", "includefrom", "subincludefrom"})
_DEFINITIONS = frozenset({"newcommand", "renewcommand", "providecommand",
                          "DeclareRobustCommand", "def", "gdef", "edef", "xdef"})
# xparse's (LaTeX's own since 2020) document commands: an argument spec, then the body.
_DOCUMENT_COMMANDS = frozenset({"NewDocumentCommand", "RenewDocumentCommand",
                                "ProvideDocumentCommand", "DeclareDocumentCommand"})
# What loads a package or class: a local .sty/.cls of the bundle is read for its
# definitions (a template's cite wrappers), a standard one is not in the bundle.
_LOADS = {"usepackage": ".sty", "RequirePackage": ".sty", "RequirePackageWithOptions": ".sty",
          "documentclass": ".cls", "LoadClass": ".cls", "LoadClassWithOptions": ".cls"}
# Commands with "cite" in their name that are no citation: read as the others are.
_NOT_CITES = frozenset({"nocite", "citestyle", "setcitestyle", "citeindextrue",
                        "citeindexfalse", "citeindextype", "citetext", "citationstyle",
                        "DeclareCiteCommand", "citesetup", "citeform"})
_CITE_NAME = re.compile(r"cite", re.IGNORECASE)
# A conditional of TeX, read to its \else and \fi: \iffalse ... \fi skipped.
_IF_NAME = re.compile(r"if[A-Za-z@]*")
# Conditionals of packages that take their branches as arguments, not to a \fi.
_ARG_CONDITIONALS = frozenset({"ifthenelse", "ifblank", "notblank", "ifstrempty", "ifstrequal",
                               "ifdef", "ifundef", "ifdefempty", "ifdefvoid", "ifdefequal",
                               "ifbool", "notbool", "ifboolexpr", "iftoggle", "nottoggle",
                               "ifnumcomp", "ifdimcomp", "ifdefmacro", "ifcsdef", "ifcsundef",
                               "ifcsempty", "ifcsvoid", "ifdefstring", "ifstrcontains",
                               "ifnumequal", "ifnumless", "ifnumgreater", "ifpackageloaded",
                               "ifclassloaded", "iffileexists"})
# xparse's: the value an optional argument not given has.
_NO_VALUE = "-NoValue-"
# Macros whose arguments are not text: read and dropped. "*" an optional star, "["
# an optional argument, "{" a mandatory one, "t" a last one that is text.
_ARGSPECS: dict[str, str] = {
    "label": "{", "ref": "*{", "pageref": "*{", "eqref": "{", "autoref": "*{",
    "nameref": "*{", "vref": "*{", "cref": "*{", "Cref": "*{", "cpageref": "{",
    "Autoref": "*{", "hyperref": "[{", "bibliographystyle": "{", "pagestyle": "{",
    "thispagestyle": "{", "pagenumbering": "{", "hypersetup": "{", "graphicspath": "{",
    "geometry": "{", "lstset": "{", "tikzset": "{", "pgfplotsset": "{",
    "selectlanguage": "*{", "index": "{", "glossary": "{", "thanks": "{", "url": "{",
    "nolinkurl": "{", "includepdf": "[{", "nocite": "{", "printbibliography": "[",
    "printglossary": "[", "setcounter": "{{", "addtocounter": "{{", "setlength": "{{",
    "addtolength": "{{", "settowidth": "{{", "definecolor": "[{{{", "title": "[{",
    "author": "[{", "date": "{", "subtitle": "{", "vspace": "*{", "hspace": "*{",
    "includegraphics": "*[[{", "usepackage": "[{[", "RequirePackage": "[{[",
    "documentclass": "[{[", "newtheorem": "*{[{[", "newenvironment": "*{[[{{",
    "renewenvironment": "*{[[{{", "DeclareMathOperator": "*{{", "color": "[{",
    "pagecolor": "[{", "todo": "[{", "marginpar": "[{", "marginnote": "[{",
    "bibitem": "[{", "newacronym": "[{{{", "newglossaryentry": "{{", "captionsetup": "[{",
    "DeclareFieldFormat": "[{{", "ExecuteBibliographyOptions": "[{", "defbibheading": "{[{",
    "addtocontents": "{{", "addcontentsline": "{{{", "titleformat": "*{[{{{{[",
    "titlespacing": "*{{{{[", "fancyhead": "[{", "fancyfoot": "[{", "lhead": "[{",
    "chead": "[{", "rhead": "[{", "lfoot": "[{", "cfoot": "[{", "rfoot": "[{",
    "raisebox": "{[[t", "rule": "[{{", "linespread": "{", "fontsize": "{{",
    "setmainfont": "[{[", "setsansfont": "[{[", "setmonofont": "[{[", "newlength": "{",
    "newcounter": "{[", "let": "", "includeonly": "{", "excludecomment": "{",
    "includecomment": "{", "newgeometry": "{", "restoregeometry": "",
    "AtBeginDocument": "{", "AtEndDocument": "{",
    # The text of these is their last argument.
    "textcolor": "[{t", "colorbox": "[{t", "href": "[{t", "foreignlanguage": "[{t",
    "makebox": "[[t", "framebox": "[[t", "parbox": "[[[{t", "foreignquote": "{t",
    "hyphenquote": "{t", "foreigntextquote": "{t[[", "textquote": "[[t",
    "enquote": "*t", "captionof": "*{[t",
}
_DROPPED = {name: spec for name, spec in _ARGSPECS.items() if not spec.endswith("t")}
# csquotes' inline quotations: their text is set in quotation marks.
_QUOTING = frozenset({"enquote", "foreignquote", "hyphenquote", "foreigntextquote",
                      "textquote"})
_TEXT_LAST = {name: spec for name, spec in _ARGSPECS.items() if spec.endswith("t")}
# Environments whose body is not TeX text: skipped to their \end.
_VERBATIM = frozenset({"verbatim", "verbatim*", "Verbatim", "lstlisting", "minted", "comment",
                       "filecontents", "filecontents*", "alltt", "tikzpicture", "forest",
                       "pgfpicture", "thebibliography", "spverbatim", "BVerbatim", "LVerbatim"})
_DISPLAY_MATH = frozenset(
    name + star for name in ("equation", "align", "gather", "multline", "eqnarray", "flalign",
                             "alignat", "displaymath", "math", "dmath", "IEEEeqnarray")
    for star in ("", "*"))
_FLOATS = frozenset(name + star for name in ("figure", "table", "wrapfigure", "wraptable",
                                             "sidewaysfigure", "sidewaystable", "subfigure",
                                             "subtable", "algorithm", "listing", "figwindow")
                    for star in ("", "*"))
_TABULAR = frozenset({"tabular", "tabular*", "tabularx", "tabulary", "longtable", "array",
                      "supertabular", "xtabular", "tblr", "longtblr"})
# Mandatory arguments an environment's \begin takes that are not text.
_ENV_ARGS = {"tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "longtable": 1,
             "array": 1, "supertabular": 1, "xtabular": 1, "tblr": 1, "longtblr": 1,
             "minipage": 1, "otherlanguage": 1, "otherlanguage*": 1, "wrapfigure": 2,
             "wraptable": 2, "multicols": 1, "multicols*": 1, "subfigure": 1, "subtable": 1,
             "figwindow": 1}

# What a template's package may not redefine: the commands this reader reads itself.
_BUILTIN = (frozenset(_CITES) | _INCLUDES | _DEFINITIONS | _DOCUMENT_COMMANDS | _HEADINGS
            | frozenset(_ARGSPECS) | frozenset(_LOADS) | _NOT_CITES
            | frozenset({"footnote", "footnotetext", "caption", "item", "par", "begin", "end",
                         "bibliography", "addbibresource", "verb", "newline", "linebreak"}))
# Conditionals with their branches as arguments: (test arguments, branches given).
_CONDITIONAL_ARGS: dict[str, tuple[int, str]] = {
    **dict.fromkeys(("ifdefequal", "ifdefstring", "ifstrcontains", "ifnumequal", "ifnumless",
                     "ifnumgreater", "ifstrequal"), (2, "TF")),
    "ifnumcomp": (3, "TF"), "ifdimcomp": (3, "TF"),
    **{f"If{kind}{branches}": (1, branches) for kind in ("NoValue", "Value", "Boolean")
       for branches in ("TF", "T", "F")},
}
# Those whose test is read here: on an argument's text, as TeX would decide it.
_DECIDED = frozenset({"ifthenelse", "ifblank", "notblank", "ifstrempty", "ifstrequal",
                      *(name for name in _CONDITIONAL_ARGS if name.startswith("If"))})
# \\if\\relax\\detokenize{#1}\\relax, \\ifx\\relax#1\\relax, \\ifx&#1&: whether #1 is empty.
_EMPTY_TESTS = (
    re.compile(r"\s*\\relax\s*\\detokenize\s*\{(?P<arg>[^{}]{0,2000})\}\s*\\relax(?![A-Za-z@])"),
    re.compile(r"\s*\\relax(?P<arg>[^\\{}]{0,2000})\\relax(?![A-Za-z@])"),
    re.compile(r"\s*&(?P<arg>[^&\n]{0,2000})&"))
_TOKEN = re.compile(r"\s*(\\(?:[A-Za-z@]+|.)|\S)", re.DOTALL)
_CONDITIONAL_TOKEN = re.compile(r"\\(if[A-Za-z@]*|else|fi)(?![A-Za-z@])")


def _decide(name: str, tests: list[str]) -> bool | None:
    """The test of a conditional read on its arguments' text; None when it cannot be."""
    if name not in _DECIDED:
        return None
    first = tests[0].strip() if tests else ""
    if name in ("ifblank", "ifstrempty"):
        return not first
    if name == "notblank":
        return bool(first)
    if name == "ifstrequal":
        return tests[0] == tests[1]
    if name.startswith("IfNoValue"):
        return first == _NO_VALUE
    if name.startswith("IfValue"):
        return first != _NO_VALUE
    if name.startswith("IfBoolean"):
        return {"\\BooleanTrue": True, "\\BooleanFalse": False}.get(first)
    negate = False
    while True:  # ifthenelse: \\equal{a}{b}, \\isempty{a}, each maybe under \\not
        found = re.match(r"\\(?:not|NOT)(?![A-Za-z@])\s*", first)
        if not found:
            break
        negate, first = not negate, first[found.end():]
    result: bool | None = None
    if re.match(r"\\equal(?![A-Za-z@])", first):
        a, end = read_group(first, 6)
        b, end = read_group(first, end) if a is not None else (None, -1)
        if a is not None and b is not None and not first[end:].strip():
            result = a.strip() == b.strip()
    elif re.match(r"\\isempty(?![A-Za-z@])", first):
        a, end = read_group(first, 8)
        if a is not None and not first[end:].strip():
            result = not a.strip()
    return None if result is None else result != negate


def _skip_conditional(text: str, i: int, stop_at_else: bool) -> tuple[int, str]:
    """Past the branch a TeX conditional skips: to its \\fi (or \\else), nested ones
    counted; the position after it and which it was ("" at the text's end)."""
    depth = 0
    for found in _CONDITIONAL_TOKEN.finditer(text, i):
        name = found.group(1)
        if name == "fi":
            if depth == 0:
                return found.end(), "fi"
            depth -= 1
        elif name == "else":
            if depth == 0 and stop_at_else:
                return found.end(), "else"
        elif name not in _ARG_CONDITIONALS and name != "ifthenelse":
            depth += 1
    return len(text), ""


_ACCENTS = {"'": "\u0301", "`": "\u0300", '"': "\u0308", "^": "\u0302", "~": "\u0303",
            "=": "\u0304", ".": "\u0307", "c": "\u0327", "H": "\u030b", "k": "\u0328",
            "b": "\u0331", "d": "\u0323", "r": "\u030a", "u": "\u0306", "v": "\u030c"}
_CONTROL_SYMBOLS = {"&": "&", "%": "%", "$": "$", "#": "#", "_": "_", "{": "{", "}": "}",
                    ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "-": "", "@": "",
                    "/": "", "\n": " ", "\t": " ", "|": "‖"}


def _text_macros() -> dict[str, str]:
    """Macros that stand for text (``\\ss`` ß, ``\\ldots`` …, ``\\alpha`` α), from
    pylatexenc's table; its placeholders ("<cit.>") and dates are left out."""
    table: dict[str, str] = {}
    db = latex2text.get_default_latex_context_db()
    for category in db.category_list:
        for spec in db.iter_macro_specs([category]):
            repl = spec.simplify_repl
            name = str(spec.macroname)
            if (isinstance(repl, str) and "%" not in repl and repl.strip()
                    and not repl.startswith("<") and name.isalpha() and name != "today"):
                table.setdefault(name, repl)
    table.update({"LaTeX": "LaTeX", "TeX": "TeX", "LaTeXe": "LaTeX2e", "BibTeX": "BibTeX",
                  "S": "§", "P": "¶", "copyright": "©", "euro": "€", "textregistered": "®",
                  "texttrademark": "™", "textellipsis": "…", "dots": "…", "ldots": "…",
                  "textbar": "|", "textless": "<", "textgreater": ">", "quad": " ",
                  "qquad": " ", "enspace": " ", "thinspace": " ", "nobreakspace": " ",
                  "space": " ", "slash": "/", "textsuperscript": "", "ie": "i.e.",
                  "eg": "e.g.", "etal": "et al.",
                  # babel's quotation marks (German theses: \\glqq ...\\grqq)
                  "glqq": "„", "grqq": "“", "glq": "‚", "grq": "‘", "flqq": "«",
                  "frqq": "»", "flq": "‹", "frq": "›", "dq": '"', "guillemetleft": "«",
                  "guillemetright": "»", "guilsinglleft": "‹", "guilsinglright": "›"})
    return table


_TEXT = _text_macros()

_SPECIAL = re.compile(r"[\\{}%$~\n&]|-{2,3}|``|''|,,")
# With babel's German as the main language, "a is ä and "` a low quote.
_SPECIAL_GERMAN = re.compile(r"[\\{}%$~\n&]|-{2,3}|``|''|,,|\"[aouAOUsz`'<>|=~-]?")
_GERMAN_SHORTHANDS = {'"a': "ä", '"o': "ö", '"u': "ü", '"A': "Ä", '"O': "Ö", '"U': "Ü",
                      '"s': "ß", '"z': "ß", '"`': "„", "\"'": "“", '"<': "«", '">': "»",
                      '"|': "", '"=': "-", '"~': "-", '"-': "", '"': '"'}
_BABEL_GERMAN = re.compile(
    r"\\usepackage\s*\[[^\]]*?\b(?:n?german|austrian|naustrian|swissgerman)\s*\]\s*\{babel\}"
    r"|\\usepackage\s*\{n?german\}")
_COMMENT = re.compile(r"(?<!\\)%[^\n]*(?:\n[ \t]*)?")
_RAW_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)
_NAME = re.compile(r"[A-Za-z@]+\*?|.", re.DOTALL)
_SPACES = re.compile(r"\s+")
_BLANK_REST = re.compile(r"[ \t\r]*\n")
_CITE_ANYWHERE = re.compile(r"\\[A-Za-z]*cite[a-z]*\b")
# \\begin{document} not in a comment ("% run after \\begin{document}" is none).
_BEGIN_DOCUMENT = re.compile(r"^(?:[^%\n\\]|\\.)*?\\begin\s*\{document\}", re.MULTILINE)
_END_DOCUMENT = re.compile(r"^(?:[^%\n\\]|\\.)*?\\end\s*\{document\}", re.MULTILINE)
_DOCUMENTCLASS = re.compile(r"^[^%\n]*?\\documentclass\s*(?:\[[^\]\n]*\])?\s*\{\s*([^}\s]*)",
                            re.MULTILINE)
_NOT_MAIN_CLASSES = frozenset({"subfiles", "standalone"})
# "p. 45", "pp. 45--47", "S. 45 f.", "45ff", "xii": a page locator and its prefix.
_PAGE_PREFIX = r"(?:pp?\.|pg\.|pages?|S\.|Seiten?|s\.)"
_PAGES = re.compile(
    rf"(?:{_PAGE_PREFIX}\s*)?(?P<a>\d+|[ivxlcdm]+)"
    r"(?:\s*(?:[-–—]+|bis)\s*(?P<b>\d+|[ivxlcdm]+))?(?:\s*(?P<f>ff?)\.?)?",
    re.IGNORECASE)
# A macro in a file name: "\\chapdir/intro", "\\PATH{}/ch1".
_BIBITEM = re.compile(r"\\bibitem\s*(?:\[(?P<label>[^\]]{0,200})\])?\s*\{(?P<key>[^{}]{1,200})\}")
_NEWBLOCK = re.compile(r"\\newblock\b|\\\\")
# Words after which a citation stands as a noun ("the work of [3] shows", "von [3]").
_NOUN_BEFORE = re.compile(
    r"(?<![^\W\d_])(?:of|by|from|in|see|to|and|with|on|following|von|vom|durch|bei|nach|"
    r"laut|gemäß|mit|in|im|und|sowie|siehe|vgl\.|der|die|das|den|dem|des)\s*$", re.IGNORECASE)
_QUOTE_MARKS = re.compile('[„“”»«‚‘›‹"]')
_PATH_MACRO = re.compile(r"\\([A-Za-z@]+)(?:\s*\{\})?\s*")
_NOTE_CITE = re.compile(r"\\[A-Za-z]*cite[A-Za-z]*\*?(?:\s*\[[^\[\]]*\])*(?:\s*\{[^{}]*\})+")
_EMPTY_BRACKETS = re.compile(r"\(\s*[;,]?\s*\)|\[\s*[;,]?\s*\]")
_SPACE_BEFORE = re.compile(r"\s+([,.;:!?)\]])")
_SPACE_AFTER_OPEN = re.compile(r"([(\[])\s+")


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


def clean_claim(text: str) -> str:
    """A claim's text tidied after its citations were cut: "data (see )." -> "data (see)."."""
    text = _SPACES.sub(" ", text)
    text = _EMPTY_BRACKETS.sub("", text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER_OPEN.sub(r"\1", text)
    return _SPACES.sub(" ", text).strip()


@dataclasses.dataclass
class _Cite:
    """A cite command as read, before its sentence is known."""

    keys: tuple[str, ...]
    marker: str
    where: str
    locator: str | None
    prenote: str | None
    prints: str  # _PAREN, _NAMES or _FOOT
    in_footnote: bool


class _Block:
    """A run of text that is one paragraph (or heading, caption, footnote, table row).

    It joins the document's blocks when its first piece comes, so blocks stay in the
    order their text starts (an empty paragraph before a heading is not placed first).
    """

    def __init__(self, kind: str, blocks: list[_Block]) -> None:
        self.kind = kind
        self.pieces: list[str | _Cite] = []
        self.space = True  # whether the text so far ends in a space (or is empty)
        self._blocks = blocks

    def _piece(self, piece: str | _Cite) -> None:
        if not self.pieces:
            self._blocks.append(self)
        self.pieces.append(piece)

    def add(self, text: str) -> None:
        text = _SPACES.sub(" ", text)
        if self.space:
            text = text.lstrip(" ")
        if text:
            self._piece(text)
            self.space = text.endswith(" ")

    def cite(self, cite: _Cite) -> None:
        self._piece(cite)


class _Stream:
    """Where text of one kind goes: the body, a footnote, a heading, a float."""

    def __init__(self, kind: str, blocks: list[_Block]) -> None:
        self.kind = kind
        self._blocks = blocks
        self.block = _Block(kind, blocks)

    def brk(self) -> None:
        """End the paragraph: text after this is another block."""
        if self.block.pieces:
            self.block = _Block(self.kind, self._blocks)


@dataclasses.dataclass
class _Frame:
    """An open group (``{``), environment or argument, as the scan's explicit stack."""

    kind: str  # "base", "group", "env", "raw", "footnote", "heading", "caption"
    stream: _Stream | None
    anchor: _Block | None = None  # a footnote's cites stand in this body block
    in_footnote: bool = False
    env: str | None = None
    depth: int = 0  # a raw frame's brace depth
    on_close: Callable[[], None] | None = None

    def group(self) -> _Frame:
        """A brace group inside this frame: its text goes where this frame's goes."""
        return _Frame("group", self.stream, self.anchor, self.in_footnote)


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


class _Reader:
    """One scan of a thesis: the state the cite commands, groups and files share."""

    def __init__(self, files: Mapping[str, str], main: str) -> None:
        self.files = files
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

    # -- output --------------------------------------------------------------------

    @property
    def top(self) -> _Frame:
        return self.frames[-1]

    def emit(self, text: str) -> None:
        stream = self.top.stream
        if stream is not None and text:
            stream.block.add(text)

    def brk(self) -> None:
        stream = self.top.stream
        if stream is not None:
            stream.brk()

    def skip(self, where: str, text: str, reason: str) -> None:
        self.not_listed += len(self.skipped) >= MAX_SKIPPED
        if len(self.skipped) < MAX_SKIPPED:
            self.skipped.append(Skipped(where=where, text=_SPACES.sub(" ", text[:600])[:300],
                                        reason=reason))

    # -- files -----------------------------------------------------------------------

    def count(self, chars: int) -> None:
        self.total += chars
        if self.total > MAX_TOTAL_CHARS:
            raise WriterFileError(
                f"the thesis's LaTeX with its included files and macros is over "
                f"{MAX_TOTAL_CHARS:,} characters")

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
        for _ in range(MAX_DEPTH):
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
        if depth + 1 > MAX_DEPTH:
            self.skip(where, marker, f"included file {path!r}: files nest over {MAX_DEPTH} deep")
            return
        self.includes += 1
        if self.includes > MAX_INCLUDES:
            raise WriterFileError(f"the thesis's LaTeX reads included files over "
                                  f"{MAX_INCLUDES:,} times")
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
                    self.close()
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
            self.emit(" ")
            return end + 2
        end = start + 1
        while True:
            end = src.find("$", end, start + ARG_WINDOW)
            if end < 0:
                return start + 1
            if text[end - 1] != "\\":
                break
            end += 1
        self.emit(math_text(text[start + 1:end]))
        return end + 1

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
        if bare in ("footnote", "footnotetext"):
            return self.footnote(src, i)
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
        # Any other macro: its name is dropped, its groups read as text.
        return _skip_macro_space(text, i)

    def control_symbol(self, src: _Source, name: str, i: int) -> int:
        text = src.text
        if name in _ACCENTS:
            return self.accent(text, name, i)
        if name == "\\":
            env = self._env()
            if env in _TABULAR:
                self.brk()
            else:
                self.emit(" ")
            i = _skip_star(text, i)
            return _skip_optional(src, i)[1]
        if name == "[":
            end = src.find("\\]", i, i + ARG_WINDOW)
            self.emit(" ")
            return i if end < 0 else end + 2
        if name == "(":
            end = src.find("\\)", i, i + ARG_WINDOW)
            if end < 0:
                return i
            self.emit(math_text(text[i:end]))
            return end + 2
        self.emit(_CONTROL_SYMBOLS.get(name, ""))
        return i

    def accent(self, text: str, name: str, i: int) -> int:
        """``\\"u``, ``\\"{u}``, ``\\c{c}``, ``\\'{\\i}``: the accented letter."""
        j = i
        while j < len(text) and text[j] == " " and name.isalpha():
            j += 1
        if j < len(text) and text[j] == "{":
            end = text.find("}", j, j + 12)
            if end < 0:
                return i
            base, after = text[j + 1:end].strip(), end + 1
        elif j < len(text):
            base, after = text[j], j + 1
        else:
            return i
        base = {"\\i": "i", "\\j": "j"}.get(base, base)
        if len(base) != 1:
            self.emit(base)
            return after
        self.emit(unicodedata.normalize("NFC", base + _ACCENTS[name]))
        return after

    def _env(self) -> str | None:
        for frame in reversed(self.frames):
            if frame.env is not None:
                return frame.env
        return None

    def drop_args(self, src: _Source, spec: str, i: int, start: int) -> int:
        """Read and drop the arguments ``spec`` describes."""
        text = src.text
        for kind in spec:
            if kind == "*":
                i = _skip_star(text, i)
            elif kind == "[":
                found, i = _skip_optional(src, i)
                self._check_dropped(src, start, i, found)
            elif kind == "{":
                arg, end = read_group(text, i)
                if arg is None:
                    if end >= 0:  # opened and not closed within the window: skip as TeX would
                        self.frames.append(_Frame("raw", None, depth=1))
                        return end
                    break  # a one-token argument: "\label x"
                self._check_dropped(src, start, end, arg)
                i = end
        return i

    def _check_dropped(self, src: _Source, start: int, end: int, arg: str | None) -> None:
        if arg and _CITE_ANYWHERE.search(_uncomment(arg) or ""):
            self.skip(src.where(start), src.text[start:min(end, start + 300)],
                      "a citation inside a command whose text is not part of the thesis")

    def text_last(self, src: _Source, start: int, name: str, i: int) -> int:
        """``\\textcolor{red}{text}``, ``\\href{url}{text}``: drop all but the text. A
        csquotes command keeps its quotation marks, so the quotation is checked."""
        i = self.drop_args(src, _TEXT_LAST[name][:-1], i, start)
        j = _skip_spaces(src.text, i)
        if j < len(src.text) and src.text[j] == "{":
            frame = self.top.group()
            if name in _QUOTING:
                self.emit("“")
                frame.on_close = lambda: self.emit("”")
            self.frames.append(frame)
            return j + 1
        return i

    def verb(self, src: _Source, name: str, i: int) -> int:
        text = src.text
        i = _skip_star(text, i)
        if name != "verb":
            i = _skip_optional(src, i)[1]
            if name == "mintinline":
                arg, end = read_group(text, i)
                i = end if arg is not None else i
        if i >= len(text):
            return i
        delimiter = "}" if text[i] == "{" else text[i]
        end = src.find(delimiter, i + 1, i + ARG_WINDOW)
        if end < 0:
            return i + 1
        self.emit(text[i + 1:end])
        return end + 1

    def titled(self, src: _Source, start: int, name: str, i: int) -> int:
        """A heading or a caption: its own block, never glued onto a claim."""
        text = src.text
        i = _skip_star(text, i)
        i = _skip_optional(src, i)[1]
        if name == "caption":
            i = _skip_star(text, i)
        j = _skip_spaces(text, i)
        if j >= len(text) or text[j] != "{":
            return i
        parent = self.top
        if parent.stream is not None:
            parent.stream.brk()
        stream = _Stream("heading" if name != "caption" else "caption", self.blocks) \
            if parent.stream is not None else None

        def done() -> None:
            if parent.stream is not None:
                parent.stream.brk()

        self.frames.append(_Frame("heading", stream, anchor=None, in_footnote=False,
                                  on_close=done))
        return j + 1

    def footnote(self, src: _Source, i: int) -> int:
        text = src.text
        i = _skip_optional(src, i)[1]
        j = _skip_spaces(text, i)
        if j >= len(text) or text[j] != "{":
            return i
        parent = self.top
        anchor = parent.anchor if parent.in_footnote else (
            parent.stream.block if parent.stream is not None else None)
        stream = _Stream("footnote", self.blocks) if parent.stream is not None else None
        self.frames.append(_Frame("footnote", stream, anchor=anchor, in_footnote=True))
        return j + 1

    def begin(self, src: _Source, start: int, i: int) -> int:
        text = src.text
        name, end = read_group(text, i)
        if name is None:
            return i
        name = name.strip()
        i = end
        if name == "document":
            self.frames[0].stream = self.body
            if self.top.kind != "base":
                self.top.stream = self.body
            return i
        if name in _VERBATIM or name in _DISPLAY_MATH:
            close = re.compile(r"\\end\s*\{" + re.escape(name) + r"\}")
            found = close.search(text, i)
            if name == "thebibliography":
                self.bibitems.extend(bibitems(text[i:found.start() if found else len(text)],
                                              len(self.bibitems)))
            if name in _DISPLAY_MATH:
                self.emit(" ")
            elif (found and name != "thebibliography"
                  and _CITE_ANYWHERE.search(text, i, found.start())):
                self.skip(src.where(start), text[start:start + 200],
                          f"a citation inside a {name} environment, which is not text")
            return found.end() if found else len(text)
        self.brk()
        i = _skip_optional(src, i)[1]
        for _ in range(_ENV_ARGS.get(name, 0)):
            i = _skip_optional(src, i)[1]
            arg, end = read_group(text, i)
            if arg is None:
                break
            i = end
        parent = self.top
        stream = parent.stream
        if name in _FLOATS and stream is not None and stream.kind == "body":
            stream = _Stream("float", self.blocks)
        self.frames.append(_Frame("env", stream, anchor=parent.anchor,
                                  in_footnote=parent.in_footnote, env=name))
        return i

    def end(self, src: _Source, start: int, i: int) -> int:
        name, end = read_group(src.text, i)
        if name is None:
            return i
        name = name.strip()
        if name == "document":
            self.stopped = True
            return end
        for k in range(len(self.frames) - 1, 0, -1):
            if self.frames[k].kind == "env" and self.frames[k].env == name:
                while len(self.frames) > k:
                    self.close()
                break
        self.brk()
        return end

    def include_command(self, src: _Source, start: int, name: str, i: int, depth: int) -> int:
        text = src.text
        i = _skip_star(text, i)
        first, end = read_group(text, i)
        if first is None:
            if name != "input":
                return i
            bare = re.compile(r"\s*([^\s{}\\%]+)").match(text, i)
            if not bare:
                return i
            first, end = bare.group(1), bare.end()
        target = first
        if name in ("import", "subimport", "inputfrom", "subinputfrom", "includefrom",
                    "subincludefrom"):
            second, end2 = read_group(text, end)
            if second is None:
                return end
            directory = first.strip()
            if name.startswith("sub"):
                directory = posixpath.join(posixpath.dirname(src.path), directory)
                directory = posixpath.relpath(directory, self.root or ".") if directory else ""
            target, end = posixpath.join(directory, second.strip()), end2
        marker = text[start:end]
        if name == "include":
            self.brk()
        self.include(target, src, start, depth, marker)
        if name == "include":
            self.brk()
        return end

    def define(self, src: _Source, start: int, name: str, i: int) -> int:
        """``\\newcommand{\\x}{text}``: kept for expansion when it takes no arguments."""
        text = src.text
        i = _skip_star(text, i)
        j = _skip_spaces(text, i)
        if text.startswith("{", j):
            macro, end = read_group(text, j)
            if macro is None:
                return i
            macro = macro.strip()
            j = end
        elif text.startswith("\\", j):
            found = _NAME.match(text, j + 1)
            if found is None:
                return j + 1
            macro, j = "\\" + found.group(), found.end()
        else:
            return i
        count, default = 0, None
        if name in ("def", "gdef", "edef", "xdef"):
            brace = text.find("{", j, j + 200)
            if brace < 0:
                return j
            # TeX's parameter text: "#1#2" read as two arguments, a delimited one not read
            parameters = _SPACES.sub("", text[j:brace])
            count = len(parameters) // 2 if parameters == "".join(
                f"#{k}" for k in range(1, len(parameters) // 2 + 1)) else -1
            j = brace
        else:
            arity, j = _skip_optional(src, j)
            count = int(arity.strip()) if arity and arity.strip() in "123456789" else (
                -1 if arity is not None else 0)
            default, j = _skip_optional(src, j)
        body, end = read_group(text, j)
        if body is None:
            if end >= 0:
                self.frames.append(_Frame("raw", None, depth=1))
                return end
            return j
        if count >= 0:
            spec: list[tuple[str, str | None]] = [("m", None)] * count
            if count and default is not None:
                spec[0] = ("O", default)
            self.keep_macro(macro, tuple(spec), body)
        return end

    def keep_macro(self, macro: str, spec: tuple[tuple[str, str | None], ...],
                   body: str) -> None:
        """Keep a definition for expansion; a package's never replaces a command this
        reader reads itself (a template's \\renewcommand of \\footnote or \\section)."""
        name = macro[1:] if macro.startswith("\\") else macro
        if (len(body) > MAX_MACRO_BODY or len(self.macros) >= MAX_MACROS
                or not re.fullmatch(r"[A-Za-z@]+", name)):
            return
        if self.in_package and name in _BUILTIN and name not in self.macros:
            return
        self.macros[name] = (spec, body)

    def define_document_command(self, src: _Source, start: int, i: int) -> int:
        """``\\NewDocumentCommand{\\x}{O{}mm}{body}``: kept when its arguments are of
        the kinds m, o, O{..} and s (others: not expanded, read as any other macro)."""
        text = src.text
        j = _skip_spaces(text, i)
        if text.startswith("{", j):
            macro, j = read_group(text, j)
        elif text.startswith("\\", j):
            found = _NAME.match(text, j + 1)
            macro, j = ("\\" + found.group(), found.end()) if found else (None, j + 1)
        else:
            return i
        if macro is None:
            return j
        argspec, j2 = read_group(text, j)
        if argspec is None:
            return j
        body, end = read_group(text, j2)
        if body is None:
            return j2
        spec: list[tuple[str, str | None]] = []
        k, argspec = 0, argspec.replace(" ", "").replace("\n", "")
        while k < len(argspec):
            kind = argspec[k]
            k += 1
            if kind in "+!":
                continue
            if kind == "O" or kind == ">":
                value, after = read_group(argspec, k)
                if value is None:
                    return end
                k = after
                if kind == ">":
                    continue
                spec.append(("O", value))
            elif kind in "mos":
                spec.append((kind, None))
            else:  # delimited, embellishments, verbatim: not expanded
                return end
        self.keep_macro(macro.strip(), tuple(spec), body)
        return end

    def expand(self, src: _Source, start: int, name: str, i: int, depth: int) -> int:
        """A user macro read as its definition's text, ``#1``... replaced by the
        arguments given (``\\newcommand{\\mycite}[1]{\\parencite{#1}}`` cites)."""
        if depth + 1 > MAX_DEPTH:
            self.skip(src.where(start), "\\" + name,
                      f"macro \\{name} expands over {MAX_DEPTH} levels deep")
            return i
        spec, body = self.macros[name]
        count = len(spec)
        text = src.text
        if not count:
            i = _skip_macro_space(text, i)
        args: list[str] = []
        for kind, default in spec:
            if kind == "s":
                star = _skip_spaces(text, i)
                given = text.startswith("*", star)
                args.append("\\BooleanTrue" if given else "\\BooleanFalse")
                i = star + 1 if given else i
                continue
            if kind in "oO":
                optional, i = _skip_optional(src, i)
                args.append(optional if optional is not None else (
                    default if default is not None else _NO_VALUE))
                continue
            arg, end = read_group(text, i)
            if arg is None:
                if end >= 0:
                    return i  # an argument that does not close: not expanded
                j = _skip_spaces(text, i)
                token = _NAME.match(text, j + 1) if text.startswith("\\", j) else None
                end = token.end() if token else j + 1
                arg = text[j:end]
            args.append(arg)
            i = end
        if count:
            body = re.sub(r"#(#|[1-9])", lambda m: "#" if m.group(1) == "#" else (
                args[int(m.group(1)) - 1] if int(m.group(1)) <= count else ""), body)
        line = int(src.where(start).rsplit(":", 1)[1])
        self.invocations.append(text[start:i])
        try:
            self.scan(_Source(src.path, body, [], line=line), depth + 1, cost=100)
        finally:
            self.invocations.pop()
        return i

    def load(self, src: _Source, start: int, name: str, i: int, depth: int) -> int:
        """``\\usepackage[..]{a,b}``, ``\\documentclass{x}``: a package or class of the
        bundle (a template's ``sty/mystyle.sty``) is read for its definitions; one that
        is not in the bundle is a standard one, not read."""
        text = src.text
        i = self.drop_args(src, "[", i, start)
        names, end = read_group(text, i)
        if names is None:
            return i
        i = self.drop_args(src, "[", end, start)
        suffix = _LOADS[name]
        universe = [p for p in self.files if p.lower().endswith(suffix)]
        for package in (_uncomment(names) or "").split(","):
            path, _ = self.resolve(package, src.path, suffix, universe) if package.strip() \
                else (None, "")
            if path is None or path in self.loaded or path in self.open_files:
                continue
            if depth + 1 > MAX_DEPTH:
                self.skip(src.where(start), text[start:i],
                          f"package {path!r}: files nest over {MAX_DEPTH} deep")
                continue
            self.loaded.add(path)
            self.frames.append(_Frame("package", None))
            self.open_files.append(path)
            self.in_package += 1
            try:
                body = self.files[path]
                self.scan(_Source(path, body, _newlines(body)), depth + 1)
            finally:
                self.in_package -= 1
                self.open_files.pop()
                self.frames.pop()
        return i

    def arg_conditional(self, src: _Source, start: int, name: str, i: int,
                        depth: int) -> int:
        """A conditional whose branches are arguments (``\\ifthenelse{\\equal{#2}{}}{A}{B}``,
        etoolbox's ``\\ifblank``, xparse's ``\\IfNoValueTF``): the branch the test
        decides is read, the other not; a test that cannot be decided here (a boolean, a
        counter) reads the first branch, and a citation in the other is listed."""
        text = src.text
        if depth + 1 > MAX_DEPTH:
            self.skip(src.where(start), "\\" + name,
                      f"conditionals nest over {MAX_DEPTH} levels deep: read as text")
            return i
        tests, kinds = _CONDITIONAL_ARGS.get(name, (1, "TF"))
        args: list[str] = []
        for _ in range(tests + len(kinds)):
            arg, end = read_group(text, i)
            if arg is None:  # not the shape expected: read on as text
                return i
            args.append(arg)
            i = end
        branches = dict(zip(kinds, args[tests:]))
        decided = _decide(name, args[:tests])
        if decided is None:
            chosen, other = branches.get("T", ""), branches.get("F", "")
            if _CITE_ANYWHERE.search(other):
                self.skip(src.where(start), text[start:i][:300],
                          f"a citation in a branch of \\{name} not read: which branch TeX "
                          f"takes is not known without running it")
        else:
            chosen = branches.get("T" if decided else "F", "")
        if chosen:
            line = int(src.where(start).rsplit(":", 1)[1])
            self.scan(_Source(src.path, chosen, [], line=line), depth + 1, cost=100)
        return i

    def tex_if(self, src: _Source, name: str, i: int) -> int:
        """A TeX conditional: ``\\iffalse``, ``\\ifx&#1&`` and ``\\if\\relax\\detokenize{#1}
        \\relax`` (a template's test for an empty argument) are decided and the branch
        TeX skips is skipped; any other is read through, both branches (as TeX's state
        is not known here)."""
        text = src.text
        decided: bool | None = None
        end = i
        if name == "iftrue":
            decided = True
        elif name == "iffalse":
            decided = False
        elif name in ("if", "ifx"):
            found = next((m for m in (p.match(text, i) for p in _EMPTY_TESTS) if m), None)
            if found:
                decided, end = not found.group("arg").strip(), found.end()
            elif name == "ifx":
                first = _TOKEN.match(text, i)
                second = _TOKEN.match(text, first.end()) if first else None
                if first and second:
                    a, b = first.group(1), second.group(1)
                    if a == b:
                        decided = True
                    elif not (a.startswith("\\") and b.startswith("\\")):
                        decided = False
                    if decided is not None:
                        end = second.end()
        if decided is None:
            self.conditionals.append("unknown")
            return i
        if decided:
            self.conditionals.append("true")
            return end
        found_at, token = _skip_conditional(text, end, stop_at_else=True)
        if token == "else":
            self.conditionals.append("else")
        return found_at

    def tex_else_fi(self, src: _Source, name: str, i: int) -> int:
        if not self.conditionals:
            return i
        if name == "fi":
            self.conditionals.pop()
            return i
        if self.conditionals[-1] == "true":  # the true branch read: its \else part skipped
            self.conditionals.pop()
            return _skip_conditional(src.text, i, stop_at_else=False)[0]
        return i

    def unknown_cite(self, src: _Source, start: int, name: str, i: int) -> int:
        """A command that looks like a citation (its name has "cite") and is no cite
        command this reader knows, nor a macro the thesis defines: listed as not taken,
        its arguments (keys, notes) read and dropped, never left in a claim."""
        text = src.text
        i = _skip_star(text, i)
        for _ in range(2):
            i = _skip_optional(src, i)[1]
        groups = 0
        while groups < 3:
            j = i if groups else _skip_spaces(text, i)
            arg, end = read_group(text, j) if text.startswith("{", j) else (None, -1)
            if arg is None:
                break
            groups, i = groups + 1, end
        frame = self.top
        if frame.in_footnote or frame.stream is not None:
            self.skip(src.where(start), text[start:i],
                      f"\\{name} is no cite command this reader knows (nor one the thesis "
                      f"or its style files define): not read as a citation")
        return i

    def library(self, src: _Source, start: int, i: int) -> int:
        text = src.text
        i = _skip_optional(src, i)[1]
        names, end = read_group(text, i)
        if names is None:
            return i
        for name in self.expand_path(_uncomment(names) or "").split(","):
            if name.strip():
                self.libraries.append((name.strip(), src.where(start)))
        return end

    # -- citations ---------------------------------------------------------------------

    def cite(self, src: _Source, start: int, name: str, i: int) -> int:
        """A cite command: its key groups with their pre- and postnotes."""
        text = src.text
        i = _skip_star(text, i)
        groups: list[tuple[str | None, str | None, str]] = []
        if name in _MULTI:
            for _ in range(2):  # the (multiprenote)(multipostnote)
                j = _skip_spaces(text, i)
                if text.startswith("(", j):
                    close = src.find(")", j, j + ARG_WINDOW)
                    if close < 0:
                        break
                    i = close + 1
        while len(groups) < (MAX_CITE_GROUPS if name in _MULTI else 1):
            first, j = _skip_optional(src, i)
            second, j = _skip_optional(src, j) if first is not None else (None, j)
            keys, end = read_group(text, j)
            if keys is None:
                break
            pre, post = (first, second) if second is not None else (None, first)
            groups.append((_uncomment(pre), _uncomment(post), _uncomment(keys) or ""))
            i = end
        marker = _SPACES.sub(" ", text[start:i])[:500]
        where = src.where(start)
        if not groups:
            self.skip(where, text[start:start + 200], f"\\{name} without a key argument")
            return i
        frame = self.top
        target = frame.anchor if frame.in_footnote else (
            frame.stream.block if frame.stream is not None else None)
        if target is None:
            self.skip(where, marker, "a citation outside the thesis's text (preamble, "
                                     "bibliography or a command that is not printed)")
            return i
        prints = _CITES[name]
        if self.invocations and len(self.invocations[-1]) <= 300 and all(
                keys.strip() in self.invocations[-1] for _, _, keys in groups):
            marker = _SPACES.sub(" ", self.invocations[-1])  # the wrapper as written
        for pre, post, keys in groups:
            found = tuple(dict.fromkeys(k.strip() for k in keys.split(",") if k.strip()))
            if not found or any(c in k for k in found for c in "\\{}#%"):
                self.skip(where, marker, "a citation without readable keys")
                continue
            target.cite(_Cite(
                keys=found, marker=marker, where=where,
                locator=locator_of(note_text(post)) if post else None,
                prenote=note_text(pre) or None if pre else None, prints=prints,
                in_footnote=frame.in_footnote or prints == _FOOT))
        return i

    # -- the result ----------------------------------------------------------------------

    def result(self, library: Sequence[LibraryItem]) -> tuple[tuple[WrittenCitation, ...], str]:
        by_key = {item.key: item for item in library}
        citations: list[WrittenCitation] = []
        texts: list[str] = []
        for block in self.blocks:
            text, cuts, cites = _render(block, by_key)
            page_text = clean_claim(_cut(text, 0, len(text), cuts))
            if page_text:
                texts.append(page_text)
            if not cites:
                continue
            spans = splitting.sentence_spans(text)
            quoted = quotations.find_quotations(text) if _QUOTE_MARKS.search(text) else []
            span_starts = [s for s, _ in spans]
            quote_starts = [q.start for q in quoted]
            for offset, cite, textual in cites:
                span = _sentence_for(spans, offset, textual)
                if span and quoted:
                    span = _with_quotation(spans, span_starts, quoted, quote_starts, span)
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


def _render(block: _Block, library: Mapping[str, LibraryItem]) -> tuple[
        str, list[tuple[int, int]], list[tuple[int, _Cite, bool]]]:
    """A block's text, the placeholder ranges to cut, and where each cite stands.

    A citation that prints names ("\\textcite") gives the authors' surnames, as the page
    shows them; one that stands as a noun of its sentence (a numeric "\\cite{x} showed",
    "the work of \\cite{x}") gives its authors too, or its key where the library has none
    (issue 40): a claim never has a hole where its citation stood.
    """
    out: list[str] = []
    length = 0
    cuts: list[tuple[int, int]] = []
    cites: list[tuple[int, _Cite, bool]] = []
    pieces = block.pieces
    for index, piece in enumerate(pieces):
        if isinstance(piece, str):
            out.append(piece)
            length += len(piece)
            continue
        textual = not piece.in_footnote and (
            piece.prints == _NAMES or _opens_sentence(out, pieces, index))
        if not textual and not piece.in_footnote and piece.prints == _PAREN and \
                _NOUN_BEFORE.search("".join(out[-3:])):
            # "Basierend auf der Arbeit von \cite{x} werden ...": the citation is a noun of
            # its sentence; the claim names it (its authors, else its key), leaving no hole.
            word = _names(piece.keys, library) or ", ".join(piece.keys)
            before = "" if not out or out[-1].endswith(" ") else " "
            following = pieces[index + 1] if index + 1 < len(pieces) else None
            after = "" if isinstance(following, str) and following.startswith(" ") else " "
            out.append(before)
            length += len(before)
            cites.append((length, piece, False))
            out.append(word + after)
            length += len(word) + len(after)
            continue
        if not textual:
            cites.append((length, piece, False))
            continue
        # The subject of its sentence: named by its authors as the page shows them, else
        # (a numeric "\\cite{x} showed") by its authors or key, never a hole in the claim.
        names = _names(piece.keys, library)
        before = "" if not out or out[-1].endswith(" ") else " "
        word = names or ", ".join(piece.keys)
        after = "" if index + 1 < len(pieces) and isinstance(pieces[index + 1], str) and \
            str(pieces[index + 1]).startswith(" ") else " "
        out.append(before)
        length += len(before)
        cites.append((length, piece, True))
        if not word[:1].isupper():  # a key in lower case: a capital, cut again, ends the
            cuts.append((length, length + 1))  # sentence before it for the splitter
            word = "X" + word
        out.append(word + after)
        length += len(word) + len(after)
    return "".join(out), cuts, cites


def _opens_sentence(out: list[str], pieces: list[str | _Cite], index: int) -> bool:
    """Whether the cite at ``index`` stands where a sentence starts and goes on in lower
    case ("... end. \\cite{x} showed"): it is the sentence's subject."""
    before = "".join(out[-3:]).rstrip()
    if before and before[-1] not in ".!?:":
        return False
    for piece in pieces[index + 1:]:
        if isinstance(piece, str) and piece.strip():
            return piece.lstrip()[:1].islower()
    return False


def _names(keys: Iterable[str], library: Mapping[str, LibraryItem]) -> str | None:
    """"Smith", "Smith and Jones", "Smith et al." for each key; None if one is unknown."""
    parts: list[str] = []
    for key in keys:
        item = library.get(key)
        if item is None or not item.authors:
            return None
        authors = item.authors
        if len(authors) == 1:
            parts.append(authors[0])
        elif len(authors) == 2:
            parts.append(f"{authors[0]} and {authors[1]}")
        else:
            parts.append(f"{authors[0]} et al.")
    return " and ".join(parts) or None


def _cut(text: str, start: int, end: int, cuts: list[tuple[int, int]]) -> str:
    """``text[start:end]`` without the placeholder ranges."""
    out: list[str] = []
    pos = start
    for cut_start, cut_end in cuts:
        if cut_end <= pos or cut_start >= end:
            continue
        out.append(text[pos:max(pos, cut_start)])
        pos = max(pos, cut_end)
    out.append(text[pos:end])
    return "".join(out)


def _sentence_for(spans: list[tuple[int, int]], offset: int,
                  textual: bool) -> tuple[int, int] | None:
    """The sentence a cite at ``offset`` stands in. Between two sentences a citation
    that prints names belongs to the one after it, any other to the one before
    ("data.\\footcite{x} Next")."""
    if not spans:
        return None
    starts = [s for s, _ in spans]
    k = bisect.bisect_right(starts, offset) - 1
    if k >= 0 and spans[k][0] < offset < spans[k][1]:
        return spans[k]
    before = spans[k] if k >= 0 and spans[k][1] <= offset else (
        spans[k - 1] if k >= 1 else None)
    after_index = k + 1 if k < 0 or spans[k][0] < offset else k
    after = spans[after_index] if 0 <= after_index < len(spans) else None
    if textual:
        return after or before
    return before or after


def _with_quotation(spans: list[tuple[int, int]], span_starts: list[int],
                    quoted: Sequence[quotations.Quotation], quote_starts: list[int],
                    span: tuple[int, int]) -> tuple[int, int]:
    """The claim's span widened back to the opening mark of a quotation of several
    sentences that ends in it ("„First. Second.“ \\cite{x}": the whole quotation is the
    claim, so that it is checked verbatim, not its last sentence). Quotations do not
    overlap: the one the span's start is in is found by bisection."""
    start, end = span
    q = bisect.bisect_left(quote_starts, start) - 1
    if q >= 0:
        quotation = quoted[q]
        if quotation.start < start <= quotation.end and start - quotation.start <= MAX_QUOTED_CHARS:
            opening = quotation.start - 1  # the opening mark
            k = bisect.bisect_right(span_starts, opening) - 1
            start = min(start, spans[k][0] if k >= 0 else opening)
    return start, end


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


def math_text(tex: str) -> str:
    """Inline math as text: symbols as characters (``\\alpha`` α, ``\\leq`` ≤), other
    macros and braces dropped ("p \\leq 0.05" -> "p ≤ 0.05")."""
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


def bibitems(tex: str, first: int = 0) -> list[LibraryItem]:
    """The entries of a hand-made reference list (``\\bibitem[label]{key} text``): each
    key's entry text read for its authors, year, title and DOI as a PDF's reference list
    is (:func:`~citerun.pipeline.citations.entries.parse_entry`)."""
    items: list[LibraryItem] = []
    found = list(_BIBITEM.finditer(tex))
    for number, item in enumerate(found[:MAX_BIBITEMS]):
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


class _Texts(Mapping[str, str]):
    """The bundle's TeX files decoded when first read: a bundle of 300 MB of chapters
    that the thesis never includes costs no decoding."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self._files = {path: data for path, data in files.items()
                       if path.lower().endswith((".tex", ".ltx", ".sty", ".cls"))}
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
    """The main .tex: the one given, else the one with a ``\\documentclass`` (not a
    subfile's or a standalone figure's)."""
    if main is not None:
        path = posixpath.normpath(main.strip().lstrip("/")) if main.strip() else ""
        for candidate in (path, path + ".tex"):
            if candidate in files:
                return candidate
        raise WriterFileError(f"the main file {main!r} is not in the bundle")
    tex = sorted(p for p in files if p.lower().endswith((".tex", ".ltx")))
    if not tex:
        raise WriterFileError("the bundle holds no .tex file")
    mains = []
    for path in tex:
        found = _DOCUMENTCLASS.search(files.head(path))
        if found and found.group(1) not in _NOT_MAIN_CLASSES:
            mains.append(path)
    if len(mains) == 1:
        return mains[0]
    if not mains and len(tex) == 1:
        return tex[0]
    if not mains:
        raise WriterFileError(f"no .tex file of the bundle has a \\documentclass "
                              f"({', '.join(tex[:10])}); name the main file")
    raise WriterFileError(f"{len(mains)} .tex files have a \\documentclass "
                          f"({', '.join(mains[:10])}); name the main file")


def read_latex(files: Mapping[str, bytes], main: str | None = None,
               bib: Sequence[LibraryItem] = ()) -> WrittenThesis:
    """The thesis in a bundle of LaTeX files (path inside the bundle -> bytes).

    ``main`` names the main .tex (else the one with ``\\documentclass``); ``bib`` are
    library items given besides the .bib files the thesis names. A key no library holds
    stays a citation (it is reported unresolved later); ``\\nocite`` is no citation.
    """
    texts = _Texts(files)
    main_path = _choose_main(texts, main)
    reader = _Reader(texts, main_path)
    text = texts[main_path]
    has_document = _BEGIN_DOCUMENT.search(text) is not None
    if _BABEL_GERMAN.search(text[:200_000]):
        reader.special = _SPECIAL_GERMAN
    reader.frames.append(_Frame("base", None if has_document else reader.body))
    reader.open_files.append(main_path)
    reader.scan(_Source(main_path, text, _newlines(text)), 0)
    library, skipped = _libraries(files, reader)
    merged: dict[str, LibraryItem] = {}
    for item in (*library, *reader.bibitems, *bib):
        merged.setdefault(item.key, item)
    items = tuple(merged.values())
    citations, plain = reader.result(items)
    return WrittenThesis(format="latex", pages=((1, plain),), citations=citations,
                         library=items, skipped=(*reader.skipped, *skipped))


def _libraries(files: Mapping[str, bytes], reader: _Reader) -> tuple[
        list[LibraryItem], list[Skipped]]:
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
    if not reader.libraries:
        paths = bibs
    # The same file given again with --bib (the CLI puts it under library/, read besides):
    # read once, so that its items and its skipped entries are not listed twice.
    given = {files[p] for p in files if p.startswith(LIBRARY_DIR)}
    items: list[LibraryItem] = []
    for path in paths:
        if not path.startswith(LIBRARY_DIR) and files[path] in given:
            continue
        found, skips = bibtex.read_bibtex(_decode(files[path]))
        items.extend(found)
        skipped.extend(dataclasses.replace(s, where=f"{path} {s.where}") for s in skips)
    return items, skipped
