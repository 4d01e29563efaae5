"""Where-lines in the writer's own names (issue 46, item 5), and a Word claim's full stop.

Each test is a small document of the shape that misled a writer: a duplicate key
located in the staging name "0-literature.bib", a class's ``.def`` beside its ``.cls``
"not in the bundle", the dead branch of ``\\IfFileExists`` listed as not taken, a Word
thesis's "not taken" lines on "page 1" where its citations say "paragraph N".
"""

from __future__ import annotations

import pathlib

from citerun.pipeline import recipe
from citerun.pipeline.settings import LimitSettings
from citerun.pipeline.writer import formats, latex
from citerun.pipeline.writer.docx import read_docx
from tests.support import docx_fixtures as fx

REFS = (b"@misc{a, author={Alt, Florian}, title={First}, year={2020}}\n\n"
        b"@misc{a, title={Again}}\n")


def _tex(body: str, cls: str = "article") -> bytes:
    return (f"\\documentclass{{{cls}}}\n\\begin{{document}}\n{body}\n"
            f"\\end{{document}}\n").encode()


def test_a_duplicate_key_is_located_in_the_theses_own_library_file() -> None:
    # `citerun verify thesis/main.tex --bib thesis/literature.bib` stages the library
    # again as library/0-literature.bib: the writer's file is thesis/literature.bib
    files = {"thesis/main.tex": _tex("A claim \\cite{a}.\n\\bibliography{literature}"),
             "thesis/literature.bib": REFS,
             f"{formats.LIBRARY_DIR}0-literature.bib": REFS}
    found = formats.read_thesis(formats.bundle(files))
    assert [s.where for s in found.skipped] == ["thesis/literature.bib, line 3"]


def test_a_library_given_only_with_bib_is_named_as_given_and_listed_once() -> None:
    files = {"main.tex": _tex("A claim \\cite{a}."),
             f"{formats.LIBRARY_DIR}0-literature.bib": REFS}
    found = formats.read_thesis(formats.bundle(files))
    assert [s.where for s in found.skipped] == ["literature.bib, line 3"]
    assert [(i.key, i.title) for i in found.library] == [("a", "First")]


def test_a_classes_def_file_beside_it_is_collected_and_read(tmp_path: pathlib.Path) -> None:
    from citerun.cli import verify

    (tmp_path / "main.tex").write_bytes(_tex(
        "A claim stands here.\\sidenote{\\cite{a}} Next claim \\mycite{a}.", "mytufte"))
    (tmp_path / "mytufte.cls").write_bytes(b"\\LoadClass{book}\\input{mytufte-common.def}")
    (tmp_path / "mytufte-common.def").write_bytes(b"\\newcommand{\\mycite}[1]{\\cite{#1}}")
    (tmp_path / "mytufte.cfg").write_bytes(b"% settings")
    (tmp_path / "bk10.clo").write_bytes(b"% sizes")
    files = verify._folder_files(tmp_path)
    assert {"mytufte-common.def", "mytufte.cfg", "bk10.clo"} <= set(files)
    found = latex.read_latex(files)
    assert [(c.keys, c.claim) for c in found.citations] == [
        (("a",), "A claim stands here."), (("a",), "Next claim.")]
    assert found.skipped == ()


def test_the_dead_branch_of_iffileexists_is_not_listed() -> None:
    files = {"main.tex": _tex("\\IfFileExists{ch1.tex}{\\input{ch1}}{\\input{ch1-draft}}\n\n"
                              "\\IfFileExists{extra.tex}{\\input{extra}}"
                              "{Fallback text \\cite{b}.}\n\n"
                              "\\InputIfFileExists{ch2}{}{\\input{ch2-draft}}"),
             "ch1.tex": b"Chapter one \\cite{a}.", "ch2.tex": b"Chapter two \\cite{c}."}
    found = latex.read_latex(files)
    assert [(c.keys, c.claim) for c in found.citations] == [
        (("a",), "Chapter one."), (("b",), "Fallback text."), (("c",), "Chapter two.")]
    assert found.skipped == ()


def test_a_word_theses_not_taken_lines_name_its_paragraphs() -> None:
    body = "".join([
        fx.paragraph(fx.run("Introduction"), style="berschrift1"),
        fx.paragraph(fx.run("Cities are warmer at night (Smith, 2020).")),
        fx.paragraph(fx.run("The share lies in [0, 1] for every district (Jones, 2019).")),
        fx.paragraph(fx.run("References"), style="berschrift1"),
        fx.paragraph(fx.run("Jones, A. (2019). Trees in cities. Journal of Heat, 3, 1-10.")),
        fx.paragraph(fx.run("Smith, B. (2020). Warm nights. Urban Climate, 4, 5-9."))])
    limits = LimitSettings()
    extraction = recipe.extract(formats.read_document(fx.docx(body), limits, 10**8), limits)
    assert [c.location for c in extraction.citations] == ["paragraph 2", "paragraph 3"]
    assert [(s.where, s.text) for s in extraction.skipped] == [("paragraph 3", "[0, 1]")]


def test_a_narrative_field_before_the_full_stop_leaves_one() -> None:
    item = fx.paperpile_item("c1", "Carrozzino2021-ab", "Clinimetric criteria",
                             ["Carrozzino", "Patierno", "Guidi"], 2021)
    body = fx.paragraph(fx.run("The plan follows the recommendations as outlined by "),
                        fx.paperpile_field([item], "Carrozzino et al. (2021)"), fx.run("."))
    (found,) = read_docx(fx.docx(body)).citations
    assert found.claim == "The plan follows the recommendations as outlined by Carrozzino et al."


def test_the_rationale_names_a_latex_marker_as_written() -> None:
    # "no source document matches the citation '\\\\cite{x}'": repr() doubled the backslash
    from citerun.pipeline.citations import model
    from citerun.pipeline.judging import settling

    citation = model.ExtractedCitation(ordinal=1, key="alt", claim="A claim.", page=1,
                                       marker="\\cite{alt}", locator=None)
    (judgement,) = settling.settle(
        [model.MappedCitation(citation, None, None, None, None)], {})
    assert not isinstance(judgement, bool)
    assert judgement.rationale == ("no source document matches the citation '\\cite{alt}' "
                                   "and the reference list has no entry for it")
