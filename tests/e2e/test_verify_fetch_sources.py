"""``citerun verify thesis.tex --bib refs.bib --fetch-sources`` (issue 51), as the README
says it, against the local open-access test server (tests/support/oa_server.py: real
HTTPS on 127.0.0.2, the services' documented shapes): the real CLI, the embedded Postgres
and local workers; no source PDF on the machine.

* a DOI the server lists as open access is judged on the fetched PDF, and the report says
  where it came from (link, service);
* a DOI with only an abstract is judged on it and labelled: a claim the abstract does not
  state is ``not_in_abstract``, never ``unsupported``;
* a DOI nobody knows stays ``unresolved_citation`` and is listed with the identifiers tried;
* without ``--fetch-sources`` nothing is sent (the workers even allowed to fetch);
* a second run of the same thesis fetches nothing (the server counts its requests).
"""

from __future__ import annotations

import json
import pathlib
import typing

import pytest

from tests.e2e.test_verify_demo import Run, verify
from tests.support.oa_server import OaServer, Work

OPEN = "10.5555/open.access.2021"
ABSTRACT = "10.5555/abstract.only.2020"
UNKNOWN = "10.5555/nobody.knows.2019"

LATEX = r"""\documentclass{article}
\begin{document}
\section{Open copies}
Open access copies exist for 47 percent of recent articles \cite{smith2021}.
Green roofs lower the indoor temperature of top-floor flats by three degrees in summer
\cite{jones2020}.
Most reference managers store a DOI for nine in ten journal articles \cite{doe2019}.
\bibliography{refs}
\end{document}
"""
BIB = f"""@article{{smith2021,
  title = {{A study of open access}},
  author = {{Smith, Anna and Jones, Ben}},
  year = {{2021}},
  doi = {{{OPEN}}}
}}
@article{{jones2020,
  title = {{Roofs and rooms}},
  author = {{Jones, Carla}},
  year = {{2020}},
  doi = {{{ABSTRACT}}}
}}
@article{{doe2019,
  title = {{Identifiers in reference managers}},
  author = {{Doe, Dana}},
  year = {{2019}},
  doi = {{{UNKNOWN}}}
}}
"""


def _env(srv: OaServer) -> dict[str, str]:
    """The server's settings as an operator would set them: CITERUN_OPENACCESS__*."""
    env = {}
    for name, value in srv.settings().model_dump(mode="json").items():
        if value is None:
            continue
        text = json.dumps(value) if isinstance(value, (list, bool)) else str(value)
        env[f"CITERUN_OPENACCESS__{name.upper()}"] = text
    return env


def _by_key(report: dict[str, typing.Any]) -> dict[str, dict[str, typing.Any]]:
    return {c["key"]: c for c in report["citations"]}


@pytest.fixture(scope="module")
def runs(server_tmp: typing.Callable[[str], pathlib.Path]
         ) -> typing.Iterator[tuple[dict[str, Run], dict[str, int], OaServer]]:
    """Three runs of one thesis on one database: without the opt-in, with it, and again."""
    root = server_tmp("fetch-sources")
    thesis = root / "thesis"
    thesis.mkdir()
    (thesis / "main.tex").write_text(LATEX, encoding="utf-8")
    (thesis / "refs.bib").write_text(BIB, encoding="utf-8")
    works = {OPEN: Work(kind="pdf", title="A study of open access", authors=("Smith", "Jones"),
                        year=2021),
             ABSTRACT: Work(kind="abstract", title="Roofs and rooms", authors=("Jones",),
                            year=2020,
                            abstract="We survey how residents of apartment blocks use their "
                                     "balconies and courtyards across the seasons.")}
    done: dict[str, Run] = {}
    counts: dict[str, int] = {}
    with OaServer(works=works) as srv:
        env = _env(srv)  # enabled=true, as an operator's workers may be
        args = [str(thesis / "main.tex"), "--bib", str(thesis / "refs.bib")]
        done["plain"] = verify(root / "data", *args, "--out", str(root / "plain.html"),
                               cwd=root, env_extra=env)
        counts["plain"] = sum(srv.requests.values())
        done["fetch"] = verify(root / "data", *args, "--fetch-sources",
                               "--out", str(root / "fetch.html"), cwd=root, env_extra=env)
        counts["fetch"] = sum(srv.requests.values())
        done["again"] = verify(root / "data", *args, "--fetch-sources",
                               "--out", str(root / "again.html"), cwd=root, env_extra=env)
        counts["again"] = sum(srv.requests.values())
        yield done, counts, srv


def test_without_the_opt_in_nothing_is_sent(runs: tuple[dict[str, Run], dict[str, int],
                                                        OaServer]) -> None:
    done, counts, _ = runs
    assert done["plain"].returncode == 0, done["plain"].stderr[-3000:]
    assert counts["plain"] == 0
    report = done["plain"].report()
    assert report["fetched"] == []
    assert {c["verdict"] for c in report["citations"]} == {"unresolved_citation"}


def test_an_open_access_doi_is_judged_on_the_fetched_pdf(
        runs: tuple[dict[str, Run], dict[str, int], OaServer]) -> None:
    done, counts, _ = runs
    run = done["fetch"]
    assert run.returncode == 0, run.stderr[-3000:]
    assert counts["fetch"] > 0
    cited = _by_key(run.report())["smith2021"]
    assert cited["source"] is not None, cited
    fetched = cited["source"]["fetched"]
    assert fetched["kind"] == "pdf" and fetched["service"] and fetched["url"].startswith("https://")
    assert cited["match"]["method"] == "fetched"
    assert cited["verdict"] == "supported", cited["rationale"]
    assert any("47 percent" in e["quote"] for e in cited["evidence"])
    html = pathlib.Path(run.stdout.split("report: ")[1].split()[0]).read_text(encoding="utf-8")
    assert fetched["url"] in html and "open access" in html.lower()


def test_an_abstract_alone_is_labelled_and_never_unsupported(
        runs: tuple[dict[str, Run], dict[str, int], OaServer]) -> None:
    run = runs[0]["fetch"]
    cited = _by_key(run.report())["jones2020"]
    assert cited["source"]["fetched"]["kind"] == "abstract"
    assert cited["verdict"] == "not_in_abstract", cited
    assert "not found in the abstract" in cited["rationale"].lower()
    html = pathlib.Path(run.stdout.split("report: ")[1].split()[0]).read_text(encoding="utf-8")
    assert "abstract only" in html.lower() and "Not found in the abstract" in html


def test_a_work_nobody_has_is_listed_with_the_identifiers_tried(
        runs: tuple[dict[str, Run], dict[str, int], OaServer]) -> None:
    run = runs[0]["fetch"]
    report = run.report()
    cited = _by_key(report)["doe2019"]
    assert cited["verdict"] == "unresolved_citation" and cited["source"] is None
    assert f"DOI {UNKNOWN}" in cited["rationale"]
    works = {w["key"]: w for w in report["fetched"]}
    assert works["doe2019"]["status"] == "not_found"
    assert works["doe2019"]["tried"] == [f"DOI {UNKNOWN}"]
    assert works["doe2019"]["attempts"], works["doe2019"]
    assert (works["smith2021"]["status"], works["jones2020"]["status"]) == ("pdf", "abstract")
    # The no-PDF list on stderr says the same.
    assert "1 found as an open-access PDF, 1 as an abstract only, 1 not found" in run.stderr
    assert f"doe2019: not found (tried: DOI {UNKNOWN})" in run.stderr


def test_a_second_run_fetches_nothing(runs: tuple[dict[str, Run], dict[str, int],
                                                   OaServer]) -> None:
    done, counts, _ = runs
    assert done["again"].returncode == 0, done["again"].stderr[-3000:]
    assert counts["again"] == counts["fetch"]
    first, again = _by_key(done["fetch"].report()), _by_key(done["again"].report())
    assert {k: c["verdict"] for k, c in again.items()} == {k: c["verdict"] for k, c in first.items()}
    assert again["smith2021"]["source"]["fetched"] == first["smith2021"]["source"]["fetched"]


THESIS_TEXT = """1 Introduction

Open access copies exist for 47 percent of recent articles [1]. A thesis rarely comes with
a tidy folder of the PDFs it cites, yet most of its references carry a DOI [2].

References

[1] Smith, A., Jones, B. (2021). A study of open access. Journal of Open Studies 4, 1-12.
https://doi.org/10.5555/open.access.2021
[2] Doe, D. (2019). Identifiers in reference managers. Library Review 9, 3-4.
https://doi.org/10.5555/nobody.knows.2019
"""


def test_a_pdf_thesis_without_any_source_is_checked_against_what_is_found(
        server_tmp: typing.Callable[[str], pathlib.Path]) -> None:
    """A PDF thesis alone (no --sources, no --bib; refused before issue 51): its reference
    entries' DOIs are looked up, [1] is judged on the open-access PDF found, [2] is listed
    with its DOI tried."""
    from tests.support.oa_server import make_pdf

    root = server_tmp("fetch-pdf-thesis")
    thesis = root / "thesis.pdf"
    thesis.write_bytes(make_pdf(THESIS_TEXT))
    with OaServer(works={OPEN: Work(kind="pdf")}) as srv:
        run = verify(root / "data", str(thesis), "--fetch-sources", "--out",
                     str(root / "thesis.html"), cwd=root, env_extra=_env(srv))
    assert run.returncode == 0, run.stderr[-3000:]
    report = run.report()
    by_marker = {c["marker"]: c for c in report["citations"]}
    assert by_marker["[1]"]["source"]["fetched"]["kind"] == "pdf", by_marker["[1]"]
    assert by_marker["[1]"]["verdict"] == "supported", by_marker["[1]"]["rationale"]
    assert by_marker["[2]"]["verdict"] == "unresolved_citation"
    assert f"DOI {UNKNOWN}" in by_marker["[2]"]["rationale"]
