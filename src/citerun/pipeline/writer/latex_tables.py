"""What the LaTeX reader knows of LaTeX: the tables of cite
commands, includes, definitions, conditionals, argument specs and environments, the
text macros (from pylatexenc's table), and the patterns the reader matches with."""

from __future__ import annotations

import re

from pylatexenc import latex2text  # type: ignore[import-untyped]

from citerun.pipeline.citations import patterns


# The reader's bounds are settings (:class:`~citerun.pipeline.writer.limits.LatexLimits`).
#: How far an argument (``[p. 45]``, ``{smith2020,jones2019}``) is looked for.
ARG_WINDOW = 4_000

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
    "pagecolor": "[{", "todo": "[{",
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
    # Layout: lengths, offsets, counts (issue 46: none of it is text).
    "enlargethispage": "*{", "addvspace": "{", "needspace": "{", "Needspace": "*{",
    "phantom": "{", "hphantom": "{", "vphantom": "{", "footnotemark": "[",
    "sidenotemark": "[", "pagebreak": "[", "nopagebreak": "[", "nolinebreak": "[",
    "setstretch": "{", "hyphenation": "{", "setlist": "[{", "columnbreak": "",
    "resizebox": "*{{t", "scalebox": "{[t", "rotatebox": "[{t",
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
                                             "subtable", "algorithm", "listing", "figwindow",
                                             "marginfigure", "margintable", "SCfigure",
                                             "SCtable")
                    for star in ("", "*"))
_TABULAR = frozenset({"tabular", "tabular*", "tabularx", "tabulary", "longtable", "array",
                      "supertabular", "xtabular", "tblr", "longtblr"})
# Mandatory arguments an environment's \begin takes that are not text.
_ENV_ARGS = {"tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "longtable": 1,
             "array": 1, "supertabular": 1, "xtabular": 1, "tblr": 1, "longtblr": 1,
             "minipage": 1, "otherlanguage": 1, "otherlanguage*": 1, "wrapfigure": 2,
             "wraptable": 2, "multicols": 1, "multicols*": 1, "subfigure": 1, "subtable": 1,
             "figwindow": 1,
             # layout (issue 46): widths, spacings, margins, positions are not text
             "adjustbox": 1, "spacing": 1, "column": 1, "textblock": 1, "textblock*": 1,
             "addmargin": 1, "addmargin*": 1, "changemargin": 2, "wrapfloat": 2}
# Environments placed at coordinates after their arguments: textpos's "(2cm,3cm)".
_ENV_COORDINATES = frozenset({"textblock", "textblock*"})

# Notes: their text is a note's, their citations stand for the body sentence of their
# mark; each with the optional arguments before its text (tufte's \\sidenote[num][offset]
# and \\marginnote[offset], \\marginpar[left]) and after it (marginnote's [offset]).
_NOTES: dict[str, tuple[int, int]] = {
    "footnote": (1, 0), "footnotetext": (1, 0), "sidenote": (2, 0), "sidenotetext": (2, 0),
    "marginnote": (1, 1), "marginpar": (1, 0), "mpfootnote": (1, 0)}
# A TeX length: "2mm", "-2.7cm", "0.5\\textwidth", "1em plus 2pt".
_LENGTH = (r"[-+]?\s*(?:\d+(?:[.,]\d*)?|[.,]\d+)?\s*(?:(?:pt|pc|in|bp|cm|mm|dd|cc|sp|ex|em|mu"
           r"|px)(?![A-Za-z])|\\(?:text|line|column|paper|marginpar)(?:width|height)\b"
           r"|\\(?:baselineskip|parindent|parskip|hsize|vsize|fill|stretch)\b)")
_LENGTHS = rf"{_LENGTH}(?:\s*(?:plus|minus)\s*{_LENGTH})*"
# An optional argument that places or sizes, never text: empty, a length, a float's
# placement ("htbp", "t", "H"), keys with values ("width=0.5\\textwidth").
LAYOUT_ARG = re.compile(
    rf"\s*(?:{_LENGTHS}|[htbpHF!]+|[A-Za-z -]+\s*=[^=]*(?:,[^=,]*=?[^,]*)*)?\s*")
LENGTH_ARG = re.compile(rf"\s*{_LENGTHS}\s*")
# TeX's own length commands and registers: "\\vskip 2mm", "\\parindent=0pt".
_BARE_LENGTH = re.compile(rf"\s*=?\s*{_LENGTHS}(?![A-Za-z])")
_LENGTH_REGISTERS = frozenset({
    "vskip", "hskip", "kern", "mskip", "mkern", "parskip", "parindent",
    "baselineskip", "lineskip", "tabcolsep", "columnsep", "arraycolsep", "itemsep", "parsep",
    "topsep", "partopsep", "labelsep", "leftmargin", "abovecaptionskip", "belowcaptionskip",
    "textfloatsep", "intextsep", "floatsep", "footnotesep", "marginparsep", "marginparwidth",
    "fboxsep", "fboxrule", "arrayrulewidth"})

# A display formula stands in a claim as this mark (issue 46: never its symbols run
# together, "\\frac{1}{2\\pi}" as "12π").
FORMULA = "[formula]"
# What ends a formula's body besides its last symbol: labels, tags, line ends, spaces.
_MATH_TAIL = re.compile(r"(?:\s|\\(?:label|tag\*?)\s*\{[^{}]*\}|\\(?:nonumber|notag)\b|\\\\|&|"
                        r"\\[,;:! ]|\\q?quad\b|\\(?:text|mbox|mathrm)\s*\{\s*\}|[{}])+$")
_CONTROL_WORD = re.compile(r"\s*\\[A-Za-z@]+")

# What a template's package may not redefine: the commands this reader reads itself.
_BUILTIN = (frozenset(_CITES) | _INCLUDES | _DEFINITIONS | _DOCUMENT_COMMANDS | _HEADINGS
            | frozenset(_ARGSPECS) | frozenset(_LOADS) | _NOT_CITES
            | frozenset(_NOTES) | frozenset({"caption", "item", "par", "begin", "end",
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
# "p. 45", "pp. 45--47", "S. 45 f.", "45ff", "xii": a page locator and its prefix.
_PAGE_PREFIX = patterns.PAGE_PREFIX  # any case (the pattern below ignores it)
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
