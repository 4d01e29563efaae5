"""Issue 51: the open-access client against the local HTTPS test server
(tests/support/oa_server.py): what it finds in which order, what it refuses, how it
waits, and what it sends. The client is the same code that talks to the real services;
only the base URLs (and the trusted CA) differ."""

from __future__ import annotations

import asyncio
import pathlib
import socket
import time
import tracemalloc
from collections.abc import Iterator

import pytest

import citerun
from citerun.core import pdfmagic
from citerun.pipeline import openaccess as oa
from citerun.pipeline.openaccess.session import ServiceFailed
from tests.support.oa_server import HOSTILE, RECORDINGS, OaServer, Work

DOI_PDF, DOI_ABSTRACT, DOI_UNKNOWN = "10.1234/oa.pdf", "10.1234/oa.abstract", "10.1234/oa.none"
WORKS: dict[str, Work | str] = {
    DOI_PDF: "pdf", DOI_ABSTRACT: "abstract", DOI_UNKNOWN: "unknown",
    "10.1234/oa.landing": "landing",
    "arxiv:2101.01234": Work(title="An arXiv preprint on open copies"),
    "pmcid:PMC777": Work(title="A biomedical paper", pmid="555", pmcid="PMC777"),
    "10.1234/oa.titled": Work(title="Open copies of cited works in theses", authors=("Weber",),
                              year=2022),
    **{f"10.1234/oa.redirect.{name}": Work(kind="redirect", hostile=name) for name in HOSTILE},
    **{f"10.1234/oa.direct.{name}": Work(kind="direct", hostile=name) for name in HOSTILE},
    "10.1234/oa.huge": "huge", "10.1234/oa.slow": "slow",
}


@pytest.fixture(scope="module")
def srv() -> Iterator[OaServer]:
    with OaServer(WORKS) as server:
        yield server


async def find(settings: oa.OpenAccessSettings, ids: oa.WorkIds, **kw: object
               ) -> tuple[oa.Found, oa.Session]:
    async with oa.Session(settings, **kw) as session:  # type: ignore[arg-type]
        return await oa.find_source(ids, session), session


def _outcomes(found: oa.Found) -> list[tuple[str, str]]:
    return [(a.service, a.outcome) for a in found.attempts]


async def test_nothing_is_requested_when_not_enabled(srv: OaServer) -> None:
    before = sum(srv.requests.values())
    found, session = await find(srv.settings(enabled=False), oa.WorkIds.build(doi=DOI_PDF))
    assert found.kind == "none" and found.attempts[0].outcome.startswith("not looked up")
    assert sum(srv.requests.values()) == before and not session.requests
    # Nothing at all is needed to run without fetching: the defaults validate.
    assert oa.OpenAccessSettings().enabled is False


async def test_a_pdf_by_doi_from_unpaywall_with_two_requests(srv: OaServer) -> None:
    found, session = await find(srv.settings(), oa.WorkIds.build(doi=DOI_PDF))
    assert found.kind == "pdf" and found.pdf is not None and pdfmagic.is_pdf(found.pdf)
    assert (found.service, found.licence, found.version) == (
        "Unpaywall", "cc-by", "publishedVersion")
    assert found.pdf_url and found.pdf_url.startswith(srv.base + "/files/pdf/")
    # The first PDF ends the search: the Unpaywall answer and the PDF, nothing more.
    assert sum(session.requests.values()) == 2
    assert srv.user_agents[-1] == f"citerun/{citerun.__version__} (mailto:tests@citerun.invalid)"


async def test_without_an_email_unpaywall_is_skipped_and_openalex_finds_it(
        srv: OaServer) -> None:
    found, _ = await find(srv.settings(email=None), oa.WorkIds.build(doi=DOI_PDF))
    assert found.kind == "pdf" and found.service == "OpenAlex"
    assert _outcomes(found)[0] == (
        "Unpaywall", "skipped: no operator e-mail is set (Unpaywall requires one)")


async def test_abstract_only_is_labelled_with_its_service(srv: OaServer) -> None:
    found, session = await find(srv.settings(), oa.WorkIds.build(doi=DOI_ABSTRACT))
    assert found.kind == "abstract" and found.pdf is None
    assert found.abstract == Work().abstract
    assert found.abstract_service in ("OpenAlex", "Semantic Scholar")
    # An abstract was in hand: Crossref is not asked for one more.
    assert not any(a.service == "Crossref" for a in found.attempts)


async def test_an_unknown_work_lists_every_service_and_identifier_tried(
        srv: OaServer) -> None:
    ids = oa.WorkIds.build(doi=DOI_UNKNOWN)
    found, _ = await find(srv.settings(), ids)
    assert found.kind == "none" and ids.tried() == [f"DOI {DOI_UNKNOWN}"]
    assert _outcomes(found) == [(s, "not known to the service") for s in (
        "Unpaywall", "OpenAlex", "Semantic Scholar", "Crossref")]


async def test_a_work_no_service_can_look_up_says_so(srv: OaServer) -> None:
    before = sum(srv.requests.values())
    found, _ = await find(srv.settings(try_library_urls=False),
                          oa.WorkIds.build(isbn="978-3-16-148410-0"))
    assert found.kind == "none" and sum(srv.requests.values()) == before
    assert _outcomes(found) == [
        ("citerun", "no service asked: none looks works up by the identifiers given")]
    assert found.attempts[0].identifier == "ISBN 9783161484100"


async def test_arxiv_id_gives_the_arxiv_pdf_and_abstract(srv: OaServer) -> None:
    found, _ = await find(srv.settings(), oa.WorkIds.build(arxiv="arXiv:2101.01234v2"))
    assert found.kind == "pdf" and found.service == "arXiv"
    assert found.pdf_url == f"{srv.base}/arxiv/pdf/2101.01234"
    assert found.abstract_service == "arXiv" and found.abstract


async def test_pmcid_through_europe_pmc(srv: OaServer) -> None:
    found, _ = await find(srv.settings(), oa.WorkIds.build(pmcid="PMC777"))
    assert found.kind == "pdf" and found.service == "Europe PMC"
    assert found.licence == "cc by"


async def test_a_title_is_looked_up_and_only_a_true_match_taken(srv: OaServer) -> None:
    ids = oa.WorkIds(title="Open copies of cited works in theses", first_author="Weber",
                     year=2022)
    found, _ = await find(srv.settings(), ids)
    assert found.kind == "pdf"
    assert found.attempts[0].outcome.startswith("matched") and "DOI 10.1234/oa.titled" in \
        found.attempts[0].outcome
    wrong_year = oa.WorkIds(title=ids.title, first_author="Weber", year=2010)
    missed, _ = await find(srv.settings(), wrong_year)
    assert missed.kind == "none"
    assert [a.service for a in missed.attempts] == ["OpenAlex", "Semantic Scholar", "Crossref"]


async def test_a_title_match_without_any_identifier_gives_its_own_pdf_link() -> None:
    work = Work(title="Ein Werk ohne Kennung im Netz", authors=("Weber",), year=2019)
    with OaServer({"title:ohne-kennung": work}) as srv:
        found, _ = await find(srv.settings(), oa.WorkIds(
            title="Ein Werk ohne Kennung im Netz", first_author="Weber", year=2019))
    assert found.kind == "pdf" and found.service == "OpenAlex"
    assert _outcomes(found)[0] == (
        "OpenAlex", "matched \u201cEin Werk ohne Kennung im Netz\u201d: no identifier")


async def test_a_landing_page_is_not_a_pdf_and_the_abstract_still_comes(
        srv: OaServer) -> None:
    found, _ = await find(srv.settings(), oa.WorkIds.build(doi="10.1234/oa.landing"))
    assert ("Unpaywall", "not a PDF (an HTML page)") in _outcomes(found)
    assert found.kind == "abstract" and found.abstract


@pytest.mark.parametrize("how", ["redirect", "direct"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_pdf_links_are_refused(srv: OaServer, how: str, name: str) -> None:
    """A metadata answer whose PDF link is, or redirects to, 127.0.0.1, 10.0.0.1,
    169.254.169.254, a cluster service name or plain http: refused before any request
    there, and the abstract path still runs."""
    found, _ = await find(srv.settings(), oa.WorkIds.build(doi=f"10.1234/oa.{how}.{name}"))
    refusals = [o for s, o in _outcomes(found) if s == "Unpaywall" and o.startswith("refused")]
    expected = ("refused: not an https URL" if name == "plain-http" else
                "refused: a private, loopback, link-local or cluster address")
    assert refusals == [expected]
    assert found.kind == "abstract"
    assert not any("/files/plain.pdf" in p or "secret" in p for p in srv.log)


async def test_429_with_retry_after_is_waited_for_as_asked() -> None:
    now = [1000.0]
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    with OaServer(WORKS, throttle={"/unpaywall/": 2}, retry_after="7") as srv:
        found, session = await find(srv.settings(retry_after_cap_s=30.0),
                                    oa.WorkIds.build(doi=DOI_PDF), sleep=sleep,
                                    clock=lambda: now[0])
        assert found.kind == "pdf" and found.service == "Unpaywall"
        assert srv.requests[f"/unpaywall/v2/{DOI_PDF}"] == 3
    assert waits == [7.0, 7.0] and session.waits == [7.0, 7.0]


async def test_openalex_403_means_slow_down_and_is_retried_with_backoff() -> None:
    """OpenAlex documents 403 as its rate limit (no Retry-After): backed off under the
    one retry policy (1 s, jittered by 25 %), then answered."""
    now = [1000.0]
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    with OaServer(WORKS, throttle={"/openalex/": 1}, throttle_status=403,
                  retry_after=None) as srv:
        found, _ = await find(srv.settings(services=("openalex",)),
                              oa.WorkIds.build(doi=DOI_PDF), sleep=sleep,
                              clock=lambda: now[0])
        assert found.kind == "pdf" and found.service == "OpenAlex"
        assert srv.requests[f"/openalex/works/https://doi.org/{DOI_PDF.replace('/', '%2F')}"] == 2
    assert len(waits) == 1 and 0.75 <= waits[0] <= 1.25
    # Another service's 403 is a refusal, not retried.
    with OaServer(WORKS, throttle={"/unpaywall/": 1}, throttle_status=403,
                  retry_after=None) as srv:
        found, _ = await find(srv.settings(services=("unpaywall",)),
                              oa.WorkIds.build(doi=DOI_PDF))
        assert _outcomes(found) == [("Unpaywall", "refused by the server (HTTP 403)")]


async def test_a_real_one_second_retry_after_is_honoured() -> None:
    with OaServer(WORKS, throttle={"/unpaywall/": 1}, retry_after="1") as srv:
        start = time.monotonic()
        found, _ = await find(srv.settings(), oa.WorkIds.build(doi=DOI_PDF))
        assert time.monotonic() - start >= 1.0 and found.kind == "pdf"


async def test_a_retry_after_over_the_cap_gives_the_host_up() -> None:
    with OaServer(WORKS, throttle={"/unpaywall/": 99}, retry_after="3600") as srv:
        settings = srv.settings(services=("unpaywall",))
        async with oa.Session(settings) as session:
            first = await oa.find_source(oa.WorkIds.build(doi=DOI_PDF), session)
            second = await oa.find_source(oa.WorkIds.build(doi=DOI_ABSTRACT), session)
        assert _outcomes(first) == [("Unpaywall", "gave up: asked to wait 3600 s (HTTP 429)")]
        assert _outcomes(second)[0][1].startswith("gave up: the service asked to wait")
        assert srv.requests[f"/unpaywall/v2/{DOI_PDF}"] == 1
        assert srv.requests[f"/unpaywall/v2/{DOI_ABSTRACT}"] == 0


async def test_each_host_is_paced_at_its_interval() -> None:
    now = [1000.0]
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    with OaServer(WORKS) as srv:
        settings = srv.settings(arxiv_interval_s=3.0, services=("arxiv",))
        async with oa.Session(settings, sleep=sleep, clock=lambda: now[0]) as session:
            for _ in range(2):
                await oa.find_source(oa.WorkIds.build(arxiv="2101.01234"), session)
    # Four requests (feed, PDF, feed, PDF) to one host, at least 3 s apart.
    assert waits == [3.0, 3.0, 3.0]


def test_the_default_intervals_are_the_services_published_rates() -> None:
    async def intervals(settings: oa.OpenAccessSettings) -> dict[str, float]:
        async with oa.Session(settings) as session:
            return {host: session.interval_of(host) for host in (
                "api.unpaywall.org", "api.openalex.org", "api.crossref.org",
                "export.arxiv.org", "arxiv.org", "www.ebi.ac.uk", "api.semanticscholar.org",
                "example.org")}
    keyless = asyncio.run(intervals(oa.OpenAccessSettings()))
    assert keyless == {"api.unpaywall.org": 1.0, "api.openalex.org": 0.1,
                       "api.crossref.org": 0.2, "export.arxiv.org": 3.0, "arxiv.org": 3.0,
                       "www.ebi.ac.uk": 0.2, "api.semanticscholar.org": 3.0,
                       "example.org": 1.0}
    keyed = asyncio.run(intervals(oa.OpenAccessSettings(semanticscholar_key="k")))
    assert keyed["api.semanticscholar.org"] == 1.0


async def test_crossref_rate_headers_slow_the_host_down() -> None:
    with OaServer(WORKS, rate_headers=True) as srv:
        async with oa.Session(srv.settings(services=("crossref",))) as session:
            await oa.find_source(oa.WorkIds.build(doi=DOI_ABSTRACT), session)
            assert session.interval_of(f"127.0.0.2:{srv.port}") == pytest.approx(0.2)


async def test_a_2_gb_answer_is_cut_at_the_cap_in_bounded_memory(srv: OaServer) -> None:
    cap = 4 * 1024 * 1024
    tracemalloc.start()
    try:
        found, _ = await find(srv.settings(pdf_max_bytes=cap), oa.WorkIds.build(
            doi="10.1234/oa.huge"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ("Unpaywall", "refused: over the size cap") in _outcomes(found)
    assert peak < 8 * cap
    assert srv.huge_sent < 256 * 1024 * 1024  # the server stopped far short of 2 GB
    async with oa.Session(srv.settings(pdf_max_bytes=cap)) as session:
        with pytest.raises(ServiceFailed, match="over the size cap"):
            await session.get(f"{srv.base}/huge?length=1", pdf=True)


async def test_a_slow_body_is_cut_at_the_time_cap(srv: OaServer) -> None:
    start = time.monotonic()
    found, _ = await find(srv.settings(pdf_timeout_s=1.0), oa.WorkIds.build(
        doi="10.1234/oa.slow"))
    assert ("Unpaywall", "gave up: over the time cap") in _outcomes(found)
    assert found.kind == "abstract"
    assert time.monotonic() - start < 15


@pytest.mark.skipif(not (RECORDINGS / "index.json").exists(), reason="no recordings")
async def test_recorded_answers_end_to_end(srv: OaServer) -> None:
    pnas, _ = await find(srv.settings(), oa.WorkIds.build(doi="10.1073/pnas.1414271111"))
    assert pnas.kind == "pdf" and pnas.service == "Unpaywall"
    assert pnas.pdf_url == f"{srv.base}/remote/www.pnas.org/content/pnas/111/45/E4832.full.pdf"
    # arXiv's recorded feed: the abstract; the PDF is no scenario's (404 here).
    feed, _ = await find(srv.settings(services=("arxiv",)), oa.WorkIds.build(
        arxiv="1605.08386"))
    assert feed.kind == "abstract" and feed.abstract_service == "arXiv"
    assert ("arXiv", "not found (404)") in _outcomes(feed)
    # Crossref's recorded 404 text and arXiv's recorded 400.
    missing, _ = await find(srv.settings(services=("crossref",)), oa.WorkIds.build(
        doi="10.1371/notarealdoi"))
    assert _outcomes(missing) == [("Crossref", "not known to the service")]
    bad, _ = await find(srv.settings(services=("arxiv",)), oa.WorkIds(arxiv="abc"))
    assert _outcomes(bad) == [("arXiv", "refused by the server (HTTP 400)")]
    # OpenAlex's recorded 404 (an HTML page) and its recorded closed work (select=).
    gone, _ = await find(srv.settings(services=("openalex",)), oa.WorkIds.build(
        doi="10.1046/j.1365-2699.2003.00795"))
    assert _outcomes(gone) == [("OpenAlex", "not known to the service")]
    assert srv.requests["/openalex/works/https://doi.org/10.1046%2Fj.1365-2699.2003.00795"] == 1
    closed, _ = await find(srv.settings(services=("openalex",)), oa.WorkIds.build(
        doi="10.1002/wrna.1370"))
    assert _outcomes(closed) == [("OpenAlex", "no open-access PDF")] and closed.kind == "none"


async def test_broken_services_are_attempts_never_exceptions(srv: OaServer) -> None:
    """A service that is down (a closed port: retried under the policy, waits counted
    not taken) and one that answers HTML instead of JSON are attempts; the next service
    still answers."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.2", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections refused
        waits: list[float] = []

        async def sleep(seconds: float) -> None:
            waits.append(seconds)

        now = [1000.0]

        async def advancing(seconds: float) -> None:
            await sleep(seconds)
            now[0] += seconds

        found, _ = await find(srv.settings(
            unpaywall_url=f"https://127.0.0.2:{port}/v2",
            openalex_url=f"{srv.base}/remote/openalex.example"),
            oa.WorkIds.build(doi=DOI_PDF), sleep=advancing, clock=lambda: now[0])
    assert _outcomes(found)[:2] == [
        ("Unpaywall", "no answer: the connection failed (after 3 tries)"),
        ("OpenAlex", "an answer that is not JSON")]
    assert len(waits) == 2  # the policy's two backoffs between three tries
    assert found.kind == "pdf" and found.service == "Semantic Scholar"


async def test_the_time_for_one_work_is_capped(srv: OaServer) -> None:
    found, _ = await find(srv.settings(work_timeout_s=0.5, pdf_timeout_s=30.0),
                          oa.WorkIds.build(doi="10.1234/oa.slow"))
    assert found.attempts[-1].outcome == "gave up: over 0.5 s for one work"


def test_arxiv_gets_one_connection_at_a_time(tmp_path: pathlib.Path) -> None:
    """arXiv's terms: one request every 3 s and one connection at a time. With the
    interval set to 0 the connection rule alone keeps concurrent lookups apart, where
    Unpaywall's answers (on another server: the rule is per host) overlap."""
    works = {**{f"arxiv:2101.0000{n}": Work() for n in range(2)},
             **{f"10.1234/c.{n}": Work(kind="abstract") for n in range(2)}}

    async def four(settings: oa.OpenAccessSettings) -> None:
        async with oa.Session(settings) as session:
            await asyncio.gather(*(oa.find_source(oa.WorkIds.build(
                arxiv=f"2101.0000{n}"), session) for n in range(2)), *(oa.find_source(
                    oa.WorkIds.build(doi=f"10.1234/c.{n}"), session) for n in range(2)))

    with OaServer(works, delay={"/arxiv/": 0.3}) as arxiv, \
            OaServer(works, delay={"/unpaywall/": 0.3}) as other:
        both = tmp_path / "ca.pem"
        both.write_bytes(arxiv.ca.read_bytes() + other.ca.read_bytes())
        asyncio.run(four(other.settings(
            services=("arxiv", "unpaywall"), ca_bundle=str(both),
            arxiv_api_url=f"{arxiv.base}/arxiv/api/query",
            arxiv_pdf_url=f"{arxiv.base}/arxiv/pdf")))
        assert arxiv.requests["/arxiv/api/query"] == 2 and arxiv.requests[
            "/arxiv/pdf/2101.00000"] == 1
        assert arxiv.most_in_flight["arxiv"] == 1
        assert other.most_in_flight["unpaywall"] == 2


def test_concurrent_finds_share_one_gate(srv: OaServer) -> None:
    async def both() -> list[oa.Found]:
        async with oa.Session(srv.settings()) as session:
            return list(await asyncio.gather(
                oa.find_source(oa.WorkIds.build(doi=DOI_PDF), session),
                oa.find_source(oa.WorkIds.build(doi=DOI_ABSTRACT), session)))
    kinds = [f.kind for f in asyncio.run(both())]
    assert kinds == ["pdf", "abstract"]
