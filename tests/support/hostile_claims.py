"""Hostile claims (issue 41): theses whose claims are long or repeated, citing the demo's
sources, as a run stages them. Pure functions of their arguments (no randomness).

* :func:`long_claim_tex` - a LaTeX thesis whose one sentence runs ``words`` words
  (40,000: one judge task of it peaked at 3.5 GiB before the claim was bounded).
* :func:`quoted_300_tex` - one long quoted sentence cited 300 times (a 77 KB .tex: both
  local workers at 3 GB, the sentence copied, judged and its quotation checked 300 times).
* :func:`forty_markers_pdf` - a PDF thesis with one 42,000-character sentence carrying
  40 numeric markers (40 such claims), and its numbered list.
"""

from __future__ import annotations

import pathlib
import tempfile

from citerun.pipeline import intake
from examples import pdfwriter  # a folder of scripts: a namespace package from the root

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

BIB = r"""@article{alvarez2019,
  title = {Nocturnal Heat in Dense Urban Cores: {A} Two-Year Sensor Study in {Seville}},
  author = {Alvarez, Maria and Becker, Thomas},
  date = {2019},
  file = {sources/alvarez2019.pdf}
}
@article{lindqvist2021,
  title = {Street Trees and Surface Temperature},
  author = {Lindqvist, Hannah and Haddad, Omar and Novak, Petra},
  year = {2021},
  file = {sources/lindqvist2021.pdf}
}
"""

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "do", "fa", "gu",
              "ha", "je", "ko", "li")
_WORDS = ("heat", "island", "city", "night", "trees", "canopy", "temperature", "lower",
          "higher", "rose", "fell", "street", "summer", "core", "sensor", "dense")


def words(count: int) -> str:
    """``count`` words: made-up ones (3,000 of them) among the demo's topic words, so the
    claim is as varied as prose."""
    out = []
    for n in range(count):
        if n % 4 == 3:
            out.append(_WORDS[(n * 7) % len(_WORDS)])
        else:
            k = (n * 7919) % 3000
            out.append("".join(_SYLLABLES[(k >> s) % 16] for s in (0, 4, 8)))
    return " ".join(out)


def _bundle(tex: str) -> bytes:
    return intake.thesis_bytes("thesis.tex", tex.encode(), [("refs.bib", BIB.encode())])


def long_claim_tex(count: int = 40_000) -> bytes:
    """A thesis of one ordinary cited sentence and one of ``count`` words, both citing
    alvarez2019."""
    return _bundle(
        "\\documentclass{article}\n\\begin{document}\n"
        "In dense city centres the urban heat island is most pronounced after sunset "
        "\\parencite{alvarez2019}.\n\n"
        f"The urban heat island at night {words(count)} \\parencite{{alvarez2019}}.\n"
        "\\end{document}\n")


def quoted_300_tex(times: int = 300, count: int = 10_000) -> bytes:
    """One quoted sentence of ``count`` words (about 70 KB) carrying ``times`` markers, each
    a key of its own whose library entry attaches Alvarez's PDF (about 77 KB of .tex)."""
    cites = " ".join(f"\\parencite[1]{{q{n}}}" for n in range(times))
    bib = "".join(f"@article{{q{n},\n  title = {{Nocturnal Heat in Dense Urban Cores}},\n"
                  "  author = {Alvarez, Maria and Becker, Thomas},\n  year = {2019},\n"
                  "  file = {sources/alvarez2019.pdf}\n}\n" for n in range(times))
    tex = ("\\documentclass{article}\n\\begin{document}\n"
           "As its authors put it, \\enquote{The urban heat island was strongest at night "
           f"{words(count)}}} {cites}.\n\\end{{document}}\n")
    return intake.thesis_bytes("thesis.tex", tex.encode(), [("refs.bib", bib.encode())])


def forty_markers_pdf(chars: int = 42_000, markers: int = 40) -> bytes:
    """A PDF thesis: one sentence of about ``chars`` characters with ``markers`` markers
    [1]..[n] spread through it, and a numbered list of n entries (the odd ones
    Alvarez's paper, the even ones Lindqvist's, by their titles)."""
    per = max(1, chars // markers // 7)  # about 7 characters a word
    pieces = [f"{words(per)} [{n}]" for n in range(1, markers + 1)]
    sentence = "The urban heat island at night " + " ".join(pieces) + " ends here."
    entries = [
        f"[{n}] Alvarez, M., & Becker, T. (2019). Nocturnal Heat in Dense Urban Cores: A "
        "Two-Year Sensor Study in Seville. Urban Climate, 12, 1-20." if n % 2 else
        f"[{n}] Lindqvist, H., Haddad, O., & Novak, P. (2021). Street Trees and Surface "
        "Temperature: Evidence from Twelve European Cities. Landscape and Urban Planning, "
        "40, 1-12."
        for n in range(1, markers + 1)]
    spec = pdfwriter.DocumentSpec(
        filename="forty-markers.pdf", title="Heat at night", authors=("Hostile Writer",),
        year=2024, blocks=(
            *pdfwriter.front_matter("Heat at night", ("Hostile Writer",), "A thesis, 2024"),
            pdfwriter.Block("paragraph", sentence), pdfwriter.Block("pagebreak"),
            pdfwriter.Block("heading", "References"),
            *(pdfwriter.Block("reference", e) for e in entries)))
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / spec.filename
        pdfwriter.write_pdf(spec, path)
        return path.read_bytes()


def demo_sources() -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted((EXAMPLES / "sources").glob("*.pdf"))]
