"""The LaTeX thesis and BibTeX library readers (issue 24): real files, hostile ones bounded.

The thesis under ``tests/data/writer/latex/thesis`` is written as people write them:
biblatex with ``\\footcite`` and multi-cites, natbib commands, chapters by ``\\input``
and ``\\include``, pre- and postnotes, a figure caption, German text with accents, and
a Better BibTeX library whose ``file`` fields come in Zotero's, JabRef's and Mendeley's
shapes. The hostile inputs must end in a clear error or a Skipped entry, in bounded time.
"""

from __future__ import annotations

import io
import pathlib
import time
import zipfile

import pytest

from citerun.pipeline.writer import archive, bib, latex, latex_text
from citerun.pipeline.writer.limits import LatexLimits
from citerun.pipeline.writer.model import (
    LibraryItem,
    LibraryLimits,
    WriterFileError,
    WrittenCitation,
    WrittenThesis,
    to_extraction,
)

THESIS = pathlib.Path(__file__).resolve().parents[1] / "data" / "writer" / "latex" / "thesis"


def _bundle(root: pathlib.Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _doc(body: str, preamble: str = "") -> dict[str, bytes]:
    return {"main.tex": (f"\\documentclass{{article}}\n{preamble}\n\\begin{{document}}\n"
                         f"{body}\n\\end{{document}}\n").encode()}


@pytest.fixture(scope="module")
def thesis() -> WrittenThesis:
    return latex.read_latex(_bundle(THESIS))


def _by_marker(thesis: WrittenThesis) -> dict[str, list[WrittenCitation]]:
    found: dict[str, list[WrittenCitation]] = {}
    for citation in thesis.citations:
        found.setdefault(citation.marker, []).append(citation)
    return found


# -- the library --------------------------------------------------------------------


def test_bibtex_items_with_names_years_dois_and_files() -> None:
    items, skipped = bib.read_bibtex((THESIS / "refs.bib").read_text("utf-8"))
    by_key = {item.key: item for item in items}
    assert set(by_key) == {"smith2020", "mueller2019", "who2021", "jones2018"}
    smith = by_key["smith2020"]
    assert smith.title == "BERT Über Alles: Hallucinated References & How to Find Them"
    assert smith.authors == ("Smith", "Doe")
    assert smith.year == 2020  # from biblatex's date = {2020-05-02}
    assert smith.doi == "10.1000/xyz_123"
    assert smith.files == ("/home/me/Zotero/storage/ABCD1234/Smith - 2020 - BERT Uber Alles.pdf",)
    assert by_key["mueller2019"].authors == ("Müller", "van der Berg", "Li")
    # Zotero's own export: Description:path:mime-type, ";" between attachments.
    assert by_key["mueller2019"].files == ("files/12/Müller et al. - 2019 - Zitieren.pdf",
                                           "files/13/snapshot.html")
    # An institution in braces is one name; Mendeley's $\backslash$ drive letter.
    assert by_key["who2021"].authors == ("World Health Organization",)
    assert by_key["who2021"].files == (
        "C:/Users/me/Documents/Mendeley Desktop/WHO - 2021 - Global Report.pdf",)
    # JabRef with an escaped Windows path.
    assert by_key["jones2018"].files == ("C:\\Users\\me\\papers\\jones2018.pdf",)
    assert by_key["jones2018"].authors == ("Jones",) and by_key["jones2018"].kind == "inproceedings"
    assert len(skipped) == 1 and "malformed" in skipped[0].reason
    assert skipped[0].where == "line 28" and "broken" in skipped[0].text


@pytest.mark.parametrize(("field", "paths"), [
    ("files/12/Smith - 2020 - Title.pdf", ("files/12/Smith - 2020 - Title.pdf",)),
    (r"C\:\\Users\\me\\a.pdf;C\:\\Users\\me\\b.pdf", ("C:\\Users\\me\\a.pdf", "C:\\Users\\me\\b.pdf")),
    (":papers/x.pdf:PDF", ("papers/x.pdf",)),
    ("Supplement:papers/supp.pdf:PDF;:papers/x.pdf:PDF", ("papers/supp.pdf", "papers/x.pdf")),
    (r":C$\backslash$:/Users/me/x.pdf:pdf", ("C:/Users/me/x.pdf",)),
    (r":Users/me/Mendeley Desktop/Smith\_2020.pdf:pdf", ("Users/me/Mendeley Desktop/Smith_2020.pdf",)),
])
def test_file_field_shapes(field: str, paths: tuple[str, ...]) -> None:
    assert bib.file_paths(field) == paths


def test_bibtex_duplicate_key_skipped_first_kept() -> None:
    items, skipped = bib.read_bibtex("@misc{a, title={First}}\n@misc{a, title={Second}}\n")
    assert [(i.key, i.title) for i in items] == [("a", "First")]
    assert len(skipped) == 1 and "second entry with the key 'a'" in skipped[0].reason


def test_bibtex_over_the_limits_refused_fast() -> None:
    many = "".join(f"@misc{{k{i},title={{t}}}}\n" for i in range(LibraryLimits().max_items + 1))
    started = time.monotonic()
    with pytest.raises(WriterFileError, match="entries, over the limit"):
        bib.read_bibtex(many)
    huge = "@misc{k, abstract={" + "x" * (LibraryLimits().max_bytes + 1) + "}}"
    with pytest.raises(WriterFileError, match="over the limit"):
        bib.read_bibtex(huge)
    assert time.monotonic() - started < 5  # refused before parsing


def test_bibtex_deeply_nested_title_is_text() -> None:
    items, _ = bib.read_bibtex("@misc{k, title={" + "{" * 5000 + "Deep" + "}" * 5000 + "}}")
    assert items[0].title == "Deep"


# -- the thesis ---------------------------------------------------------------------


def test_every_citation_with_keys_locators_and_prenotes(thesis: WrittenThesis) -> None:
    found = {(c.marker, c.keys, c.locator, c.prenote, c.in_footnote) for c in thesis.citations}
    assert found == {
        ("\\parencite[p.~45]{smith2020}", ("smith2020",), "45", None, False),
        ("\\textcite{mueller2019}", ("mueller2019",), None, None, False),
        ("\\footcite[pp.~12--14]{who2021}", ("who2021",), "12-14", None, True),
        ("\\cite[vgl.][S.~45 f.]{mueller2019}", ("mueller2019",), "45 f.", "vgl.", True),
        ("\\citeauthor{smith2020}", ("smith2020",), None, None, True),
        ("\\citep[see][chapter~3]{smith2020,jones2018}", ("smith2020", "jones2018"),
         "chapter 3", "see", False),
        ("\\citet{jones2018}", ("jones2018",), None, None, False),
        ("\\autocites(see)()[45ff]{smith2020}[][12]{mueller2019}", ("smith2020",), "45 ff.",
         None, False),
        ("\\autocites(see)()[45ff]{smith2020}[][12]{mueller2019}", ("mueller2019",), "12",
         None, False),
        ("\\citet{who2021}", ("who2021",), None, None, False),
        ("\\parencite[vgl.][S.~3]{mueller2019}", ("mueller2019",), "3", "vgl.", False),
        ("\\cite*{unknownkey}", ("unknownkey",), None, None, False),
        ("\\citealp[Sec.~2]{jones2018}", ("jones2018",), "Sec. 2", None, False),
        ("\\cite{smith2020}", ("smith2020",), None, None, False),
    }
    where = {c.marker: c.where for c in thesis.citations}
    assert where["\\parencite[p.~45]{smith2020}"] == "thesis.tex:12"
    assert where["\\citet{jones2018}"] == "chapters/related.tex:3"
    assert where["\\cite{smith2020}"] == "chapters/method.tex:5"


def test_claims_are_the_body_sentences_as_plain_text(thesis: WrittenThesis) -> None:
    claims = {m: [c.claim for c in cs] for m, cs in _by_marker(thesis).items()}
    assert claims["\\parencite[p.~45]{smith2020}"] == ["Language models hallucinate references."]
    # \textcite prints the authors' names, as the page does.
    assert claims["\\textcite{mueller2019}"] == [
        "This was first measured by Müller et al. in a large study of scientific writing."]
    # \footcite after the period, and a \cite inside a \footnote: the body sentence.
    assert claims["\\footcite[pp.~12--14]{who2021}"] == claims["\\textcite{mueller2019}"]
    assert claims["\\cite[vgl.][S.~45 f.]{mueller2019}"] == [
        "Tools such as CiteCheck check citations automatically."]  # \newcommand expanded
    assert claims["\\citet{jones2018}"] == ["Jones argue that p < 0.05 is not enough."]
    assert claims["\\parencite[vgl.][S.~3]{mueller2019}"] == ["Die Fehlerquote ist hoch."]
    assert claims["\\cite*{unknownkey}"] == ["Weiße und größere Modelle sind besser."]
    assert claims["\\citet{who2021}"] == ["Error rates by model, after World Health Organization."]
    for citation in thesis.citations:
        assert "\\" not in citation.claim and "{" not in citation.claim
        for key in citation.keys:
            assert key not in citation.claim
        for heading in ("Introduction", "Related Work", "Method"):
            assert heading not in citation.claim
        assert "Error rates" not in citation.claim or citation.marker == "\\citet{who2021}"


def test_library_pages_and_skipped(thesis: WrittenThesis) -> None:
    assert [item.key for item in thesis.library] == ["smith2020", "mueller2019", "who2021",
                                                      "jones2018"]
    (number, text), = thesis.pages
    assert number == 1 and text.startswith("Introduction\n\nLanguage models hallucinate")
    assert "\\" not in text and "Text after the end" not in text and "inverbatim" not in text
    reasons = {s.where: s.reason for s in thesis.skipped}
    assert reasons["thesis.tex:20"] == "included file '../../etc/passwd': a path leaving the bundle"
    assert reasons["thesis.tex:21"] == "included file 'chapters/missing': not in the bundle"
    assert reasons["chapters/method.tex:3"] == "included file 'chapters/method.tex' includes itself"
    assert "verbatim" in reasons["chapters/method.tex:8"]
    assert "not part of the thesis" in reasons["thesis.tex:7"]  # \title{... \cite{...}}
    assert "malformed" in reasons["refs.bib line 28"]
    assert not any("notcited" in c.keys for c in thesis.citations)  # \nocite


def test_to_extraction_keys_are_labels(thesis: WrittenThesis) -> None:
    extraction = to_extraction(thesis)
    assert [e.label for e in extraction.references] == [i.key for i in thesis.library]
    keys = [c.key for c in extraction.citations]
    assert set(keys) == {"smith2020", "mueller2019", "who2021", "jones2018", "unknownkey"}
    first = extraction.citations[0]
    assert (first.key, first.locator, first.claim) == (
        "smith2020", "45", "Language models hallucinate references.")
    assert [c.ordinal for c in extraction.citations] == list(range(1, len(keys) + 1))


def test_zip_bundle_through_archive() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for path, data in _bundle(THESIS).items():
            out.writestr(path, data)
    from_zip = latex.read_latex(archive.read_bundle(buf.getvalue()))
    assert from_zip == latex.read_latex(_bundle(THESIS))


@pytest.mark.parametrize(("postnote", "locator"), [
    ("45", "45"), ("p. 45", "45"), ("p.~45", "45"), ("pp. 45--47", "45-47"),
    ("S. 45 f.", "45 f."), ("45ff", "45 ff."), ("45\\psq", "45 f."), ("xii", "xii"),
    ("Rn. 12", "Rn. 12"),
])
def test_locators(postnote: str, locator: str) -> None:
    assert latex_text.locator_of(latex_text.note_text(postnote)) == locator


def test_natbib_forms_and_sentence_placement() -> None:
    library = [LibraryItem(key="lee", authors=("Lee", "Kim")), LibraryItem(key="wu", authors=("Wu",))]
    files = _doc(
        "Models fail often. \\cite{lee} showed this first. \\Citet*{wu} confirmed it.\n"
        "As in~\\cite{lee,wu}, results hold (see \\citealp{wu}). Results differ "
        "\\citep[][45--47]{lee}.\\footnote{Compare \\citet{wu}.} The end.\n\n"
        "\\section{Results \\label{x}}\nA new paragraph \\parencites[3]{lee}[5]{wu} here.")
    found = [(c.keys, c.claim, c.locator, c.in_footnote)
             for c in latex.read_latex(files, bib=library).citations]
    assert found == [
        (("lee",), "Lee and Kim showed this first.", None, False),
        (("wu",), "Wu confirmed it.", None, False),
        (("lee", "wu"), "As in Lee and Kim and Wu, results hold (see Wu).", None, False),
        (("wu",), "As in Lee and Kim and Wu, results hold (see Wu).", None, False),
        (("lee",), "Results differ.", "45-47", False),
        (("wu",), "Results differ.", None, True),
        (("lee",), "A new paragraph here.", "3", False),
        (("wu",), "A new paragraph here.", "5", False),
    ]


def test_main_file_choice() -> None:
    files = {"a.tex": b"\\documentclass{article}\\begin{document}A.\\end{document}",
             "b.tex": b"\\documentclass{report}\\begin{document}B.\\end{document}",
             "c.tex": b"\\documentclass[a.tex]{subfiles}\\begin{document}C.\\end{document}"}
    with pytest.raises(WriterFileError, match=r"a\.tex, b\.tex"):
        latex.read_latex(files)
    assert latex.read_latex(files, main="b.tex").pages == ((1, "B."),)
    with pytest.raises(WriterFileError, match="not in the bundle"):
        latex.read_latex(files, main="../x.tex")


# -- hostile --------------------------------------------------------------------------


def _timed(files: dict[str, bytes]) -> tuple[WrittenThesis, float]:
    started = time.monotonic()
    result = latex.read_latex(files)
    return result, time.monotonic() - started


def test_absolute_and_escaping_inputs_are_skipped() -> None:
    thesis, _ = _timed(_doc("\\input{/etc/passwd}\n\\include{C:/Windows/win.ini}\n"
                            "\\input ../../etc/shadow\n\\import{../}{secret}\nText."))
    reasons = [s.reason for s in thesis.skipped]
    assert reasons == ["included file '/etc/passwd': an absolute path, outside the bundle",
                       "included file 'C:/Windows/win.ini': an absolute path, outside the bundle",
                       "included file '../../etc/shadow': a path leaving the bundle",
                       "included file '../secret': a path leaving the bundle"]
    assert thesis.pages == ((1, "Text."),)


def test_include_chains_are_capped() -> None:
    files = {f"c{i}.tex": f"Level {i}. \\input{{c{i + 1}}}".encode() for i in range(40)}
    files.update(_doc("\\input{c0}"))
    thesis, seconds = _timed(files)
    assert seconds < 5
    assert any("nest over 20 deep" in s.reason for s in thesis.skipped)
    assert "Level 19." in thesis.pages[0][1] and "Level 20." not in thesis.pages[0][1]


def test_many_nested_braces_bounded() -> None:
    body = "A claim " + "{" * 100_000 + "inside \\cite{k}" + "}" * 100_000 + ". Next."
    thesis, seconds = _timed(_doc(body))
    assert seconds < 20
    assert [(c.keys, c.claim) for c in thesis.citations] == [(("k",), "A claim inside.")]
    unclosed, seconds = _timed({"main.tex": ("\\documentclass{article}\\begin{document}"
                                             + "{" * 100_000 + "x \\cite{k}.").encode()})
    assert seconds < 20 and [c.keys for c in unclosed.citations] == [("k",)]


def test_unclosed_arguments_cost_one_pass() -> None:
    for unit in ("\\cite[", "\\section[", "\\verb|", "\\label{", "$", "\\begin{verbatim}"):
        thesis, seconds = _timed(_doc(unit * 100_000))
        assert seconds < 20, unit
        assert len(thesis.skipped) <= LatexLimits().max_skipped + 1


def test_macro_bombs_are_refused_or_skipped() -> None:
    levels = "".join(f"\\newcommand\\m{chr(98 + i)}{{" + f"\\m{chr(97 + i)}" * 10 + "}"
                     for i in range(8))
    with pytest.raises(WriterFileError, match="over"):
        latex.read_latex(_doc("\\mi", preamble="\\newcommand\\ma{xxxxxxxxxx}" + levels))
    thesis, _ = _timed(_doc("Loop \\again.", preamble="\\newcommand\\again{\\again}"))
    assert any("expands over 20 levels" in s.reason for s in thesis.skipped)


def test_total_text_is_capped() -> None:
    chapter = ("Words and more words. " * 50_000).encode()  # about 1.1 MB
    files = {"ch.tex": chapter, **_doc("\\input{ch}" * 25)}
    with pytest.raises(WriterFileError, match="over 20,971,520 characters"):
        latex.read_latex(files)


def test_german_babel_shorthands_only_when_german_is_the_main_language() -> None:
    body = ('Die Ergebnisse sind "uberzeugend und "`gro"s"\'.\\footcite[vgl.][S.~12]{k} '
            'Weiter geht es.')
    german = latex.read_latex(_doc(body, preamble="\\usepackage[english,ngerman]{babel}"))
    (citation,) = german.citations
    assert citation.claim == "Die Ergebnisse sind überzeugend und „groß“."
    assert (citation.prenote, citation.locator, citation.in_footnote) == ("vgl.", "12", True)
    english = latex.read_latex(_doc('He said "another" thing \\cite{k}.',
                                    preamble="\\usepackage[ngerman,english]{babel}"))
    assert english.citations[0].claim == 'He said "another" thing.'


def test_commented_keys_and_urls() -> None:
    files = _doc("Claims hold \\cite{a, % the first\n  b % the second\n}. See "
                 "\\url{https://example.org/a%20b} for data \\parencite[50\\%][]{c}.")
    found = [(c.keys, c.claim, c.prenote) for c in latex.read_latex(files).citations]
    assert found == [(("a", "b"), "Claims hold.", None),
                     (("c",), "See for data.", "50%")]


def test_user_macros_with_arguments_expand_to_their_cites() -> None:
    preamble = ("\\newcommand{\\mycite}[2][]{\\parencite[#1]{#2}}\n"
                "\\newcommand\\method{DeepCheck}\n\\def\\skipme#1{#1}")
    files = _doc("\\method{} works \\mycite[p.~7]{a}. It fails \\mycite{b}.", preamble)
    found = [(c.keys, c.claim, c.locator, c.where) for c in latex.read_latex(files).citations]
    assert found == [(("a",), "DeepCheck works.", "7", "main.tex:6"),
                     (("b",), "It fails.", None, "main.tex:6")]


# -- issue 40: cite wrappers wherever they are defined -------------------------------

_WRAPPER_STY = r"""\ProvidesPackage{mystyle}
\RequirePackage[see]{jurabib}
% #1: the prenote, #2: the pages, #3: the key
\providecommand{\seFootcite}[3]{%
\ifthenelse{\equal{#2}{}}{%
\footcitetitle[#1][\citefield{year}{#3}]{#3}%
}{%else
\footcitetitle[#1][\citefield{year}{#3}, #2]{#3}%
}}
\providecommand{\seCite}[3]{\ifthenelse{\equal{#2}{}}{#1 \cite{#3}}{#1 \cite[#2]{#3}}}
\renewcommand{\footnote}[1]{}% a template's own footnote: not the reader's to replace
"""
_WRAPPED_BODY = (r"Die Kosten steigen jedes Jahr.\seFootcite{vgl.}{S. 10}{meier2010} "
                 r"Danach sinken sie wieder, wie \seCite{vgl.}{}{schulz2011} zeigt.")


def _wrapped(found: WrittenThesis) -> list[tuple[tuple[str, ...], str, str | None, str | None, str]]:
    return [(c.keys, c.claim, c.locator, c.prenote, c.marker) for c in found.citations]


_WRAPPED_EXPECTED = [
    (("meier2010",), "Die Kosten steigen jedes Jahr.", "10", "vgl.", r"\seFootcite{vgl.}{S. 10}{meier2010}"),
    (("schulz2011",), "Danach sinken sie wieder, wie vgl. schulz2011 zeigt.", None, None,
     r"\seCite{vgl.}{}{schulz2011}"),
]


def test_cite_wrappers_of_a_local_package_are_read() -> None:
    files = {"main.tex": ("\\documentclass{article}\n\\usepackage[ngerman]{babel}\n"
                          "\\usepackage{ifthen, sty/mystyle}\n\\begin{document}\n"
                          f"{_WRAPPED_BODY}\n\\end{{document}}\n").encode(),
             "sty/mystyle.sty": _WRAPPER_STY.encode()}
    found = latex.read_latex(files)
    assert _wrapped(found) == _WRAPPED_EXPECTED
    assert [c.where for c in found.citations] == ["main.tex:5", "main.tex:5"]
    assert found.skipped == ()
    # the keys and notes never stand in the text
    assert "meier2010" not in found.pages[0][1] and "S. 10" not in found.pages[0][1]


def test_cite_wrappers_of_a_local_class_are_read() -> None:
    files = {"thesis.tex": ("\\documentclass[12pt]{localclass}\n\\begin{document}\n"
                            f"{_WRAPPED_BODY}\n\\end{{document}}\n").encode(),
             "localclass.cls": ("\\NeedsTeXFormat{LaTeX2e}\\ProvidesClass{localclass}\n"
                                "\\LoadClass{report}\n" + _WRAPPER_STY).encode()}
    assert _wrapped(latex.read_latex(files)) == _WRAPPED_EXPECTED


def test_wrappers_after_a_commented_begin_document_in_an_input_file() -> None:
    # A configuration file \input in the preamble whose comment names \begin{document}
    # is no subfile: its definitions are read.
    config = ("% commands run right after \\begin{document} go here\n"
              "\\providecommand{\\seCite}[3]{\\ifthenelse{\\equal{#2}{}}{#1 \\cite{#3}}"
              "{#1 \\cite[#2]{#3}}}\n")
    files = {"config.tex": config.encode(),
             **_doc(r"So steht es \seCite{vgl.}{S.~4}{k} geschrieben.", "\\input{config}")}
    found = latex.read_latex(files)
    assert [(c.keys, c.claim, c.locator) for c in found.citations] == [
        (("k",), "So steht es vgl. k geschrieben.", "4")]


def test_wrappers_in_xparse_and_tex_forms() -> None:
    preamble = (r"\NewDocumentCommand{\vcite}{O{vgl.} m}{\footcite[#1][]{#2}}"
                "\n" r"\NewDocumentCommand{\pcite}{s o m}{\IfBooleanTF{#1}{\citet{#3}}"
                r"{\IfNoValueTF{#2}{\citep{#3}}{\citep[#2]{#3}}}}"
                "\n" r"\def\kcite#1#2{\ifx&#2&\cite{#1}\else\cite[#2]{#1}\fi}"
                "\n" r"\newcommand{\ecite}[2]{\if\relax\detokenize{#2}\relax\cite{#1}\else"
                r"\cite[#2]{#1}\fi}")
    body = (r"First claim here.\vcite{a} Second claim here \pcite[p.~3]{b}. "
            r"Third claim here \pcite{c}. Fourth claim here \kcite{d}{12}. "
            r"Fifth claim here \kcite{e}{}. Sixth claim here \ecite{f}{7}. "
            r"\iffalse Hidden claim \cite{hidden}.\fi Last claim \ecite{g}{}.")
    found = latex.read_latex(_doc(body, preamble))
    assert [(c.keys, c.locator, c.prenote) for c in found.citations] == [
        (("a",), None, "vgl."), (("b",), "3", None), (("c",), None, None),
        (("d",), "12", None), (("e",), None, None), (("f",), "7", None), (("g",), None, None)]
    assert [c.claim for c in found.citations][:2] == ["First claim here.", "Second claim here."]
    assert "Hidden" not in found.pages[0][1]


def test_unknown_cite_commands_are_listed_and_never_leak() -> None:
    body = (r"Der Markt wächst \citefield{year}{smith2020} stark. "
            r"Die Banken \fancycite[S. 3]{jones2019}{Titel} reagieren.")
    found = latex.read_latex(_doc(body))
    assert found.citations == ()
    assert [(s.where, s.text, s.reason.split(" is ")[0]) for s in found.skipped] == [
        ("main.tex:4", r"\citefield{year}{smith2020}", r"\citefield"),
        ("main.tex:4", r"\fancycite[S. 3]{jones2019}{Titel}", r"\fancycite")]
    assert all("not read as a citation" in s.reason for s in found.skipped)
    assert found.pages == ((1, "Der Markt wächst stark. Die Banken reagieren."),)


def test_undecided_conditional_reads_one_branch_and_lists_the_other() -> None:
    preamble = r"\newcommand{\mcite}[1]{\ifbool{draft}{\cite{#1}}{\parencite{#1,extra}}}"
    found = latex.read_latex(_doc(r"A claim stands here \mcite{a}.", preamble))
    assert [(c.keys, c.claim) for c in found.citations] == [(("a",), "A claim stands here.")]
    (skipped,) = found.skipped
    assert "branch of \\ifbool not read" in skipped.reason


def test_a_cite_command_named_in_a_package_option_comment_is_no_citation() -> None:
    preamble = ("\\usepackage[backend=biber,\n  autocite=inline, % how \\autocite looks "
                "(inline=\\parencite)\n  style=numeric]{biblatex}")
    found = latex.read_latex(_doc(r"A claim \autocite{a}.", preamble))
    assert found.skipped == ()
    assert [c.keys for c in found.citations] == [("a",)]


# -- issue 40: include paths as TeX expands them -------------------------------------


def test_include_paths_with_macros_are_expanded() -> None:
    main = ("\\documentclass{book}\n\\usepackage{import}\n\\def\\PATH{.}\n"
            "\\newcommand{\\chapdir}{chapters}\n\\begin{document}\n"
            "\\import{\\PATH/ch1/}{ch1}\n\\input{\\chapdir/intro}\n\\subimport{\\chapdir/}{two}\n"
            "\\include{\\chapdir{}/three}\n\\input{\\nodir/four}\n\\end{document}\n")
    files = {"main.tex": main.encode(),
             "ch1/ch1.tex": b"One claim stands here \\cite{a1}.",
             "chapters/intro.tex": b"An intro claim \\cite{b1}.",
             "chapters/two.tex": b"A second claim \\cite{c1}.",
             "chapters/three.tex": b"A third claim \\cite{d1}."}
    found = latex.read_latex(files)
    assert [(c.keys, c.where) for c in found.citations] == [
        (("a1",), "ch1/ch1.tex:1"), (("b1",), "chapters/intro.tex:1"),
        (("c1",), "chapters/two.tex:1"), (("d1",), "chapters/three.tex:1")]
    (skipped,) = found.skipped
    assert skipped.where == "main.tex:10"
    assert "the path holds the macro \\nodir" in skipped.reason
    assert "absolute" not in skipped.reason


def test_a_comment_inside_the_bibliography_list_keeps_every_library() -> None:
    files = {**_doc("A claim \\cite{a1} and another \\cite{b1}.\n"
                    "\\bibliography{refs/a,% the first library\n  refs/b}"),
             "refs/a.bib": b"@misc{a1, title={First}}", "refs/b.bib": b"@misc{b1, title={Second}}"}
    found = latex.read_latex(files)
    assert sorted((i.key, i.title) for i in found.library) == [("a1", "First"), ("b1", "Second")]
    assert found.skipped == ()


# -- issue 40: a quotation of several sentences is the claim, whole -------------------


@pytest.mark.parametrize("quoted", [
    r"\glqq Ein Netz ist ein Graph mit Gewichten. Es dient dem Transport von Energie.\grqq{}",
    r"\enquote{Ein Netz ist ein Graph mit Gewichten. Es dient dem Transport von Energie.}",
    '"`Ein Netz ist ein Graph mit Gewichten. Es dient dem Transport von Energie."\'',
])
def test_a_quotation_of_two_sentences_is_checked_whole(quoted: str) -> None:
    from citerun.pipeline.citations import quotation_check, quotations

    body = (f"Zuerst kommt die Einleitung. Nach Meier gilt: {quoted} \\cite[S.~7]{{k}} "
            "Danach folgt mehr Text.")
    found = latex.read_latex(_doc(body, "\\usepackage[ngerman]{babel}"))
    (citation,) = found.citations
    assert citation.locator == "7"
    (quotation,) = quotations.find_quotations(citation.claim)
    assert quotation.text == "Ein Netz ist ein Graph mit Gewichten. Es dient dem Transport von Energie."
    assert citation.claim.startswith("Nach Meier gilt: ") and "Danach" not in citation.claim
    source = [("7", "Vorher. Ein Netz ist ein Graph mit Gewichten. Es dient dem Transport "
                    "von Energie. Nachher.")]
    checked = quotation_check.check_quotation(quotation.text, source)
    assert (checked.status, checked.labels) == ("exact", ("7",))


# -- issue 40: a hand-made reference list is the library; every citation located ------


def test_a_hand_made_reference_list_is_the_library() -> None:
    body = (r"Wie Hammer zeigt, steigen die Kosten \cite{hammer2010}. Andere sehen das "
            r"anders \cite{eaton06,nokey}." "\n"
            r"\begin{thebibliography}{9}" "\n"
            r"\bibitem[Hammer 2010]{hammer2010} Hammer, M. (2010). \emph{Kosten der "
            r"Energiewende}. Berlin: Springer." "\n"
            r"\bibitem{eaton06}" "\n" r"  J.~Eaton, K.~M\"uller and P.~Smith." "\n"
            r"  \newblock Trees and heat in cities." "\n"
            r"  \newblock \textit{Urban Climate}, 12:1--9, 2006. doi:10.1000/abc.1 % typed" "\n"
            r"\end{thebibliography}")
    found = latex.read_latex(_doc(body))
    assert [(i.key, i.authors, i.year, i.title, i.doi, i.origin) for i in found.library] == [
        ("hammer2010", ("Hammer",), 2010, "Kosten der Energiewende", None, "bibitem"),
        ("eaton06", ("Eaton", "Müller", "Smith"), 2006, "Trees and heat in cities",
         "10.1000/abc.1", "bibitem")]
    extraction = to_extraction(found)
    assert [(c.key, c.location) for c in extraction.citations] == [
        ("hammer2010", "main.tex:4"), ("eaton06", "main.tex:4"), ("nokey", "main.tex:4")]
    by_label = {e.label: e for e in extraction.references}
    assert by_label["eaton06"].text == "Eaton, Müller, Smith (2006). Trees and heat in cities. doi:10.1000/abc.1"
    assert found.pages == ((1, "Wie Hammer zeigt, steigen die Kosten. Andere sehen das anders."),)


def test_every_latex_citation_carries_its_file_and_line(thesis: WrittenThesis) -> None:
    extraction = to_extraction(thesis)
    assert extraction.citations and all(
        c.location and c.location.split(":")[0].endswith(".tex") and c.location.split(":")[1].isdigit()
        for c in extraction.citations)
    assert {c.location for c in extraction.citations} >= {w.where for w in thesis.citations} - {""}


def test_a_numeric_cite_used_as_a_noun_leaves_no_hole() -> None:
    files = {**_doc(r"Basierend auf der Arbeit von \cite{meier} werden die Kosten berechnet. "
                    r"\cite{nolib} zeigt das Gegenteil. As shown in~\cite{nolib}, heat rises. "
                    r"This holds in many studies \cite{meier}."),
             "refs.bib": b"@misc{meier, author={Meier, Hans and Schulz, Eva}, title={T}, year=2010}"}
    claims = [(c.keys, c.claim) for c in latex.read_latex(files).citations]
    assert claims == [
        (("meier",), "Basierend auf der Arbeit von Meier and Schulz werden die Kosten berechnet."),
        (("nolib",), "nolib zeigt das Gegenteil."),
        (("nolib",), "As shown in nolib, heat rises."),
        (("meier",), "This holds in many studies.")]


def test_the_theses_own_library_given_again_with_bib_is_read_once() -> None:
    from citerun.pipeline.writer import formats

    refs = b"@misc{a, title={First}, year={2020}}\n@misc{a, title={Again}}\n@misc{b, title={B}}\n"
    files = {**_doc("A claim \\cite{a}. Another \\cite{b}.\n\\bibliography{refs}"),
             "refs.bib": refs, f"{formats.LIBRARY_DIR}0-refs.bib": refs}  # as `--bib refs.bib` stages it
    found = formats.read_thesis(formats.bundle(files))
    assert [(i.key, i.title) for i in found.library] == [("a", "First"), ("b", "B")]
    assert [s.reason for s in found.skipped] == [
        "a second entry with the key 'a'; the first is kept"]


def test_packages_conditionals_and_quotations_bounded() -> None:
    # A package that loads itself and another that loads the first: each read once.
    files = {"a.sty": b"\\RequirePackage{b}\\newcommand{\\acite}[1]{\\cite{#1}}",
             "b.sty": b"\\RequirePackage{a}\\RequirePackage{b}",
             **_doc("A claim \\acite{k}.", "\\usepackage{a}")}
    thesis, seconds = _timed(files)
    assert seconds < 5 and [c.keys for c in thesis.citations] == [("k",)]
    # Conditionals nested deeper than the reader follows, spam of unclosed ones.
    nested = "\\ifthenelse{\\equal{a}{a}}{" * 150 + "deep \\cite{d}." + "}{}" * 150
    thesis, seconds = _timed(_doc(nested + " " + "\\iffalse \\ifx&&" * 50_000 + " tail"))
    assert seconds < 20
    assert any("nest over 20 levels" in s.reason for s in thesis.skipped)
    # One paragraph of many quotations, each cited.
    quoted = "„One two three four. Five six seven eight.“ \\cite{q} " * 5_000
    thesis, seconds = _timed(_doc(quoted))
    assert seconds < 30 and len(thesis.citations) == 5_000
    assert thesis.citations[-1].claim == "„One two three four. Five six seven eight.“"
