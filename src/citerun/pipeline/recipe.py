"""The recipe: one thesis and its sources through every stage, in order.

``read`` (a PDF or a writer's file into one :class:`~.document.Document`; a zip is
unzipped once) -> ``passages`` (a source's chunks) -> ``extract`` (the cited claims and
the reference list: what a writer's file states, else the rules of the page) ->
``sources`` + ``map`` (each citation to a source) -> ``settle`` (verdicts no judge is
needed for) -> ``judge`` (the passages retrieved for a claim, judged) -> ``report``.
The worker runs these stages as tasks (rows in, a stage under the sandbox, rows out, the
flow's transition); :func:`verify` composes them in memory, without Postgres.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence

from citerun.pipeline import citations, document, embed, memory, pdf, ranking, report as reports
from citerun.pipeline import judge as judges
from citerun.pipeline.document import Document, Source, TooComplex
from citerun.pipeline.settings import DocumentSettings, LimitSettings, PipelineSettings
from citerun.pipeline.writer import formats, model as writer


def read(data: bytes, limits: LimitSettings, max_bytes: int) -> Document:
    """A thesis or a source, PDF or writer's file; raises ``pdf.DocumentError``."""
    if formats.is_writer_file(data):
        return formats.read_document(data, limits, max_bytes)
    return document.read_pdf(data, limits, max_bytes)


def passages(doc: Document, settings: DocumentSettings) -> tuple[pdf.Chunk, ...]:
    """The chunks retrieval searches: a PDF's without its own reference list (issue 40)."""
    whole = doc.written is not None and doc.written.format != "pdf"
    pages = doc.pages if whole else document.without_reference_list(doc.pages)
    return pdf.chunk_pages(pages, target_chars=settings.chunk_chars,
                           overlap_chars=settings.overlap_chars)


def extract(thesis: Document, limits: LimitSettings) -> citations.Extraction:
    """What the writer's files state, else the rules of the page (located by the writer's
    paragraphs where there are some); each claim bounded (issue 41)."""
    written = thesis.written
    if written is not None and written.citations:
        extraction = writer.to_extraction(written)
    else:
        over = document.check_text(thesis.pages, limits)
        if over is not None:
            raise TooComplex(over)
        extraction = citations.extract(thesis.numbered())
        if written is not None:
            extraction = formats.locate(dataclasses.replace(
                extraction, skipped=written.skipped + extraction.skipped), thesis)
    extraction = citations.bound_claims(extraction, limits.max_claim_chars)
    over = citations.claims_over((c.claim for c in extraction.citations), limits.max_claims_chars)
    if over is not None:
        raise TooComplex(over)
    return extraction


def sources(thesis: Document, given: Sequence[Source]) -> list[citations.SourceInfo]:
    """The sources as the mapping sees them: the writer's library item attaching a file
    (its ``file`` field) gives its key and its metadata, exact as the library holds it."""
    library = (formats.attached(thesis.written.library, [s.filename for s in given])
               if thesis.written is not None else {})
    infos = []
    for s in given:
        items = library.get(s.filename, ())
        item, doc = (items[0] if len(items) == 1 else None), s.document
        infos.append(citations.SourceInfo(
            document_id=s.id, filename=s.filename,
            title=item.title if item and item.title else doc.title,
            authors=item.authors if item and item.authors else doc.authors,
            year=item.year if item and item.year else doc.year,
            explicit_keys=tuple(dict.fromkeys([*s.keys, *(i.key for i in items)])),
            doi=item.doi if item and item.doi else doc.doi, arxiv_id=doc.arxiv_id))
    return infos


def map(extraction: citations.Extraction, infos: Sequence[citations.SourceInfo],
        config: citations.MatchConfig) -> tuple[citations.MappedCitation, ...]:
    """Each citation to its source (within the caps on entries and citations)."""
    try:
        citations.check_size(extraction, config)
    except citations.TooLargeToMatch as err:
        raise TooComplex(str(err)) from err
    return citations.map_citations(extraction, infos, config)


def settle(mapped: Sequence[citations.MappedCitation],
           by_id: Mapping[str, Source]) -> list[judges.Judgement | bool]:
    """Per citation: the verdict no judge is needed for (no source, an unreadable one, a
    named work that is the source), True for the first citation of a (claim, source) pair
    to judge, False for the others, which take its verdict (issue 41)."""
    leaders: set[tuple[str, str]] = set()
    settled: list[judges.Judgement | bool] = []
    for m in mapped:
        c, source = m.citation, by_id.get(m.document_id or "")
        named = (judges.judge_named(c.names_work, source.document.title, source.document.authors,
                                    next((p.text for p in source.document.pages if p.number == 1), ""))
                 if source is not None and source.read and c.names_work else None)
        if source is None:
            settled.append(_fixed(judges.Verdict.UNRESOLVED_CITATION,
                                  f"no source document matches the citation {c.marker!r}"
                                  + (f" (reference: {m.reference.text[:200]})" if m.reference
                                     else " and the reference list has no entry for it")))
        elif not source.read:
            settled.append(_fixed(judges.Verdict.SOURCE_UNAVAILABLE,
                                  f"the source {source.filename} could not be read: {source.error}"))
        elif named is not None:  # "a lock service called Chubby [8]" and the source is Chubby
            settled.append(named)
        else:
            settled.append((c.claim, source.id) not in leaders)
            leaders.add((c.claim, source.id))
    return settled


def _fixed(verdict: judges.Verdict, rationale: str) -> judges.Judgement:
    return judges.Judgement(verdict=verdict, confidence=1.0, evidence=(), rationale=rationale)


async def judge(the_judge: judges.Judge, claim: str,
                find: Callable[[str], Awaitable[Sequence[judges.Passage]]],
                limits: LimitSettings) -> judges.Judgement:
    """The passages ``find`` retrieves for the claim, judged; the claim bounded again (one
    stored before extraction bounded it: what the judge holds grows with it)."""
    claim = citations.cut_claim(claim, limits.max_claim_chars)
    return await the_judge.judge(claim, await find(claim))


def report(name: str, thesis: Document, given: Sequence[Source],
           extraction: citations.Extraction, mapped: Sequence[citations.MappedCitation],
           verdicts: Sequence[judges.Judgement]) -> reports.Report:
    """The report of citations judged in memory, built from the rows a run stores."""
    return reports.build(*memory.rows(name, thesis, given, extraction, mapped, verdicts))


async def verify(name: str, thesis: bytes, given: Mapping[str, bytes],
                 settings: PipelineSettings, embedder: embed.Embedder | None = None
                 ) -> reports.Report:
    """Every stage in memory: the thesis ``name`` against the sources (file name -> bytes)."""
    the_embedder = embedder or embed.make_embedder(settings.embedding)
    limits, max_bytes = settings.limits, settings.documents.max_bytes
    doc, found = read(thesis, limits, max_bytes), ranking.MemoryRetriever(the_embedder,
                                                                          settings.retrieval)
    read_sources = []
    for filename, data in given.items():
        try:
            source = Source(filename, filename, read(data, limits, max_bytes))
        except pdf.DocumentError as err:
            source = Source(filename, filename, Document(()), read=False, error=str(err))
        found.add(filename, passages(source.document, settings.documents) if source.read else ())
        read_sources.append(source)
    extraction = extract(doc, limits)
    mapped = map(extraction, sources(doc, read_sources), settings.match)
    the_judge = judges.make_judge(settings.judge, the_embedder)
    judged: dict[tuple[str, str | None], judges.Judgement] = {}
    verdicts = []
    for m, settled in zip(mapped, settle(mapped, {s.id: s for s in read_sources})):
        pair, ids = (m.citation.claim, m.document_id), [m.document_id or ""]
        if settled is True:
            judged[pair] = await judge(the_judge, m.citation.claim,
                                       lambda query: found.search(query, ids), limits)
        verdicts.append(judged[pair] if isinstance(settled, bool) else settled)
    return report(name, doc, read_sources, extraction, mapped, verdicts)
