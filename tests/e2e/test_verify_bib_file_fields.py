"""Issue 48 (Low): ``citerun verify --bib`` read every PDF a library's ``file`` field
named, wherever it was: ``../`` and absolute paths pulled any PDF of the machine into the
report (a disclosure where citerun checks someone else's repository in CI: the report is
published with the build). The command as written, the real CLI, the embedded Postgres
and local workers: a file field is read only inside the thesis's folder or a folder given
to ``--sources`` (a link inside that leads out counts as outside); the others are not
read, each named on stderr with how to allow it, and their citations are reported
unresolved. ``--bib-files-anywhere`` reads them as before."""

from __future__ import annotations

import pathlib
import shutil

from tests.e2e.test_verify_demo import EXAMPLES, verify

LATEX = r"""\documentclass{article}
\begin{document}
Dense city centres keep their heat after sunset \cite{alvarez2019}.
Green roofs cool the buildings beneath them \cite{okafor2020}.
Street trees lower the surface temperature of a block \cite{wei2018}.
Cool pavements reflect the sun's heat \cite{lindqvist2021}.
\end{document}
"""


def bib(outside: pathlib.Path) -> str:
    return (
        "@article{alvarez2019, title={Nocturnal Heat in Dense Urban Cores}, "
        "author={Alvarez, Maria}, year={2019}, file={:pdfs/alvarez2019.pdf:PDF}}\n"
        "@article{okafor2020, title={Green roofs}, author={Okafor, Ada}, year={2020}, "
        "file={:../../outside/private/okafor2020.pdf:PDF}}\n"
        f"@article{{wei2018, title={{Street trees}}, author={{Wei, Lin}}, year={{2018}}, "
        f"file={{{outside / 'private' / 'wei2018.pdf'}}}}}\n"
        "@article{lindqvist2021, title={Cool pavements}, author={Lindqvist, Ulf}, "
        "year={2021}, file={:pdfs/lindqvist2021.pdf:PDF}}\n")


def test_file_fields_are_read_only_inside_the_thesis_folder(tmp_path: pathlib.Path) -> None:
    outside = tmp_path / "outside"
    (outside / "private").mkdir(parents=True)
    for name in ("okafor2020", "wei2018", "lindqvist2021"):
        shutil.copy(EXAMPLES / "sources" / f"{name}.pdf", outside / "private" / f"{name}.pdf")
    folder = tmp_path / "repo" / "thesis"
    (folder / "pdfs").mkdir(parents=True)
    shutil.copy(EXAMPLES / "sources" / "alvarez2019.pdf", folder / "pdfs")
    # A link inside the thesis folder that leads out of it is outside too.
    (folder / "pdfs" / "lindqvist2021.pdf").symlink_to(outside / "private" / "lindqvist2021.pdf")
    (folder / "main.tex").write_text(LATEX)
    (folder / "refs.bib").write_text(bib(outside))

    run = verify(tmp_path / "data", "repo/thesis/main.tex", "--bib", "repo/thesis/refs.bib",
                 "--out", str(tmp_path / "report.json"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    report = run.report()
    assert [s["filename"] for s in report["sources"]] == ["alvarez2019.pdf"]
    assert "3 PDF(s) named by the library lie outside the thesis's folder" in run.stderr
    assert "--bib-files-anywhere" in run.stderr
    for key in ("okafor2020", "wei2018", "lindqvist2021"):
        assert f"  {key}: " in run.stderr, run.stderr
    verdicts = {c["key"]: c["verdict"] for c in report["citations"]}
    assert verdicts["alvarez2019"] != "unresolved_citation"
    assert {verdicts[k] for k in ("okafor2020", "wei2018", "lindqvist2021")} == {
        "unresolved_citation"}

    # Allowed by the flag: read where they are, as before.
    run = verify(tmp_path / "data", "repo/thesis/main.tex", "--bib", "repo/thesis/refs.bib",
                 "--bib-files-anywhere", "--out", str(tmp_path / "report2.json"),
                 cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(s["filename"] for s in run.report()["sources"]) == [
        "alvarez2019.pdf", "lindqvist2021.pdf", "okafor2020.pdf", "wei2018.pdf"]
    assert "outside the thesis's folder" not in run.stderr


def test_a_sources_folder_given_on_the_command_line_may_hold_them(
        tmp_path: pathlib.Path) -> None:
    """A folder the user names with --sources is theirs to give: a Zotero export whose
    file fields name its storage outside the thesis reads them with --sources storage."""
    storage = tmp_path / "Zotero" / "storage"
    storage.mkdir(parents=True)
    shutil.copy(EXAMPLES / "sources" / "alvarez2019.pdf", storage)
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "main.tex").write_text(LATEX)
    (folder / "refs.bib").write_text(
        "@article{alvarez2019, title={Nocturnal Heat in Dense Urban Cores}, "
        f"author={{Alvarez, Maria}}, year={{2019}}, file={{{storage / 'alvarez2019.pdf'}}}}}\n")
    run = verify(tmp_path / "data", "thesis/main.tex", "--bib", "thesis/refs.bib",
                 "--sources", str(storage), "--out", str(tmp_path / "report.json"),
                 cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert [s["filename"] for s in run.report()["sources"]] == ["alvarez2019.pdf"]
    assert "outside the thesis's folder" not in run.stderr
