"""``citerun verify`` on the writer's own files (issue 24): a Word thesis with Zotero
fields and a LaTeX thesis with its .bib, against the demo's source PDFs, through the real
CLI, the embedded Postgres and local workers. Every citation is found, mapped by what the
files state (the field's item, the .bib's key and ``file`` field) and judged; the locator
is the one written."""

from __future__ import annotations

import json
import pathlib
import shutil

from tests.e2e.test_verify_demo import EXAMPLES, verify
from tests.support import writer_theses


LATEX = r"""\documentclass{article}
\usepackage[style=authoryear]{biblatex}
\addbibresource{refs.bib}
\newcommand{\uhi}{urban heat island}
\begin{document}
\section{Heat in cities}
In dense city centres the \uhi{} is most pronounced after sunset \autocite[3]{alvarez2019}.
\input{chapters/health}
\end{document}
"""
CHAPTER = r"""Emergency hospital admissions of people aged 75 and over rose by 12 percent for
each degree by which the daily maximum exceeded 30~°C \parencite{wei2018}.
Every ten additional percentage points of tree canopy lower the afternoon surface
temperature of a neighbourhood by about 1.4~°C.\footcite[see][5]{lindqvist2021}
Compact street grids also block the wind that would otherwise ventilate heat out
\citep{keller2017}.

As its authors put it, \enquote{The urban heat island was strongest at night}
\parencite[1]{alvarez2019}. They add that ``the city core does not heat up slower than its
surroundings during the day'' \autocite[1]{alvarez2019}.
"""
BIB = r"""@article{alvarez2019,
  title = {Nocturnal Heat in Dense Urban Cores: {A} Two-Year Sensor Study in {Seville}},
  author = {Alvarez, Maria and Becker, Thomas},
  date = {2019},
  file = {sources/alvarez2019.pdf}
}
@article{wei2018,
  title = {Heat Waves and Emergency Hospital Admissions among Older Adults},
  author = {Wei, Li and Mitchell, Sarah},
  year = {2018},
  file = {:sources/wei2018.pdf:PDF}
}
@article{lindqvist2021,
  title = {Street Trees and Surface Temperature},
  author = {Lindqvist, Hannah and Haddad, Omar and Novak, Petra},
  year = {2021},
  file = {Full Text PDF:sources/lindqvist2021.pdf:application/pdf}
}
@book{keller2017,
  title = {Compact Street Grids and Urban Ventilation},
  author = {Keller, Eva},
  year = {2017}
}
"""

SOURCES = {"alvarez2019.pdf": "supported", "wei2018.pdf": "supported",
           "lindqvist2021.pdf": "supported"}


def _by_claim(report: dict[str, object]) -> dict[str, dict[str, object]]:
    citations = report["citations"]
    assert isinstance(citations, list)
    return {c["claim"]: c for c in citations}


def _check(report: dict[str, object], fmt: str, claims: int = 4) -> None:
    thesis = report["thesis"]
    assert isinstance(thesis, dict) and thesis["format"] == fmt
    found = _by_claim(report)
    assert len(found) == claims, sorted(found)
    night = next(c for claim, c in found.items() if "most pronounced after sunset" in claim)
    assert night["source"]["filename"] == "alvarez2019.pdf" and night["locator"] == "3"
    admissions = next(c for claim, c in found.items() if "rose by 12 percent" in claim)
    assert admissions["source"]["filename"] == "wei2018.pdf"
    canopy = next(c for claim, c in found.items() if "about 1.4 °C" in claim)
    assert canopy["source"]["filename"] == "lindqvist2021.pdf"
    wind = next(c for claim, c in found.items() if "block the wind" in claim)
    assert wind["source"] is None and wind["verdict"] == "unresolved_citation"
    for c in (night, admissions, canopy):
        assert c["verdict"] in ("supported", "partially_supported"), c
        assert "\\" not in c["claim"] and "(Alvarez" not in c["claim"], c["claim"]


def test_verify_a_word_thesis_with_zotero_fields(tmp_path: pathlib.Path) -> None:
    thesis = tmp_path / "thesis.docx"
    thesis.write_bytes(writer_theses.docx_thesis())
    run = verify(tmp_path / "data", str(thesis), "--sources", str(EXAMPLES / "sources"),
                 "--out", str(tmp_path / "report.html"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    report = run.report()
    _check(report, "docx")
    assert all(c["match"]["method"] != "explicit" for c in report["citations"])


def test_verify_a_latex_thesis_whose_bib_names_the_sources(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "thesis"
    (folder / "chapters").mkdir(parents=True)
    (folder / "thesis.tex").write_text(LATEX)
    (folder / "chapters" / "health.tex").write_text(CHAPTER)
    (folder / "refs.bib").write_text(BIB)
    shutil.copytree(EXAMPLES / "sources", folder / "sources")
    # No --sources: the .bib's file fields name the PDFs (Better BibTeX, JabRef forms).
    run = verify(tmp_path / "data", str(folder / "thesis.tex"), "--bib", str(folder / "refs.bib"),
                 "--out", str(tmp_path / "report.json"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    report = run.report()
    _check(report, "latex", claims=6)
    mapped = [c for c in report["citations"] if c["source"]]
    assert {c["source"]["filename"] for c in mapped} == set(SOURCES)
    assert {c["match"]["method"] for c in mapped} == {"explicit"}  # by the .bib's file fields
    canopy = next(c for c in mapped if c["source"]["filename"] == "lindqvist2021.pdf")
    assert canopy["locator"] == "5"
    # Quotations are searched for verbatim in the source; the cited page is checked
    # against the printed page where the quotation stands.
    found = _by_claim(report)
    exact = next(c for claim, c in found.items() if "strongest at night" in claim)
    assert [(q["status"], q["pages"]) for q in exact["quotations"]] == [("exact", ["1"])]
    assert exact["page_check"]["status"] == "ok"
    altered = next(c for claim, c in found.items() if "does not heat up slower" in claim)
    [quote] = altered["quotations"]
    assert quote["status"] == "altered" and quote["pages"] == ["2"]
    assert '"faster" to "slower"' in quote["difference"]
    assert altered["page_check"] == {"status": "mismatch", "found": ["2"],
                                     "reason": "cited 1, found on 2"}
    # Every citation says where the writer has it: file and line (issue 40).
    assert {c["location"] for c in report["citations"]} == {
        "thesis.tex:7", "chapters/health.tex:2", "chapters/health.tex:4",
        "chapters/health.tex:6", "chapters/health.tex:9", "chapters/health.tex:10"}
    assert next(c for c in mapped if c["source"]["filename"] == "wei2018.pdf")["location"] == \
        "chapters/health.tex:2"
    html = (tmp_path / "report.html").read_text()
    assert "chapters/health.tex:2" in html and "Thesis <span class=\"page\">p. 1" not in html
    assert 'data-quotation="exact"' in html and 'data-quotation="altered"' in html
    assert 'data-page-check="mismatch"' in html and "the cited page is wrong" in html
    assert json.loads((tmp_path / "report.json").read_text())["thesis"]["format"] == "latex"


def test_a_word_thesis_without_fields_is_read_by_the_rules_of_the_page(
        tmp_path: pathlib.Path) -> None:
    from tests.support import docx_fixtures as dx

    body = "".join([
        dx.paragraph(dx.run("1 Heat in cities"), style="Heading1"),
        dx.paragraph(dx.run(writer_theses.NIGHT + " (Alvarez & Becker, 2019). "
                            + writer_theses.ADMISSIONS + " (Wei & Mitchell, 2018).")),
        dx.paragraph(dx.run("References"), style="Heading1"),
        dx.paragraph(dx.run("Alvarez, M., & Becker, T. (2019). Nocturnal heat in dense urban cores: "
                            "A two-year sensor study in Seville. Urban Climate Letters, 7(2), 45-58.")),
        dx.paragraph(dx.run("Wei, L., & Mitchell, S. (2018). Heat waves and emergency hospital "
                            "admissions among older adults. Public Health, 12, 1-9.")),
    ])
    thesis = tmp_path / "plain.docx"
    thesis.write_bytes(dx.docx(body))
    run = verify(tmp_path / "data", str(thesis), "--sources", str(EXAMPLES / "sources"),
                 "--out", str(tmp_path / "report.html"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    report = run.report()
    assert report["thesis"]["format"] == "docx"
    mapped = {c["key"]: c["source"]["filename"] for c in report["citations"] if c["source"]}
    assert mapped == {"alvarez2019": "alvarez2019.pdf", "wei2018": "wei2018.pdf"}


PDF_BIB = r"""@article{alvarezNocturnalHeatDense2019,
  title = {Nocturnal Heat in Dense Urban Cores: A Two-Year Sensor Study in Seville},
  author = {Alvarez, Maria and Becker, Thomas}, date = {2019},
  doi = {10.1234/ucl.2019.045},
  file = {Full Text:storage/AB12CD34/Alvarez and Becker - 2019 - Nocturnal heat.pdf:application/pdf}
}
@article{weiHeatWavesEmergency2018,
  title = {Heat Waves and Emergency Hospital Admissions among Older Adults},
  author = {Wei, Li and Mitchell, Sarah}, year = {2018},
  file = {storage/EF56GH78/Wei and Mitchell - 2018 - Heat waves.pdf}
}
@article{lindqvistStreetTreesSurface2021,
  title = {Street Trees and Surface Temperature: Evidence from Twelve European Cities},
  author = {Lindqvist, Hannah and Haddad, Omar and Novak, Petra}, year = {2021},
  file = {storage/IJ90KL12/Lindqvist et al. - 2021 - Street trees.pdf}
}
@article{okaforCoolRoofsIndoor2020,
  title = {Cool Roofs and Indoor Heat Exposure in Social Housing},
  author = {Okafor, James}, year = {2020},
  file = {storage/MN34OP56/Okafor - 2020 - Cool roofs.pdf}
}
"""


def test_verify_a_pdf_thesis_with_its_library(tmp_path: pathlib.Path) -> None:
    """A PDF thesis with --bib: its citations are read from the pages, the library's file
    fields name the sources (no --sources; Zotero's storage folders and file names) and give
    them the library's metadata."""
    for folder, name, demo in (
            ("AB12CD34", "Alvarez and Becker - 2019 - Nocturnal heat.pdf", "alvarez2019.pdf"),
            ("EF56GH78", "Wei and Mitchell - 2018 - Heat waves.pdf", "wei2018.pdf"),
            ("IJ90KL12", "Lindqvist et al. - 2021 - Street trees.pdf", "lindqvist2021.pdf"),
            ("MN34OP56", "Okafor - 2020 - Cool roofs.pdf", "okafor2020.pdf")):
        (tmp_path / "storage" / folder).mkdir(parents=True)
        shutil.copy(EXAMPLES / "sources" / demo, tmp_path / "storage" / folder / name)
    (tmp_path / "refs.bib").write_text(PDF_BIB)
    run = verify(tmp_path / "data", str(EXAMPLES / "thesis.pdf"), "--bib", str(tmp_path / "refs.bib"),
                 "--out", str(tmp_path / "report.html"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    report = run.report()
    assert report["thesis"]["format"] == "pdf" and report["thesis"]["pages"] >= 2
    assert report["thesis"]["filename"] == "thesis.pdf"
    by_key = {c["key"]: (c["source"] or {}).get("filename") for c in report["citations"]}
    assert by_key == {"alvarez2019": "Alvarez and Becker - 2019 - Nocturnal heat.pdf",
                      "wei2018": "Wei and Mitchell - 2018 - Heat waves.pdf",
                      "lindqvist2021": "Lindqvist et al. - 2021 - Street trees.pdf",
                      "okafor2020": "Okafor - 2020 - Cool roofs.pdf",
                      "keller2017": None}  # not in the library: unresolved, as without it
