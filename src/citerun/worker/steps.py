"""The recipe's stages as the worker runs them in a sandboxed child
(:func:`citerun.worker.sandbox.run`): each returns what it found, or why the document
was refused, as a value the child sends back (an exception would come back as text);
:func:`extracted` and :func:`mapped` run a stage in its child and raise what it refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from citerun.pipeline import citations, pdf, recipe
from citerun.pipeline.document import Document, TooComplex
from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.worker import sandbox


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


def parse(data: bytes, limits: LimitSettings, settings: DocumentSettings) -> Parsed | Rejected:
    """:func:`recipe.read` and :func:`recipe.passages` (parse_document's child)."""
    try:
        document = recipe.read(data, limits, settings.max_bytes)
    except pdf.DocumentError as err:
        return Rejected(err.reason, str(err))
    return Parsed(document, recipe.passages(document, settings))


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
