"""What identifies a cited work to the open-access services: :class:`WorkIds`.

Built from a writer's library item (:meth:`WorkIds.from_library_item`) or from a reference
entry read off a PDF thesis's pages (:meth:`WorkIds.from_entry`), every identifier
normalised once here: a DOI without its resolver and in lower case (DOIs are
case-insensitive), an arXiv id without "arXiv:", its version or its URL, a PMID as
digits, a PMCID as "PMC" and digits. :meth:`WorkIds.key` is the stable key a fetched
copy is stored under.
"""

from __future__ import annotations

import dataclasses
import re

from citerun.pipeline import normalize
from citerun.pipeline.citations.model import ReferenceEntry
from citerun.pipeline.writer.model import LibraryItem

# arXiv identifiers (arxiv.org/help/arxiv_identifier): "2101.01234", "0704.0001" (new
# style, 4 or 5 digits after the dot), "hep-th/9901001", "math.GT/0309136" (old style);
# a version "v2" may follow.
_ARXIV_NEW = r"\d{4}\.\d{4,5}"
_ARXIV_OLD = r"[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7}"
ARXIV_ID = re.compile(rf"(?<![\w./-])({_ARXIV_NEW}|{_ARXIV_OLD})(?:v\d+)?(?![\w.])")
# Where a text or URL says that what follows is an arXiv id.
_ARXIV_CUE = re.compile(
    rf"(?:arxiv\.org/(?:abs|pdf)/|arxiv\s*:\s*|arxiv\s+preprint\s+(?:arxiv\s*:\s*)?)"
    rf"({_ARXIV_NEW}|{_ARXIV_OLD})", re.IGNORECASE)
#: arXiv's own DOIs (DataCite, since 2022): the DOI prefix and "arXiv." before the id.
ARXIV_DOI_PREFIX = "10.48550/arxiv."
_PMID = re.compile(r"\bPMID\s*:?\s*(\d{1,9})\b", re.IGNORECASE)
_PMCID = re.compile(r"\b(PMC\d{1,9})\b", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s<>\"{}]+", re.IGNORECASE)


def doi_of(value: str | None) -> str | None:
    """A DOI from a field, a URL or a text ("https://doi.org/10.1/X" -> "10.1/x")."""
    if not value:
        return None
    text = normalize.DOI_RESOLVER.sub("", value.strip())
    match = normalize.FIELD_DOI.match(text) or normalize.DOI.search(text)
    if not match:
        return None
    return match.group(0).rstrip(".,;").lower()


def arxiv_of(value: str | None) -> str | None:
    """An arXiv id without prefix or version, from a field ("arXiv:2101.01234v2"), an
    arXiv URL, or arXiv's own DOI; None when ``value`` holds none."""
    if not value:
        return None
    text = value.strip()
    if text.lower().startswith(ARXIV_DOI_PREFIX):
        text = text[len(ARXIV_DOI_PREFIX):]
    cued = _ARXIV_CUE.search(text)
    if cued:
        return cued.group(1)
    bare = ARXIV_ID.fullmatch(text) or ARXIV_ID.fullmatch(text.removeprefix("arXiv:"))
    return bare.group(1) if bare else None


def pmid_of(value: str | None) -> str | None:
    """A PubMed id as digits ("PMID: 123" or "123")."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit() and len(text) <= 9:
        return str(int(text))
    match = _PMID.search(text)
    return str(int(match.group(1))) if match else None


def pmcid_of(value: str | None) -> str | None:
    """A PubMed Central id as "PMC" and digits ("pmc123", "123" -> "PMC123")."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit() and len(text) <= 9:
        return f"PMC{int(text)}"
    match = _PMCID.search(text)
    return "PMC" + match.group(1)[3:] if match else None


def isbn_of(value: str | None) -> str | None:
    """An ISBN as its 10 or 13 digits (the final "X" kept), or None."""
    if not value:
        return None
    first = re.split(r"[,;]|\s{2,}", value.strip())[0]
    digits = re.sub(r"[^0-9Xx]", "", first).upper()
    return digits if len(digits) in (10, 13) and "X" not in digits[:-1] else None


def url_of(value: str | None) -> str | None:
    """The first http(s) URL of a field, LaTeX escapes undone, or None."""
    if not value:
        return None
    match = _URL.search(value.replace("\\_", "_").replace("\\%", "%").replace("\\#", "#"))
    return match.group(0).rstrip(".,;)]}") if match else None


@dataclasses.dataclass(frozen=True)
class WorkIds:
    """What identifies one cited work; every field optional, all normalised."""

    doi: str | None = None
    arxiv: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    isbn: str | None = None
    url: str | None = None
    title: str | None = None
    first_author: str | None = None
    year: int | None = None

    def __post_init__(self) -> None:
        # A DOI of arXiv's own is the arXiv id too (the services index it by that).
        if self.doi and not self.arxiv and self.doi.startswith(ARXIV_DOI_PREFIX):
            object.__setattr__(self, "arxiv", arxiv_of(self.doi))

    @classmethod
    def build(cls, *, doi: str | None = None, arxiv: str | None = None,
              pmid: str | None = None, pmcid: str | None = None, isbn: str | None = None,
              url: str | None = None, title: str | None = None,
              first_author: str | None = None, year: int | None = None) -> WorkIds:
        """Ids from raw values as a library or a page writes them, normalised."""
        link = url_of(url)
        resolver_link = link if link and normalize.DOI_RESOLVER.match(link) else None
        return cls(doi=doi_of(doi) or doi_of(resolver_link),
                   arxiv=arxiv_of(arxiv) or arxiv_of(link) or arxiv_of(doi),
                   pmid=pmid_of(pmid), pmcid=pmcid_of(pmcid), isbn=isbn_of(isbn), url=link,
                   title=" ".join(title.split()) if title and title.strip() else None,
                   first_author=first_author.strip() if first_author and
                   first_author.strip() else None, year=year)

    @classmethod
    def from_library_item(cls, item: LibraryItem) -> WorkIds:
        """The ids of a writer's library item (.bib, CSL-JSON, a Word field's item)."""
        return cls.build(doi=item.doi, arxiv=item.arxiv, pmid=item.pmid, pmcid=item.pmcid,
                         isbn=item.isbn, url=item.url, title=item.title,
                         first_author=item.authors[0] if item.authors else None,
                         year=item.year)

    @classmethod
    def from_entry(cls, entry: ReferenceEntry) -> WorkIds:
        """The ids of a reference entry read from a thesis's pages: its DOI or arXiv id,
        a PMID or PMCID or URL written in it, else its title, first author and year."""
        text = entry.text or ""
        pmid = _PMID.search(text)
        pmcid = _PMCID.search(text)
        cue = _ARXIV_CUE.search(text)
        return cls.build(doi=entry.doi or doi_of(text),
                         arxiv=entry.arxiv_id or (cue.group(1) if cue else None),
                         pmid=pmid.group(1) if pmid else None,
                         pmcid=pmcid.group(1) if pmcid else None, url=url_of(text),
                         title=entry.title,
                         first_author=entry.authors[0] if entry.authors else None,
                         year=entry.year)

    def key(self) -> str:
        """The stable key a fetched copy is stored under: "doi:10.1000/x", else
        "arxiv:...", "pmid:...", "pmcid:...", else "title:<folded title>|<author>|<year>"
        (then "isbn:..." or "url:..." for a work with neither id nor title)."""
        for name in ("doi", "arxiv", "pmid", "pmcid"):
            value = getattr(self, name)
            if value:
                return f"{name}:{value}"
        if self.title:
            author = normalize.fold(self.first_author or "")
            return f"title:{normalize.fold_words(self.title)}|{author}|{self.year or ''}"
        if self.isbn:
            return f"isbn:{self.isbn}"
        return f"url:{self.url}" if self.url else "none:"

    def tried(self) -> list[str]:
        """The identifiers a report lists as tried: "DOI 10.1000/x", "arXiv 2101.01234",
        "PMID 123", "PMCID PMC123", "ISBN ...", "URL ...", and the title looked up."""
        found = [f"{label} {value}" for label, value in (
            ("DOI", self.doi), ("arXiv", self.arxiv), ("PMID", self.pmid),
            ("PMCID", self.pmcid), ("ISBN", self.isbn), ("URL", self.url)) if value]
        if self.title and not self.has_identifier():
            by = ", ".join(str(v) for v in (self.first_author, self.year) if v)
            found.append(f"title \u201c{self.title}\u201d" + (f" ({by})" if by else ""))
        return found

    def has_identifier(self) -> bool:
        """Whether a service can be asked by an identifier (not by title)."""
        return bool(self.doi or self.arxiv or self.pmid or self.pmcid)

    def is_empty(self) -> bool:
        """Whether there is nothing to look up at all."""
        return not (self.has_identifier() or self.title or self.url or self.isbn)
