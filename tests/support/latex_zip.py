"""A zipped LaTeX thesis of the shape issue 47 found failing on the web: its
``\\documentclass`` options over several lines in an ``\\input`` preamble, ten chapter
files that sort before ``main.tex``, a ``.bib`` beside it; and variants of it."""

from __future__ import annotations

import io
import zipfile

PREAMBLE = r"""% preamble.tex: the class and packages
%\documentclass{article}  (an old class, commented out)
\documentclass[
  a4paper,
  12pt,
  twoside,
  BCOR=8mm
]{scrreprt}
\usepackage[utf8]{inputenc}
\usepackage[style=authoryear,backend=biber]{biblatex}
\addbibresource{literature.bib}
"""

MAIN = r"""% !TeX program = lualatex
\input{preamble}
\title{Street Trees and Urban Heat}
\author{A. Student}
\begin{document}
\maketitle
""" + "".join(f"\\include{{chapters/{n:02d}-chapter}}\n" for n in range(1, 11)) + r"""
\printbibliography
\end{document}
"""

BIB = r"""@article{alvarez2019,
  author = {Alvarez, Maria and Chen, Li},
  title = {Street trees lower the temperature of narrow streets},
  journal = {Urban Climate},
  year = {2019},
  volume = {27},
  pages = {1--12},
}
@book{bostock1999,
  author = {Bostock, John},
  title = {Cities and their heat},
  publisher = {Example Press},
  year = {1999},
}
"""


def chapter(n: int) -> str:
    return (f"\\chapter{{Chapter {n}}}\nStreet trees cool narrow streets by up to {n} "
            f"degrees \\parencite[p.~{n}]{{alvarez2019}}. Cities keep their heat for {n} "
            "hours at night \\autocite{bostock1999}.\n")


def files(**extra: str) -> dict[str, str]:
    """The thesis's files by path in the zip (``extra`` added or replacing)."""
    out = {"main.tex": MAIN, "preamble.tex": PREAMBLE, "literature.bib": BIB}
    out.update({f"chapters/{n:02d}-chapter.tex": chapter(n) for n in range(1, 11)})
    out.update(extra)
    return out


def zipped(members: dict[str, str], top: str = "") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for path, text in members.items():
            bundle.writestr(top + path, text)
    return out.getvalue()
