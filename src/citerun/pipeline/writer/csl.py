"""CSL-JSON, the library shape of Zotero, Mendeley and citeproc, into library items.

One reader serves two inputs: a library file the writer exports (a list of items) and
the item data a Word field of Zotero or Mendeley carries (``itemData``, see
:mod:`.docx`), so a field's item and the same item exported compare equal. Only what
mapping uses is read (id, title, authors, year, DOI, type); a value of the wrong JSON
type counts as absent rather than failing the whole library, while a file that is not
a list of items, or is over the limits (:class:`~.model.LibraryLimits`, settings), is
refused with a :class:`~.model.WriterFileError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from citerun.pipeline import normalize
from citerun.pipeline.writer.model import LibraryFormat, LibraryItem, LibraryLimits, WriterFileError

# CSL rich text: "<i>E. coli</i> in <sup>13</sup>C"; the markup is not part of the title.
_MARKUP = re.compile(r"</?(?:i|b|sup|sub|sc|span)(?:\s[^<>]*)?>", re.IGNORECASE)


def _text(value: object) -> str | None:
    """A string field's text, whitespace collapsed; anything else (or empty) is absent."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    text = " ".join(_MARKUP.sub("", value).split())
    return text or None


def _surname(name: object) -> str | None:
    """A CSL name's surname as written: "van Gogh" (its particle kept), or a literal."""
    if not isinstance(name, Mapping):
        return None
    family = _text(name.get("family"))
    if family:
        particle = _text(name.get("non-dropping-particle"))
        return f"{particle} {family}" if particle else family
    return _text(name.get("literal")) or _text(name.get("given"))


def _names(item: Mapping[str, Any]) -> tuple[str, ...]:
    """The authors' surnames; an edited volume without authors gives its editors."""
    for role in ("author", "editor"):
        names = item.get(role)
        if isinstance(names, list):
            found = tuple(s for s in (_surname(n) for n in names) if s)
            if found:
                return found
    return ()


def _year(issued: object) -> int | None:
    """The year of a CSL date: ``{"date-parts": [[2020, 5]]}``, or its raw/literal form."""
    if not isinstance(issued, Mapping):
        return _year_in(_text(issued))
    parts = issued.get("date-parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
        first = parts[0][0]
        if isinstance(first, int) and not isinstance(first, bool) and 0 < first < 10_000:
            return first
        year = _year_in(_text(first))
        if year:
            return year
    return _year_in(_text(issued.get("raw"))) or _year_in(_text(issued.get("literal")))


def _year_in(text: str | None) -> int | None:
    return normalize.field_year(text)


def _doi(value: object) -> str | None:
    """The DOI without its resolver prefix ("https://doi.org/10.1/x" -> "10.1/x")."""
    text = _text(value)
    if not text:
        return None
    text = normalize.DOI_RESOLVER.sub("", text)
    match = normalize.DOI.search(text)
    return match[1] if match else None


def csl_item(item: Mapping[str, Any], *, key: str | None = None,
             origin: LibraryFormat = "csl-json") -> LibraryItem:
    """The library item of one CSL-JSON item; ``key`` overrides the item's ``id``.

    An item with neither a usable ``id`` nor a given ``key`` cannot be cited and is
    refused.
    """
    if not isinstance(item, Mapping):
        raise WriterFileError(f"a CSL-JSON item is a {type(item).__name__}, not an object")
    item_key = key or _text(item.get("id"))
    if not item_key:
        raise WriterFileError("a CSL-JSON item has no id")
    return LibraryItem(
        key=item_key,
        title=_text(item.get("title")),
        authors=_names(item),
        year=_year(item.get("issued")) or _year_in(_text(item.get("year"))),
        doi=_doi(item.get("DOI", item.get("doi"))),
        kind=_text(item.get("type")),
        origin=origin,
        arxiv=_arxiv(item), pmid=_text(item.get("PMID")), pmcid=_text(item.get("PMCID")),
        isbn=_text(item.get("ISBN")), url=_text(item.get("URL")),
    )


def _arxiv(item: Mapping[str, Any]) -> str | None:
    """An arXiv preprint's id: Zotero writes it as the ``number`` of an item whose
    ``archive``, ``publisher`` or ``container-title`` is arXiv."""
    where = " ".join(_text(item.get(k)) or "" for k in ("archive", "publisher",
                                                          "container-title"))
    return _text(item.get("number")) if "arxiv" in where.lower() else None


#: Keys of which a CSL item has at least one besides its ``id``.
_CSL_KEYS = frozenset({"type", "title", "author", "editor", "issued", "DOI", "container-title"})


def is_csl_json(text: str, limits: LibraryLimits = LibraryLimits()) -> bool:
    """Whether ``text`` is a CSL-JSON library: a JSON list whose every entry is an object
    with an ``id`` and one of :data:`_CSL_KEYS` (an experiment's config or a code sample
    in the thesis's folder is not). A file that is not JSON at all is not one either."""
    if len(text) > limits.max_bytes or not text.lstrip().startswith("["):
        return False
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return (isinstance(data, list) and bool(data)
            and all(isinstance(item, Mapping) and "id" in item and not _CSL_KEYS.isdisjoint(item)
                    for item in data))


def read_csl_json(text: str, limits: LibraryLimits = LibraryLimits()) -> tuple[LibraryItem, ...]:
    """Every item of a CSL-JSON library file (a JSON list of items), in file order.

    An id given twice keeps its first item, as citeproc processors do.
    """
    max_bytes = limits.max_bytes
    if len(text) > max_bytes or len(text.encode("utf-8", errors="replace")) > max_bytes:
        raise WriterFileError(f"CSL-JSON file over the limit of {max_bytes} bytes")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise WriterFileError(f"not a CSL-JSON file: line {err.lineno}, column {err.colno}: "
                              f"{err.msg}") from None
    except (ValueError, RecursionError) as err:
        raise WriterFileError(f"not a CSL-JSON file: {str(err)[:200]}") from None
    if not isinstance(data, list):
        raise WriterFileError(f"a CSL-JSON file is a list of items, not a {type(data).__name__}")
    if len(data) > limits.max_items:
        raise WriterFileError(
            f"CSL-JSON file of {len(data)} items, over the limit of {limits.max_items}")
    items: dict[str, LibraryItem] = {}
    for number, raw in enumerate(data, 1):
        try:
            found = csl_item(raw)
        except WriterFileError as err:
            raise WriterFileError(f"CSL-JSON item {number}: {err}") from None
        items.setdefault(found.key, found)
    return tuple(items.values())
