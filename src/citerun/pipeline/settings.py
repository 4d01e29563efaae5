"""The pipeline's settings: documents, embeddings, retrieval, matching and the judge.

Read from the same ``CITERUN_*`` environment as :class:`citerun.core.settings.Settings`
(``CITERUN_EMBEDDING__PROVIDER=openai``, ``CITERUN_JUDGE__KIND=openai``, ...). They live
here, beside the stages that use them, because the core package must not import the
worker. A run's spec may override ``judge`` and ``retrieval`` for that run alone.
"""

from __future__ import annotations

import pydantic
from pydantic_settings import BaseSettings, SettingsConfigDict

from citerun.pipeline import citations, embed
from citerun.pipeline.openaccess.settings import OpenAccessSettings
from citerun.pipeline.pdf.ocr import OcrSettings
from citerun.pipeline import judge as judges
from citerun.pipeline.writer import archive
from citerun.pipeline.writer.limits import WriterLimits
from citerun.pipeline.writer.model import LibraryLimits


class DocumentSettings(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    max_bytes: int = pydantic.Field(
        100 * 1024 * 1024, ge=1, description="Largest PDF accepted, in bytes: 100 MiB holds "
        "any text thesis; bigger files are almost always scans.")
    fetch_timeout_s: float = pydantic.Field(
        120.0, gt=0, description="Seconds a worker may spend downloading one document from "
        "a URL, start to finish.")
    fetch_allow_networks: tuple[str, ...] = pydantic.Field(
        (), description="Networks (CIDR) URL documents may be fetched from although they are "
        "loopback, private or link-local (e.g. an internal mirror); empty: public only.")
    fetch_deny_networks: tuple[str, ...] = pydantic.Field(
        (), description="Extra networks (CIDR) URL documents are never fetched from: the "
        "cluster's pod and service ranges when they are not private addresses.")
    chunk_chars: int = pydantic.Field(
        900, ge=200, description="Target chunk length in characters (about a paragraph).")
    overlap_chars: int = pydantic.Field(
        150, ge=0, description="Characters of the previous chunk repeated at the start of the "
        "next, so evidence cut by a chunk border is still found whole.")


class TaskLimits(pydantic.BaseModel):
    """Resource limits of one sandboxed task kind (see :mod:`citerun.worker.sandbox`)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    cpu_s: int = pydantic.Field(
        ge=1, description="CPU seconds the child process may use (RLIMIT_CPU); on excess "
        "the kernel kills it with SIGXCPU.")
    address_space_mb: int = pydantic.Field(
        ge=64, description="Virtual address space of the child process in MiB "
        "(RLIMIT_AS); an allocation beyond it fails, so the child dies of MemoryError "
        "instead of the pod of an OOM kill.")
    wall_s: float = pydantic.Field(
        gt=0, description="Seconds of wall-clock time before the worker kills the child "
        "(catches a child that sleeps or waits on a lock and so burns no CPU).")


class LimitSettings(pydantic.BaseModel):
    """Bounded work per task: what one hostile document may cost a worker.

    Parsing (and chunking) of a document, claim extraction from a thesis and mapping its
    citations to the sources run in a child process under these limits; a document over a limit fails permanently as
    ``document_too_complex`` with the limit named, once, instead of stalling a worker.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    parse: TaskLimits = pydantic.Field(
        default_factory=lambda: TaskLimits(cpu_s=30, address_space_mb=1024, wall_s=45.0),
        description="parse_document (parse and chunk): a 40-page paper takes 0.3 s of CPU, "
        "a 300-page thesis about 3 s; 30 s leave tenfold room for slow machines. The child "
        "starts at about 560 MiB of address space (130 MiB resident) inherited from the "
        "forkserver and parsing adds little, so 1 GiB leaves 450 MiB for allocations; two "
        "such children plus the worker stay within the chart's 2 GiB pod. Wall time 1.5x "
        "the CPU time: the child may wait for a core on a busy node.")
    extract: TaskLimits = pydantic.Field(
        default_factory=lambda: TaskLimits(cpu_s=15, address_space_mb=1024, wall_s=30.0),
        description="extract_citations: finding markers and claims in a 300-page thesis "
        "takes under 2 s and 200 MiB; 15 s and 1 GiB leave sevenfold room. Wall time 2x "
        "the CPU time (waiting for a core).")
    match: TaskLimits = pydantic.Field(
        default_factory=lambda: TaskLimits(cpu_s=60, address_space_mb=1024, wall_s=90.0),
        description="Mapping a thesis's citations to its sources (extract_citations, after "
        "the extraction): 3,000 references, 6,000 citations and 500 sources whose years "
        "all lie within three years take about 6 s of CPU and 200 MiB (issue 27; it took "
        "16 minutes on the worker's loop before the matching was indexed); the caps of "
        "MatchConfig bound the input, 60 s leave tenfold room. Wall time 1.5x the CPU.")
    max_children: int = pydantic.Field(
        2, ge=1, le=64, description="Sandboxed children one worker runs at once (others "
        "wait, heartbeating): parsing is CPU-bound, and this bounds the worker's memory at "
        "max_children times the address space limit.")
    max_pages: int = pydantic.Field(
        2000, ge=1, description="Pages of one document: the longest theses and books have "
        "well under 1,000.")
    max_page_chars: int = pydantic.Field(
        50_000, ge=1000, description="Characters of text on one page: a dense A4 page of "
        "8 pt type holds about 8,000; 50,000 leaves room for tiny print and tables.")
    max_total_chars: int = pydantic.Field(
        5_000_000, ge=1000, description="Characters of text of one document: 2,000 pages of "
        "2,500 characters.")
    max_claim_chars: int = pydantic.Field(
        2000, ge=200, description="Characters of one claim (the sentence or clause a marker "
        "cites, markers cut out): a long sentence of legal or German prose has about 600, "
        "so 2,000 keep any real one whole. A longer claim is cut at a word before the limit "
        "and the report says so ('Not taken' lists it with its length); the judge's memory "
        "grows with the claim (a 40,000-word claim peaked at 3.5 GiB, issue 41), and one at "
        "the limit costs it under 30 MiB.")
    max_claims_chars: int = pydantic.Field(
        4_000_000, ge=10_000, description="Characters of all the claims of one thesis "
        "together, a claim counted once per citation (each citation stores, judges and "
        "shows its claim): a 300-page thesis of 6,000 citations of 300-character sentences "
        "has 1.8 million. One sentence carrying thousands of \\cite's (a 731-byte .tex "
        "made 8,192 citations of a 23,562-character sentence: 194 MB of parsed JSON) is "
        "refused as document_too_complex with this limit named (issue 41).")
    max_citations: int = pydantic.Field(
        20_000, ge=1, description="Citations of one writer's thesis (LaTeX, Word) that its "
        "parse hands on: over it the thesis is document_too_complex with this limit named, "
        "in the parse child, before its citations are sent back and stored (issue 48: a "
        "339-byte .tex made 100,000 through doubling macros). The matching refuses a thesis "
        "of any format over match.max_citations (also 20,000: each citation is a judge "
        "task), later.")
    bundle: archive.BundleLimits = pydantic.Field(
        default_factory=archive.BundleLimits, description="How much of a writer's file (a "
        ".docx, a LaTeX bundle) the parse child reads: its size, files, inflated bytes and "
        "inflation ratio (CITERUN_LIMITS__BUNDLE__MAX_MEMBERS, ...). A file over a limit "
        "is refused as corrupt with the limit named.")
    library: LibraryLimits = pydantic.Field(
        default_factory=LibraryLimits, description="How large a library file (.bib, "
        "CSL-JSON) of a writer's file may be: bytes and entries "
        "(CITERUN_LIMITS__LIBRARY__MAX_ITEMS, ...). A file over a limit is refused as "
        "corrupt with the limit named.")
    ocr: OcrSettings = pydantic.Field(
        default_factory=OcrSettings, description="OCR of a source none of whose pages has a "
        "usable text layer (a scan, a layer of replacement characters): in a second parse "
        "child under OcrSettings.task_limits, Tesseract's languages, resolution and page cap "
        "(CITERUN_LIMITS__OCR__ENABLED, __DPI, __MAX_PAGES, ...; issue 46).")
    writer: WriterLimits = pydantic.Field(
        default_factory=WriterLimits, description="How much of a writer's file its readers "
        "take: the nesting, includes, macros and text of a LaTeX thesis "
        "(CITERUN_LIMITS__WRITER__LATEX__MAX_INCLUDES, ...), the XML parts and fields of a "
        "Word thesis (CITERUN_LIMITS__WRITER__DOCX__MAX_FIELDS, ...), the fields and names "
        "of a .bib's entries (CITERUN_LIMITS__WRITER__BIB__MAX_NAMES, ...). Over a limit "
        "the file is refused or the excess left out and reported, with the limit named.")


class RetrievalConfig(pydantic.BaseModel):
    """Hybrid retrieval: vector and BM25 legs fused by reciprocal rank fusion."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    top_k: int = pydantic.Field(5, ge=1, le=50, description="Passages handed to the judge.")
    candidates: int = pydantic.Field(
        30, ge=1, le=500, description="Passages each leg ranks before fusion.")
    rrf_k: float = pydantic.Field(
        60.0, gt=0, description="RRF constant: 60 is the value of Cormack et al. (2009); "
        "larger flattens the difference between ranks.")
    vector_weight: float = pydantic.Field(1.0, ge=0, description="Weight of the vector leg.")
    bm25_weight: float = pydantic.Field(1.0, ge=0, description="Weight of the BM25 leg.")


class PipelineSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITERUN_", env_nested_delimiter="__",
                                      frozen=True, extra="ignore")

    documents: DocumentSettings = pydantic.Field(default_factory=DocumentSettings)
    limits: LimitSettings = pydantic.Field(default_factory=LimitSettings)
    embedding: embed.EmbeddingConfig = pydantic.Field(default_factory=embed.EmbeddingConfig)
    retrieval: RetrievalConfig = pydantic.Field(default_factory=RetrievalConfig)
    match: citations.MatchConfig = pydantic.Field(default_factory=citations.MatchConfig)
    judge: judges.JudgeConfig = pydantic.Field(default_factory=judges.JudgeConfig)
    openaccess: OpenAccessSettings = pydantic.Field(
        default_factory=OpenAccessSettings, description="Open-access copies of cited works "
        "without a PDF (issue 51), for the runs that ask (citerun verify --fetch-sources, the "
        "web form, a CitationRun's fetchSources): the services, the operator's e-mail, the "
        "caps and the addresses refused (CITERUN_OPENACCESS__ENABLED, __EMAIL, ...). Off "
        "unless enabled: nothing is sent anywhere.")
