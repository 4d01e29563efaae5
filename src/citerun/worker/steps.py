"""The recipe's stages as the worker runs them in a sandboxed child
(:func:`citerun.worker.sandbox.run`): each returns what it found, or why the document
was refused, as a value the child sends back (an exception would come back as text);
:func:`extracted` and :func:`mapped` run a stage in its child and raise what it refused."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from citerun.pipeline import citations, pdf, recipe
from citerun.pipeline import document as docs
from citerun.pipeline.document import Document, TooComplex
from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.worker import sandbox

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Parsed:
    """A document as read, and the chunks retrieval searches."""

    document: Document
    chunks: tuple[pdf.Chunk, ...]


@dataclasses.dataclass(frozen=True)
class Rejected:
    """A document the reader refused (:class:`pdf.DocumentError`) or one over a cap."""

    reason: str
    message: str
    #: The document's pages, where a reason needs them (``no_text``: the OCR child's budget).
    pages: int = 0


def parse(data: bytes, limits: LimitSettings, settings: DocumentSettings, *,
          ocr: bool = False) -> Parsed | Rejected:
    """:func:`recipe.read` and :func:`recipe.passages` (parse_document's child; with
    ``ocr``, the child under the OCR limits that reads a PDF without a text layer)."""
    try:
        document = recipe.read(data, limits, settings.max_bytes, ocr=ocr)
    except pdf.DocumentError as err:
        pages = docs.page_count_of(data) if err.reason == "no_text" else 0
        return Rejected(err.reason, str(err), pages)
    return Parsed(document, recipe.passages(document, settings))


def parse_by_ocr(data: bytes, limits: LimitSettings, settings: DocumentSettings) -> Parsed | Rejected:
    """:func:`parse` with OCR: the child under ``limits.ocr.task_limits`` that reads a PDF
    the first child found no usable text layer in (issue 46)."""
    return parse(data, limits, settings, ocr=True)


async def read_source(data: bytes, limits: LimitSettings, settings: DocumentSettings
                      ) -> Parsed | Rejected:
    """A document's bytes read as ``parse_document`` reads every upload, and
    ``find_source`` a fetched PDF (issue 51): :func:`parse` in a child under the parse
    limits, and a PDF without a usable text layer read again by OCR in a child of its own
    whose budget grows with its pages (issue 46). Raises
    :class:`~citerun.worker.sandbox.DocumentTooComplex` over a limit."""
    outcome = await sandbox.run(limits.parse, parse, data, limits, settings,
                                slots=limits.max_children)
    if isinstance(outcome, Rejected) and outcome.reason == "no_text" and limits.ocr.enabled:
        logger.info("document read by OCR: %s", outcome.message, extra={"action": "ocr"})
        outcome = await sandbox.run(limits.ocr.task_limits(limits.parse, outcome.pages),
                                    parse_by_ocr, data, limits, settings,
                                    slots=limits.max_children)
    return outcome


def extract(thesis: Document, limits: LimitSettings) -> citations.Extraction | TooComplex:
    """:func:`recipe.extract` (extract_citations' first child)."""
    try:
        return recipe.extract(thesis, limits)
    except TooComplex as err:
        return err


def map_sources(extraction: citations.Extraction, infos: tuple[citations.SourceInfo, ...],
                config: citations.MatchConfig
                ) -> tuple[citations.MappedCitation, ...] | TooComplex | citations.DuplicateKeyError:
    """:func:`recipe.map` (extract_citations' second child); a duplicate key comes back as
    a value, so the worker raises it as an unsandboxed call would."""
    try:
        return recipe.map(extraction, infos, config)
    except (TooComplex, citations.DuplicateKeyError) as err:
        return err


async def extracted(thesis: Document, limits: LimitSettings) -> citations.Extraction:
    """:func:`extract` in a child under the ``extract`` limits; raises
    :class:`~citerun.worker.sandbox.DocumentTooComplex` over a limit or a cap."""
    found = await sandbox.run(limits.extract, extract, thesis, limits, slots=limits.max_children)
    if isinstance(found, TooComplex):
        raise sandbox.DocumentTooComplex(found.limit)
    return found


async def mapped(extraction: citations.Extraction, infos: Sequence[citations.SourceInfo],
                 config: citations.MatchConfig, limits: LimitSettings
                 ) -> tuple[citations.MappedCitation, ...]:
    """:func:`map_sources` in a child under the ``match`` limits, off the event loop;
    raises :class:`~citerun.worker.sandbox.DocumentTooComplex` over a limit or a cap
    (:class:`citations.MatchConfig`'s on entries and citations)."""
    found = await sandbox.run(limits.match, map_sources, extraction, tuple(infos), config,
                              slots=limits.max_children)
    if isinstance(found, TooComplex):
        raise sandbox.DocumentTooComplex(found.limit)
    if isinstance(found, citations.DuplicateKeyError):
        raise found
    return found
