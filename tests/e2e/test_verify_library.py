"""``citerun verify thesis.tex --bib refs.bib`` before the source PDFs are collected
(issue 40 items 2, 3, 9), through the real CLI, the embedded Postgres and local workers.

The library is JabRef 2.x's (capitalised field names), its ``file`` fields name PDFs
that are not on this machine, and the thesis folder holds an experiment's config.json
beside the thesis, as a writer's folder does. The run is useful all the same: it ends
with exit 0 and a report in which every key is resolved or named missing and every
locator is read, and it names the PDFs to add with their reference entries.
"""

from __future__ import annotations

import json
import pathlib

from tests.e2e.test_verify_demo import verify

LATEX = r"""\documentclass{article}
\usepackage[style=authoryear]{biblatex}
\addbibresource{refs.bib}
\begin{document}
\section{Tools}
Crows bend twigs into hooks \parencite[45]{Hammer2010}.
Ravens plan their caches ahead \parencite[see][12--14]{novak2015}.
Owls hunt by ear alone \parencite{owl1999}.
\end{document}
"""
BIB = r"""% This file was created with JabRef 2.10.
% Encoding: UTF8

@Article{Hammer2010,
  Title                    = {Tool use in crows},
  Author                   = {Hammer, Anna and Li, Ben},
  Year                     = {2010},
  File                     = {:pdfs/Hammer_2010.pdf:PDF}
}

@Article{novak2015,
  Title                    = {Planning in ravens},
  Author                   = {Novak, Carl},
  Year                     = {2015},
  File                     = {:pdfs/Novak_2015.pdf:PDF}
}
"""


def test_verify_with_a_library_whose_pdfs_are_not_here(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "thesis.tex").write_text(LATEX)
    (folder / "refs.bib").write_text(BIB)
    (folder / "config.json").write_text(json.dumps({"epochs": 10, "lr": 0.001}))
    run = verify(tmp_path / "data", str(folder / "thesis.tex"), "--bib",
                 str(folder / "refs.bib"), "--out", str(tmp_path / "report.json"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "2 source PDF(s) named by the library are not on this machine" in run.stderr
    assert ("Hammer2010: Hammer, Li (2010). Tool use in crows. -- missing: pdfs/Hammer_2010.pdf"
            in run.stderr)
    assert "novak2015: Novak (2015). Planning in ravens. -- missing: pdfs/Novak_2015.pdf" \
        in run.stderr
    report = run.report()
    found = {c["key"]: c for c in report["citations"]}
    assert set(found) == {"Hammer2010", "novak2015", "owl1999"}
    assert {c["verdict"] for c in found.values()} == {"unresolved_citation"}
    assert found["Hammer2010"]["locator"] == "45"
    assert found["novak2015"]["locator"] == "12-14"
    assert found["Hammer2010"]["reference"] == "Hammer, Li (2010). Tool use in crows."
    assert found["novak2015"]["reference"] == "Novak (2015). Planning in ravens."
    assert found["owl1999"]["reference"] is None
    assert "the reference list has no entry for it" in found["owl1999"]["rationale"]


def test_the_library_is_read_within_the_configured_limits(tmp_path: pathlib.Path) -> None:
    """``citerun verify`` reads a ``--bib`` library (for the PDFs it attaches) within the
    limits the worker will hold it to, ``CITERUN_LIMITS__LIBRARY__*``, not the built-in
    ones: a library over the configured count is refused at once, before any database is
    started, naming the file and the limit (before: read with the defaults, the run
    started)."""
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "thesis.tex").write_text(LATEX)
    (folder / "refs.bib").write_text(BIB)
    run = verify(tmp_path / "data", str(folder / "thesis.tex"), "--bib",
                 str(folder / "refs.bib"), "--out", str(tmp_path / "report.json"),
                 cwd=tmp_path, env_extra={"CITERUN_LIMITS__LIBRARY__MAX_ITEMS": "1"})
    assert run.returncode == 2, run.stderr[-3000:]
    assert "refs.bib" in run.stderr and "2 entries, over the limit of 1" in run.stderr
    assert not (tmp_path / "report.json").exists()
