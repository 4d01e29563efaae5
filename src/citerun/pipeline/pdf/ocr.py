"""Reading pages that have no text layer, or one that is not text, by OCR (issue 46).

Older sources in a thesis folder are often scans, and some born-digital PDFs carry a text
layer of glyph ids or replacement characters (U+FFFD) that no reader can use. Such a page
is treated as a page without a text layer (:func:`is_text`); where OCR is on, the page
is rendered and read by Tesseract through PyMuPDF's OCR support
(:meth:`pymupdf.Page.get_textpage_ocr`), and its lines go through the same layout reading
as any other page. Tesseract is Debian's ``tesseract-ocr`` with the English and German
data (``tesseract-ocr-eng``, ``tesseract-ocr-deu``), installed by ``scripts/test`` and the
image; nothing is downloaded. OCR runs in the parse child under its own limits
(:meth:`OcrSettings.task_limits`): the cost grows with the pages, so the budget does too,
up to :attr:`OcrSettings.max_pages`. Speed and character error rate:
docs/benchmarks.md ("OCR").
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import typing
import unicodedata

import pydantic

if typing.TYPE_CHECKING:
    import pymupdf

    from citerun.pipeline.settings import TaskLimits

#: Share of a page's non-space characters that must be letters or digits for its text
#: layer to count as text: a page of prose has about 0.8, a page of formulas or a table of
#: numbers still 0.5 or more; a layer of U+FFFD or of control characters has 0.
MIN_WORD_SHARE = 0.35


class OcrSettings(pydantic.BaseModel):
    """OCR of pages without a usable text layer (``CITERUN_LIMITS__OCR__*``)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    enabled: bool = pydantic.Field(
        True, description="Read a source none of whose pages has a usable text layer by "
        "OCR (Tesseract). Off: such a source is `source_unavailable` ('probably a scan').")
    languages: str = pydantic.Field(
        "eng+deu", pattern=r"^[a-z_]{3,16}(\+[a-z_]{3,16}){0,4}$",
        description="Tesseract's languages, '+'-joined; each needs its traineddata "
        "installed (Debian: tesseract-ocr-eng, tesseract-ocr-deu).")
    dpi: int = pydantic.Field(
        300, ge=72, le=600, description="Resolution the page is rendered at for OCR: 300 "
        "reads 10-pt print with a character error rate under 2% at about 7 s of CPU a page "
        "(docs/benchmarks.md, 'OCR'); 150 is faster and misreads small print.")
    max_pages: int = pydantic.Field(
        60, ge=1, le=2000, description="Pages of one document read by OCR; a longer scan "
        "is refused as document_too_complex with this limit named.")
    cpu_s_per_page: int = pydantic.Field(
        20, ge=1, description="CPU seconds the OCR child may spend per page (about 7 are "
        "needed at 300 dpi), on top of the parse limit.")
    address_space_mb: int = pydantic.Field(
        2048, ge=512, description="Address space of the OCR child: Tesseract with two "
        "languages and a 300-dpi page peaks at about 1.3 GiB of address space.")

    def task_limits(self, parse: TaskLimits, pages: int) -> TaskLimits:
        """The limits of the OCR child for a document of ``pages`` pages: the parse limits
        plus the OCR budget of its pages."""
        from citerun.pipeline.settings import TaskLimits  # noqa: PLC0415 - settings import this module

        extra = self.cpu_s_per_page * min(max(pages, 1), self.max_pages)
        return TaskLimits(cpu_s=parse.cpu_s + extra,
                          address_space_mb=max(parse.address_space_mb, self.address_space_mb),
                          wall_s=parse.wall_s + 1.5 * extra)


#: Letter pairs common in English, German, French and other Latin-script prose: about half
#: of a real page's pairs are among them (0.41-0.56 on every page of the shared real PDFs
#: and the theses); glyph soup (a font's codes read as the wrong letters, "Ifmmp xpsme")
#: has about 0.02.
_COMMON_PAIRS = frozenset("th he in er an re on en at es nd te ed or ti st ar nt is al it as "
                          "ha ng le ou de ch ie ei un ge ne se co io ra ro ve ri li ll ma si "
                          "la me".split())
MIN_COMMON_PAIRS = 0.15
#: Letter pairs a page needs before they are counted (a table, a title page: too few).
MIN_PAIRS = 150
_LATIN_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]{2,}")

TextLayer = typing.Literal["text", "none", "not_text"]


def soup(text: str) -> bool:
    """Whether Latin letters read as glyph soup: enough letter pairs, few of them common in
    any language written in them. Other scripts, and pages of few words, are never soup."""
    pairs = common = 0
    for word in _LATIN_WORD.findall(text.lower()):
        for i in range(len(word) - 1):
            pairs += 1
            common += word[i:i + 2] in _COMMON_PAIRS
    return pairs >= MIN_PAIRS and common < MIN_COMMON_PAIRS * pairs


def text_layer(texts: typing.Iterable[str]) -> TextLayer:
    """What a page's text layer (its lines' texts) is: ``text`` a reader can use (letters
    or digits a fair share of what is printed), ``none`` (nothing printed as text: a scan,
    a blank page), or ``not_text``: characters that are no letters, such as U+FFFD,
    private-use glyph ids or control characters, or letters that form no words (glyph
    soup: :func:`soup`), which is treated as no text layer."""
    letters = shown = 0
    texts = list(texts)
    for text in texts:
        for char in text:
            if char.isspace():
                continue
            shown += 1
            if char != "\ufffd" and unicodedata.category(char)[0] in "LN":
                letters += 1
    if shown == 0:
        return "none"
    if not letters or letters < MIN_WORD_SHARE * shown or soup(" ".join(texts)):
        return "not_text"
    return "text"


@functools.cache
def tessdata() -> str | None:
    """Tesseract's data folder, or None where Tesseract is not installed."""
    if shutil.which("tesseract") is None:
        return None
    import pymupdf  # noqa: PLC0415 - the reader's dependency, imported where read

    try:
        found = pymupdf.get_tessdata()  # type: ignore[no-untyped-call]
    except (RuntimeError, OSError):
        return None
    return str(found) if found and os.path.isdir(found) else None


class OcrUnavailable(RuntimeError):
    """Tesseract or its language data is not installed."""


def read_page(page: pymupdf.Page, settings: OcrSettings, flags: int) -> pymupdf.TextPage:
    """The page rendered at ``settings.dpi`` and read by Tesseract: a text page whose lines
    carry boxes in the page's coordinates, as a text layer's would."""
    data = tessdata()
    if data is None:
        raise OcrUnavailable("Tesseract is not installed (Debian: apt-get install tesseract-ocr "
                             "tesseract-ocr-eng tesseract-ocr-deu)")
    missing = [lang for lang in settings.languages.split("+")
               if not os.path.isfile(os.path.join(data, f"{lang}.traineddata"))]
    if missing:
        raise OcrUnavailable(f"Tesseract has no language data for {', '.join(missing)} in {data}")
    textpage: pymupdf.TextPage = page.get_textpage_ocr(  # type: ignore[no-untyped-call]
        flags=flags, language=settings.languages, dpi=settings.dpi, full=True, tessdata=data)
    return textpage
