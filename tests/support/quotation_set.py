"""Quotation and locator cases built from the real papers of ``$CITERUN_EVALDATA/realpdf``.

Every case is cut from a real page, deterministically (the first sentence that fits, in
page order), so that a test knows the truth without any hand-written answer: (a) a real
sentence quoted exactly, (b) the same with one word replaced, (c) a real sentence of
another paper, (d) the last words of one page and the first of the next, (e) a sentence
with its middle left out behind "[…]"; on the raw pymupdf text, where ligatures ("ﬁ")
and words hyphenated at line ends still stand, a quotation written without them. A copy
of a paper relabelled with /PageLabels (i, ii, then 101, ...) makes the locator cases,
where the printed label and the PDF's index disagree.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pathlib
import re
import unicodedata

import pymupdf

from citerun.pipeline import pdf
from citerun.pipeline.citations import quotation_source, quotations
from citerun.pipeline.pdf import labels as page_labels
from citerun.pipeline.pdf import splitting

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("CITERUN_EVALDATA", ROOT.parent / "shared" / "evaldata")) / "realpdf"
PDFS = DATA / "pdfs"

# The papers cases are cut from, and the one each "absent" case borrows its sentence from.
PAPERS = (
    "longeval_krishna2023.pdf",
    "papermage_lo2023.pdf",
    "cermine_test5.pdf",
    "dont_stop_pretraining_gururangan2020.pdf",
    "citesee_chang2023.pdf",
)
RAW_PAPER = "dont_stop_pretraining_gururangan2020.pdf"  # ligatures and hyphenation in its raw text
RELABELLED_PAPER = "papermage_lo2023.pdf"
# /PageLabels of the relabelled copy: two roman front pages, then arabic from 101.
RELABEL_RULES = (
    {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
    {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 101},
)
REPLACEMENT = "remarkably"

_WORD = re.compile(r"[^\W_]+")


def available() -> bool:
    """Whether the real PDFs are there."""
    return all((PDFS / name).exists() for name in PAPERS)


@dataclasses.dataclass(frozen=True)
class Source:
    """A paper's pages as ``(label, text)``, its labels, and the prepared words."""

    name: str
    pages: tuple[tuple[str, str], ...]

    @functools.cached_property
    def prepared(self) -> quotation_source.SourceText:
        return quotation_source.prepare_source(self.pages)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.pages)

    def count(self, text: str) -> int:
        """How often ``text``'s folded letters stand in the source."""
        needle = "".join(w.casefold() for w in _WORD.findall(unicodedata.normalize("NFKC", text)))
        return self.prepared.hay.count(needle) if needle else 0


@dataclasses.dataclass(frozen=True)
class QuoteCase:
    """A quotation and what checking it in ``source`` must say.

    ``labels`` are the page labels it stands on; for "altered", ``changed`` is the
    (thesis word, source word) pair the difference must name.
    """

    name: str
    source: str
    quote: str
    status: quotations.QuoteStatus
    labels: tuple[str, ...]
    raw: bool = False
    changed: tuple[str, str] | None = None


@dataclasses.dataclass(frozen=True)
class LocatorCase:
    """A quotation of the relabelled copy cited with ``locator``: the check must say
    ``status`` and, for a mismatch, ``actual`` (the printed label it stands on)."""

    name: str
    quote: str
    locator: str
    status: str
    actual: tuple[str, ...]


def pdf_bytes(name: str) -> bytes:
    return (PDFS / name).read_bytes()


def relabelled_bytes(name: str = RELABELLED_PAPER) -> bytes:
    """A copy of ``name`` whose /PageLabels differ from its index (i, ii, 101, 102, ...)."""
    doc = pymupdf.open(stream=pdf_bytes(name), filetype="pdf")  # type: ignore[no-untyped-call]
    with doc:
        doc.set_page_labels([dict(rule) for rule in RELABEL_RULES])  # type: ignore[no-untyped-call]
        return bytes(doc.tobytes())  # type: ignore[no-untyped-call]


def labels_of(data: bytes) -> list[str]:
    doc = pymupdf.open(stream=data, filetype="pdf")  # type: ignore[no-untyped-call]
    with doc:
        return page_labels.page_labels(doc)


@functools.cache
def source(name: str, *, raw: bool = False, relabelled: bool = False) -> Source:
    """A paper's pages: the pipeline's cleaned texts (``parse_pdf``), or with ``raw``
    pymupdf's own text (ligatures, line-end hyphens), labelled by :func:`page_labels`."""
    data = relabelled_bytes(name) if relabelled else pdf_bytes(name)
    labels = labels_of(data)
    if raw:
        doc = pymupdf.open(stream=data, filetype="pdf")  # type: ignore[no-untyped-call]
        with doc:
            texts = [str(doc[i].get_text()) for i in range(doc.page_count)]  # type: ignore[no-untyped-call]
    else:
        texts = [page.text for page in pdf.parse_pdf(data, max_bytes=200 * 1024 * 1024).pages]
    return Source(name, tuple(zip(labels, texts)))


def _clean(sentence: str) -> str:
    return " ".join(sentence.split())


def _fits(sentence: str, *, min_words: int = 10) -> bool:
    words = _WORD.findall(sentence)
    return (
        min_words <= len(words) <= 40
        and sentence[:1].isupper()
        and sentence.endswith(".")
        and not re.search(r"[\[\]()\d/@]|http|et al", sentence)
        and all(ord(c) < 0x2000 or c in "’“”–—" for c in sentence)
    )


def sentences(src: Source, *, min_words: int = 10, start_page: int = 1) -> list[tuple[int, str]]:
    """Clean sentences of ``src`` that stand in it once, with their page position."""
    found: list[tuple[int, str]] = []
    for position, (_, text) in enumerate(src.pages):
        if position < start_page:
            continue
        for sentence in splitting.sentences(text):
            sentence = _clean(sentence)
            if _fits(sentence, min_words=min_words) and src.count(sentence) == 1:
                found.append((position, sentence))
    return found


def _prose(text: str) -> bool:
    """Words and ordinary punctuation only: no reference entry, URL or affiliation mark."""
    return not re.search(r"[\[\]()\d/@†‡*]|http|et al", text)


def _spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _WORD.finditer(text)]


def replace_word(sentence: str) -> tuple[str, str]:
    """The sentence with its middle word (of at least five letters) replaced; and that word."""
    spans = _spans(sentence)
    for a, b in spans[len(spans) // 2:] + spans[: len(spans) // 2]:
        word = sentence[a:b]
        if word.isalpha() and len(word) >= 5 and word.casefold() != REPLACEMENT:
            return sentence[:a] + REPLACEMENT + sentence[b:], word
    raise LookupError(f"no word to replace in {sentence!r}")


def _page_break(src: Source, words: int = 6) -> tuple[str, int] | None:
    """The last words of page k and the first of page k+1, where a sentence runs on."""
    for k in range(len(src.pages) - 1):
        this, following = src.pages[k][1].strip(), src.pages[k + 1][1].strip()
        if not this or not following or not this[-1].isalpha() or not following[0].islower():
            continue
        tail, head = _spans(this), _spans(following)
        if len(tail) < words or len(head) < words:
            continue
        quote = _clean(this[tail[-words][0]:] + " " + following[: head[words - 1][1]])
        if _prose(quote) and src.count(quote) == 1:
            return quote, k
    return None


def _ellipsis(sentence: str, keep: int = 5) -> str:
    spans = _spans(sentence)
    return sentence[: spans[keep - 1][1]] + " […] " + sentence[spans[-keep][0]:]


def quote_cases() -> list[QuoteCase]:
    """Cases (a)-(e) for every paper, the ligature and hyphenation cases on raw text."""
    cases: list[QuoteCase] = []
    for index, name in enumerate(PAPERS):
        src = source(name)
        found = sentences(src)
        position, sentence = found[0]
        label = src.labels[position]
        cases.append(QuoteCase(f"{name}:exact", name, sentence, "exact", (label,)))
        altered, word = replace_word(sentence)
        cases.append(QuoteCase(f"{name}:altered", name, altered, "altered", (label,),
                               changed=(REPLACEMENT, word)))
        other = source(PAPERS[(index + 1) % len(PAPERS)])
        absent = next(s for _, s in sentences(other) if src.count(s) == 0)
        cases.append(QuoteCase(f"{name}:absent", name, absent, "not_found", ()))
        split = _page_break(src)
        if split is not None:
            quote, k = split
            cases.append(QuoteCase(f"{name}:page_break", name, quote, "exact",
                                   (src.labels[k], src.labels[k + 1])))
        position, long_sentence = next(
            (p, s) for p, s in found if len(_WORD.findall(s)) >= 16)
        cases.append(QuoteCase(f"{name}:ellipsis", name, _ellipsis(long_sentence), "exact",
                               (src.labels[position],)))
    cases.extend(_raw_cases())
    return cases


def _raw_cases() -> list[QuoteCase]:
    """On pymupdf's raw text: quotations written with "fi" where the page has "ﬁ", and
    with whole words where the page breaks them at a line end ("cita-\\ntion")."""
    src = source(RAW_PAPER, raw=True)
    cases: list[QuoteCase] = []
    for kind, pattern in (
        # Starting at a whole word: not after a hyphen that breaks a compound at a line end.
        ("ligature", re.compile(r"(?<=[^\s-]\s)(?:\S+\s+){5}\S*[ﬁﬂ]\S*(?:\s+\S+){5}")),
        ("hyphenation", re.compile(r"(?<=[^\s-]\s)(?:\S+\s+){5}[a-z]+-\n[a-z]+(?:\s+\S+){5}")),
    ):
        case = next(
            (QuoteCase(f"{RAW_PAPER}:{kind}", RAW_PAPER, written, "exact", (label,), raw=True)
             for label, text in src.pages
             for match in pattern.finditer(text)
             if (written := _as_written(match.group(0))) != _clean(match.group(0))
             and _prose(written) and src.count(written) == 1),
            None,
        )
        if case is not None:
            cases.append(case)
    return cases


def _as_written(text: str) -> str:
    """Page text as a writer quotes it: no ligature characters, no line-end hyphens."""
    text = re.sub(r"(?<=[a-z])-\n(?=[a-z])", "", text)
    return _clean(unicodedata.normalize("NFKC", text))


def locator_cases() -> list[LocatorCase]:
    """Quotations of the relabelled copy with locators that agree with the printed label,
    with the PDF's index only (a mismatch), or name no page."""
    src = source(RELABELLED_PAPER, relabelled=True)
    found = sentences(src, start_page=0)
    front = next((p, s) for p, s in found if p == 1)
    body = next((p, s) for p, s in found if p >= 3)
    front_label, body_label = src.labels[front[0]], src.labels[body[0]]
    index = str(body[0] + 1)
    number = int(body_label)
    return [
        LocatorCase("printed page", body[1], f"S. {body_label}", "ok", (body_label,)),
        LocatorCase("range", body[1], f"pp. {number - 1}-{number + 1}", "ok", (body_label,)),
        LocatorCase("f.", body[1], f"S. {number - 1} f.", "ok", (body_label,)),
        LocatorCase("ff.", body[1], f"S. {number - 2} ff.", "ok", (body_label,)),
        LocatorCase("pdf index", body[1], f"p. {index}", "mismatch", (body_label,)),
        LocatorCase("next page", body[1], f"S. {number + 1}", "mismatch", (body_label,)),
        LocatorCase("roman front page", front[1], f"p. {front_label}", "ok", (front_label,)),
        LocatorCase("front page by index", front[1], f"p. {front[0] + 1}", "mismatch", (front_label,)),
        LocatorCase("margin number", body[1], "Rn. 12", "not_checkable", ()),
        LocatorCase("footnote alone", body[1], "Fn. 3", "not_checkable", ()),
    ]
