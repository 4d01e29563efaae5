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
from citerun.pipeline.judging import settling
from citerun.pipeline.settings import DocumentSettings, LimitSettings, PipelineSettings
from citerun.pipeline.writer import attach, formats, model as writer


def read(data: bytes, limits: LimitSettings, max_bytes: int, *,
         ocr: bool | None = None) -> Document:
    """A thesis or a source, PDF or writer's file; raises ``pdf.DocumentError``.

    ``ocr``: None reads a PDF without a usable text layer again by OCR (where
    ``limits.ocr.enabled``); False never OCRs, True OCRs at once: the worker reads without
    first and OCRs in a child of its own under the OCR limits (``no_text``, issue 46)."""
    if formats.is_writer_file(data):
        return formats.read_document(data, limits, max_bytes)
    try:
        return document.read_pdf(data, limits, max_bytes, ocr=bool(ocr))
    except pdf.DocumentError as err:
        if ocr is not None or err.reason != "no_text" or not limits.ocr.enabled:
            raise
    return document.read_pdf(data, limits, max_bytes, ocr=True)


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
            extraction = writer.typed_references(written, extraction)
    extraction = citations.bound_claims(extraction, limits.max_claim_chars)
    over = citations.claims_over((c.claim for c in extraction.citations), limits.max_claims_chars)
    if over is not None:
        raise TooComplex(over)
    return extraction


#: Each source as the mapping sees it (the writer's library item that attaches its file).
sources = attach.source_infos


def map(extraction: citations.Extraction, infos: Sequence[citations.SourceInfo],
        config: citations.MatchConfig) -> tuple[citations.MappedCitation, ...]:
    """Each citation to its source (within the caps on entries and citations)."""
    try:
        citations.check_size(extraction, config)
    except citations.TooLargeToMatch as err:
        raise TooComplex(str(err)) from err
    return citations.map_citations(extraction, infos, config)


#: Per citation: a verdict no judge is needed for, or whether it is the pair's first.
settle = settling.settle


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
