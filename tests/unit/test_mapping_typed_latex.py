"""A LaTeX thesis whose author-year citations are typed, with a hand-made
``thebibliography`` (issue 46, item 6): 0 of 101 such citations had a reference entry,
and none carried its ``file:line``.

The thesis's reference list is a ``thebibliography`` environment: the LaTeX reader keeps
it as the library, not as text, so the rules of the page that find the typed citations
found no list. Now the library's items the citations name are the entries, and each
typed citation says where its paragraph starts in the writer's files.
"""

from __future__ import annotations

from citerun.pipeline import citations, recipe
from citerun.pipeline.settings import LimitSettings
from citerun.pipeline.writer import formats

MAIN = r"""\documentclass{article}
\begin{document}
\input{chapters/intro}
\begin{thebibliography}{9}
\bibitem[Eaton(2005)]{eaton05} Eaton, A. (2005). Captive crows and their cages.
  \emph{Journal of Birds}, 1, 1--9.
\bibitem[Eaton et al.(2006)]{eaton06} Eaton, A., Brown, B., \& Clark, C. (2006).
  Wild crows make tools. \emph{Journal of Birds}, 2, 3--14.
\bibitem[Hammer and Li(2010)]{hammer10} Hammer, A., \& Li, B. (2010). Hook making in
  New Caledonian crows. \emph{Animal Cognition}, 3, 5--16.
\end{thebibliography}
\end{document}
"""
INTRO = r"""\section{Einleitung}
Crows use tools in the wild (Eaton et al., 2006).

Captive crows do not, as \emph{Eaton} found
in cages (Eaton, 2005). Crows make hooks
from twigs (Hammer and Li, 2010).
"""


def _thesis() -> citations.Extraction:
    data = formats.bundle({"main.tex": MAIN.encode(), "chapters/intro.tex": INTRO.encode()})
    doc = recipe.read(data, LimitSettings(), 10**8)
    return recipe.extract(doc, LimitSettings())


def test_typed_citations_find_their_bibitems_and_say_where_they_stand() -> None:
    extraction = _thesis()
    assert [(c.marker, c.location) for c in extraction.citations] == [
        ("(Eaton et al., 2006)", "chapters/intro.tex:2"),
        ("(Eaton, 2005)", "chapters/intro.tex:4"),
        ("(Hammer and Li, 2010)", "chapters/intro.tex:4")]
    sources = [
        citations.SourceInfo("single", "Eaton_2005.pdf", "Captive crows and their cages",
                             ("Anna Eaton",), 2006),
        citations.SourceInfo("three", "wild.pdf", "Wild crows make tools", ("Anna Eaton",),
                             2006),
        citations.SourceInfo("hooks", "Hammer_HookMaking2010.pdf", "1 Introduction", (), None),
    ]
    mapped = {m.citation.marker: (m.reference.label if m.reference else None, m.document_id)
              for m in citations.map_citations(extraction, sources)}
    assert mapped == {"(Eaton et al., 2006)": ("eaton06", "three"),
                      "(Eaton, 2005)": ("eaton05", "single"),
                      "(Hammer and Li, 2010)": ("hammer10", "hooks")}


def test_only_the_items_cited_become_entries() -> None:
    extraction = _thesis()
    assert sorted(e.label or "" for e in extraction.references) == [
        "eaton05", "eaton06", "hammer10"]
    body = MAIN.replace(r"\input{chapters/intro}", "Crows use tools (Eaton et al., 2006).")
    doc = recipe.read(formats.bundle({"main.tex": body.encode()}), LimitSettings(), 10**8)
    assert [e.label for e in recipe.extract(doc, LimitSettings()).references] == ["eaton06"]


def test_a_thesis_with_its_own_typed_list_keeps_it() -> None:
    body = MAIN.split(r"\begin{thebibliography}")[0].replace(
        r"\input{chapters/intro}",
        "Crows use tools (Eaton et al., 2006).\n\n\\section*{References}\n\n"
        "Eaton, A., Brown, B., and Clark, C. (2006). Wild crows make tools. Birds, 2.\n"
    ) + "\\end{document}\n"
    doc = recipe.read(formats.bundle({"main.tex": body.encode()}), LimitSettings(), 10**8)
    extraction = recipe.extract(doc, LimitSettings())
    (entry,) = extraction.references
    assert entry.label is None and entry.title == "Wild crows make tools"
