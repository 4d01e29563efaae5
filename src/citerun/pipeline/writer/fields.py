"""What one citation field of a Word document cites, read from its field code.

:mod:`.docx` walks the document and hands each field's code (and the ``w:fldData`` an
EndNote field carries) here; :func:`citation_of` reads it for the reference manager that
wrote it (:func:`program_of`) into the items it cites with their locators and prefixes.
A code that cannot be read raises :class:`Unreadable`, whose reason the report lists.
What is read is bounded by :class:`~.limits.DocxLimits` (settings).
The formats are described in :mod:`.docx`; Paperpile's is read here too:
``ADDIN paperpile_citation <clusterId>..</clusterId><metadata><citation><id>..</id>
<locator>..</locator><locator_label>..</locator_label><prefix>..</prefix>
<no_author>..</no_author></citation>..</metadata><data>BASE64</data>``, the data a
zlib-compressed JSON list of Paperpile's items (``_id``, ``citekey``, ``title``,
``author`` with ``last`` or ``collective``, ``published.year``, ``doi``).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
import urllib.parse
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Mapping
from typing import Any

import defusedxml  # type: ignore[import-untyped]
import defusedxml.ElementTree as SafeET  # type: ignore[import-untyped]

from citerun.pipeline.writer import csl
from citerun.pipeline.writer.limits import DocxLimits
from citerun.pipeline.writer.model import LibraryItem, WriterFileError

NOT_CITATIONS = ("ADDIN ZOTERO_BIBL", "ADDIN EN.REFLIST", "ADDIN CSL_BIBLIOGRAPHY",
                 "ADDIN MENDELEY BIBLIOGRAPHY", "ADDIN CITAVI BIBLIOGRAPHY",
                 "ADDIN CITAVI.BIBLIOGRAPHY", "ADDIN EN.CITE.DATA",
                 "ADDIN PAPERPILE_BIBLIOGRAPHY")
MENDELEY_TAG = "MENDELEY_CITATION_v3_"
_OS = re.compile(r"<os>([^<]*)</os>")


def parse_xml(data: bytes, what: str, limits: DocxLimits, *, walked: bool = False) -> ET.Element:
    """The root of ``data``, parsed without DTDs; refused past ``limits.max_elements``
    (counted before parsing: every element opens with ``<``) or ``limits.max_depth``.

    A ``walked`` part (a story :class:`_Story` reads) has its depth checked by that
    walk, which visits every element anyway.
    """
    max_elements, max_depth = limits.max_elements, limits.max_depth
    if data.count(b"<") > 2 * max_elements:
        raise WriterFileError(f"{what}: more than {max_elements} elements")
    try:
        root = SafeET.fromstring(data, forbid_dtd=True)
    except defusedxml.DefusedXmlException as err:
        raise WriterFileError(f"{what}: refused ({type(err).__name__}: DTDs and entities "
                              "are not read)") from None
    except ET.ParseError as err:
        raise WriterFileError(f"{what}: not well-formed XML ({err})") from None
    except (LookupError, ValueError) as err:  # an encoding expat cannot read (issue 48)
        raise WriterFileError(f"{what}: its declared encoding cannot be read ({err})") from None
    if not isinstance(root, ET.Element):
        raise WriterFileError(f"{what}: empty")
    if walked:
        return root
    stack = [(root, 1)]
    elements = 0
    while stack:
        element, depth = stack.pop()
        elements += 1
        if depth > max_depth:
            raise WriterFileError(f"{what}: elements nested deeper than {max_depth}")
        stack.extend((child, depth + 1) for child in element)
    if elements > max_elements:
        raise WriterFileError(f"{what}: more than {max_elements} elements")
    return root


class Unreadable(Exception):
    """A citation field whose code cannot be read; the reason becomes a Skipped."""


@dataclasses.dataclass(frozen=True)
class Cited:
    key: str
    item: LibraryItem | None
    locator: str | None
    prefix: str | None


@dataclasses.dataclass(frozen=True)
class Citation:
    program: str
    cited: tuple[Cited, ...]
    formatted: str | None  # the citation as the program formatted it, if it says


def program_of(instruction: str) -> str | None:
    """Which reference manager's citation a field code is, None for any other field."""
    code = " ".join(instruction.split()[:2]).upper()
    head = instruction.lstrip()
    if head.startswith(MENDELEY_TAG):
        return "Mendeley"
    if head.upper().startswith("ADDIN CITAVIPLACEHOLDER"):
        return "Citavi"
    if any(code.startswith(other) for other in NOT_CITATIONS):
        return None
    if code.startswith("ADDIN ZOTERO_ITEM"):
        return "Zotero"
    if code.startswith("ADDIN CSL_CITATION") or code.startswith("CSL_CITATION"):
        return "Mendeley"
    if code.startswith("ADDIN EN.CITE"):
        return "EndNote"
    if code.startswith("ADDIN PAPERPILE_CITATION"):
        return "Paperpile"
    return None


def citation_of(program: str, instruction: str, data: tuple[str, ...] = (),
                limits: DocxLimits = DocxLimits()) -> Citation:
    """What the field cites: ``instruction`` its code, ``data`` its ``w:fldData``;
    ``limits`` bound the data read from it."""
    if program in ("Zotero", "Mendeley"):
        return _csl_citation(program, instruction)
    if program == "Citavi":
        return _citavi_citation(instruction, limits.max_citavi_objects)
    if program == "Paperpile":
        return _paperpile_citation(instruction, limits.max_inflated)
    return _endnote_citation(instruction, data, limits)


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise Unreadable(f"{what} is not valid JSON ({str(err)[:120]})") from None


def _base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise Unreadable(f"{what} is not valid base64") from None


def clean_locator(raw: object) -> str | None:
    """A locator as the PDF rules write it: "45–47" -> "45-47", "45f." -> "45 f."."""
    text = csl._text(raw)
    if not text:
        return None
    text = re.sub(r"\s*[-–—]\s*", "-", text)
    return re.sub(r"\s*(ff?\.)$", r" \1", text)


def _stable_key(cited: Mapping[str, Any]) -> str | None:
    """The item's URI's last part (Zotero's item key, Mendeley's uuid), else its id."""
    uris = cited.get("uris", cited.get("uri"))
    parsed = None
    if isinstance(uris, list) and uris and isinstance(uris[0], str):
        try:
            parsed = urllib.parse.urlsplit(uris[0].strip())
        except ValueError:  # "http://[zotero.org/...": not a URI, so no key of one (issue 48)
            parsed = None
    if parsed is not None:
        last = parsed.path.rstrip("/").rsplit("/", 1)[-1] if parsed.path.strip("/") else ""
        uuid = urllib.parse.parse_qs(parsed.query).get("uuid")
        if uuid and uuid[0].strip():
            return uuid[0].strip()
        if last and not (parsed.query and last == "documents"):
            return last
    for value in (cited.get("id"), (cited.get("itemData") or {}).get("id")
                  if isinstance(cited.get("itemData"), Mapping) else None):
        text = csl._text(value)
        if text:
            return text
    return None


def _csl_citation(program: str, instruction: str) -> Citation:
    """Zotero's and Mendeley's CSL citation: the JSON object after the field's name."""
    head = instruction.lstrip()
    if head.startswith(MENDELEY_TAG):
        raw = _base64(head[len(MENDELEY_TAG):], "the Mendeley Cite tag")
        data = _json(raw.decode("utf-8", errors="replace"), "the Mendeley Cite citation")
    else:
        start = instruction.find("{")
        if start < 0:
            raise Unreadable(f"the {program} field holds no citation data")
        try:
            data, _ = json.JSONDecoder().raw_decode(instruction, start)
        except (ValueError, RecursionError) as err:
            raise Unreadable(f"the {program} field's data is not valid JSON "
                              f"({str(err)[:120]})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("citationItems"), list):
        raise Unreadable(f"the {program} field's data has no citationItems")
    cited: list[Cited] = []
    for entry in data["citationItems"]:
        if not isinstance(entry, Mapping):
            continue
        key = _stable_key(entry)
        if not key:
            continue
        item_data = entry.get("itemData")
        item = (csl.csl_item(item_data, key=key, origin="field")
                if isinstance(item_data, Mapping) else None)
        label = csl._text(entry.get("label")) or "page"
        locator = clean_locator(entry.get("locator"))
        if locator and label != "page":
            locator = f"{label} {locator}"
        cited.append(Cited(key, item, locator, csl._text(entry.get("prefix"))))
    if not cited:
        raise Unreadable(f"the {program} field names no item")
    formatted = None
    for holder in ("properties", "mendeley"):
        block = data.get(holder)
        if isinstance(block, Mapping):
            formatted = formatted or csl._text(block.get("plainCitation")) or csl._text(
                block.get("formattedCitation"))
    return Citation(program, tuple(cited), formatted)


# Citavi's placeholder is Json.NET with preserved references: an object seen before is
# written {"$ref": "7"}, pointing at the object that carries "$id": "7".
def _citavi_ids(data: object, most: int) -> dict[str, Mapping[str, Any]]:
    ids: dict[str, Mapping[str, Any]] = {}
    stack = [data]
    seen = 0
    while stack:
        value = stack.pop()
        seen += 1
        if seen > most:
            raise Unreadable("the Citavi placeholder holds too many objects")
        if isinstance(value, Mapping):
            if isinstance(value.get("$id"), str):
                ids[value["$id"]] = value
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return ids


def _deref(value: object, ids: Mapping[str, Mapping[str, Any]]) -> object:
    for _ in range(8):
        if isinstance(value, Mapping) and isinstance(value.get("$ref"), str):
            value = ids.get(value["$ref"])
        else:
            break
    return value


def _citavi_page(page_range: object, ids: Mapping[str, Mapping[str, Any]]) -> str | None:
    """A Citavi ``PageRange``: its ``OriginalString``, or start and end pages."""
    page_range = _deref(page_range, ids)
    if isinstance(page_range, str):
        found = _OS.findall(page_range)
        return clean_locator(found[-1] if found else page_range)
    if not isinstance(page_range, Mapping):
        return None
    whole = clean_locator(page_range.get("OriginalString"))
    if whole:
        return whole
    ends = []
    for side in ("StartPage", "EndPage"):
        page = _deref(page_range.get(side), ids)
        text = clean_locator(page.get("OriginalString")) if isinstance(page, Mapping) else None
        if text and text not in ends:
            ends.append(text)
    return "-".join(ends) or None


# A Citavi object's "Id" (a GUID): never a name, whatever field it turns up in.
_GUID = re.compile(r"[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", re.IGNORECASE)


def _citavi_person(person: object) -> str | None:
    """A Citavi person's surname, or an organisation's name as a whole: Citavi keeps an
    organisation (Persons and Organizations) with its name in ``LastName`` or, from some
    versions and imports, in ``Name``/``FullName``, its short form in ``Abbreviation``."""
    if not isinstance(person, Mapping):
        return None
    for field in ("LastName", "Name", "FullName", "Abbreviation", "FirstName"):
        name = csl._text(person.get(field))
        if name and not _GUID.fullmatch(name):
            return name
    return None


def _citavi_names(reference: Mapping[str, Any], ids: Mapping[str, Mapping[str, Any]],
                  depth: int = 0) -> tuple[str, ...]:
    """A reference's authors, else its editors, its organisations (a report's issuing
    body), its collaborators; else its parent's (a chapter of an organisation's report
    names the organisation on the report only)."""
    for role in ("Authors", "Editors", "Organizations", "Collaborators"):
        people = _deref(reference.get(role), ids)
        if not isinstance(people, list):
            continue
        names = [name for name in (_citavi_person(_deref(p, ids)) for p in people) if name]
        if names:
            return tuple(names)
    parent = _deref(reference.get("ParentReference"), ids)
    if isinstance(parent, Mapping) and depth < 2:
        return _citavi_names(parent, ids, depth + 1)
    return ()


def _citavi_citation(instruction: str, most_objects: int) -> Citation:
    """Citavi's ``ADDIN CitaviPlaceholder{base64}``: a WordPlaceholder's ``Entries``."""
    head = instruction.lstrip()
    payload = head[len("ADDIN CitaviPlaceholder"):].strip()
    if payload.startswith("{") and payload.endswith("}"):
        payload = payload[1:-1]
    raw = _base64(payload, "the Citavi placeholder")
    data = _json(raw.decode("utf-8-sig", errors="replace"), "the Citavi placeholder")
    ids = _citavi_ids(data, most_objects)
    entries = _deref(data.get("Entries"), ids) if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise Unreadable("the Citavi placeholder has no Entries")
    cited: list[Cited] = []
    for entry in entries:
        entry = _deref(entry, ids)
        if not isinstance(entry, Mapping):
            continue
        reference = _deref(entry.get("Reference"), ids)
        reference = reference if isinstance(reference, Mapping) else None
        key = csl._text(reference.get("Id")) if reference else None
        key = key or csl._text(entry.get("ReferenceId"))
        if not key:
            continue
        item = None
        if reference is not None:
            title = csl._text(reference.get("Title"))
            subtitle = csl._text(reference.get("Subtitle"))
            year = (csl._year_in(csl._text(reference.get("YearResolved")))
                    or csl._year_in(csl._text(reference.get("Year")))
                    or csl._year_in(csl._text(reference.get("Date"))))
            item = LibraryItem(
                key=key, title=f"{title}: {subtitle}" if title and subtitle else title,
                authors=_citavi_names(reference, ids), year=year,
                doi=csl._doi(reference.get("Doi")),
                kind=csl._text(reference.get("ReferenceType")), origin="field")
        cited.append(Cited(key, item, _citavi_page(entry.get("PageRange"), ids),
                            csl._text(entry.get("Prefix"))))
    if not cited:
        raise Unreadable("the Citavi placeholder names no reference")
    formatted = csl._text(data.get("Text")) if isinstance(data, Mapping) else None
    return Citation("Citavi", tuple(cited), formatted)


def _itertext(element: ET.Element | None) -> str | None:
    return " ".join("".join(element.itertext()).split()) or None if element is not None else None


def _find(element: ET.Element, path: str) -> ET.Element | None:
    """A descendant by a path of local names, ignoring case ("titles/title")."""
    current: ET.Element | None = element
    for step in path.split("/"):
        if current is None:
            return None
        current = next((c for c in current if isinstance(c.tag, str)
                        and c.tag.lower() == step.lower()), None)
    return current


def _endnote_citation(instruction: str, data: tuple[str, ...], limits: DocxLimits) -> Citation:
    """EndNote's ``<EndNote><Cite>`` XML, from the field's data or its code."""
    payload = instruction.lstrip()[len("ADDIN EN.CITE"):].strip()
    for chunk in data:
        if "<EndNote" in payload:
            break
        payload = _base64(chunk, "the EndNote field data").decode("utf-8", errors="replace")
    if "<EndNote" not in payload:
        raise Unreadable("the EndNote field holds no <EndNote> record")
    payload = payload[payload.index("<"):]  # a prolog or DTD before it is the parser's to refuse
    try:
        root = parse_xml(payload.encode("utf-8"), "the EndNote field", limits)
    except WriterFileError as err:
        raise Unreadable(str(err)) from None
    cited: list[Cited] = []
    for cite in (c for c in root if isinstance(c.tag, str) and c.tag.lower() == "cite"):
        record = _find(cite, "record")
        key = _itertext(_find(cite, "RecNum")) or (
            _itertext(_find(record, "rec-number")) if record is not None else None)
        if not key:
            continue
        title = authors = year = doi = kind = None
        if record is not None:
            title = _itertext(_find(record, "titles/title"))
            people = _find(record, "contributors/authors")
            names = [_itertext(a) or "" for a in (people if people is not None else [])]
            authors = tuple(n.split(",", 1)[0].strip() for n in names if n.split(",", 1)[0].strip())
            year = csl._year_in(_itertext(_find(record, "dates/year")))
            doi = csl._doi(_itertext(_find(record, "electronic-resource-num")))
            ref_type = _find(record, "ref-type")
            kind = ref_type.get("name") if ref_type is not None else None
        if not authors:
            author = _itertext(_find(cite, "Author"))
            authors = (author,) if author else ()
        year = year or csl._year_in(_itertext(_find(cite, "Year")))
        item = LibraryItem(key=key, title=title, authors=authors, year=year, doi=doi,
                           kind=kind, origin="field")
        cited.append(Cited(key, item, clean_locator(_itertext(_find(cite, "Pages"))),
                            _itertext(_find(cite, "Prefix"))))
    if not cited:
        raise Unreadable("the EndNote field names no record")
    formatted = None
    first = next((c for c in root if isinstance(c.tag, str) and c.tag.lower() == "cite"), None)
    if first is not None:
        formatted = _itertext(_find(first, "DisplayText"))
    return Citation("EndNote", tuple(cited), formatted)


def _tag(text: str, name: str) -> str | None:
    """The text between ``<name>`` and ``</name>`` (the first), None without the pair."""
    start = text.find(f"<{name}>")
    end = text.find(f"</{name}>", start + 1) if start >= 0 else -1
    return text[start + len(name) + 2:end] if start >= 0 and end >= 0 else None


def _inflated(payload: str, what: str, most: int) -> bytes:
    """``payload`` decoded from base64 and, where zlib-compressed, inflated within
    ``most`` bytes."""
    raw = _base64(payload, what)
    if raw[:1] != b"x":  # no zlib header: the JSON itself
        return raw
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(raw, most)
    except zlib.error as err:
        raise Unreadable(f"{what} cannot be inflated ({err})") from None
    if inflater.unconsumed_tail:
        raise Unreadable(f"{what} inflates beyond {most} bytes")
    return out


def _paperpile_item(item: Mapping[str, Any], key: str) -> LibraryItem:
    authors = []
    people = item.get("author")
    for person in people if isinstance(people, list) else ():
        if isinstance(person, Mapping):
            name = csl._text(person.get("last")) or csl._text(person.get("collective")) or \
                csl._text(person.get("formatted"))
            if name:
                authors.append(name)
    published = item.get("published")
    year = csl._year_in(csl._text(published.get("year"))) if isinstance(published, Mapping) \
        else csl._year_in(csl._text(published))
    kind = csl._text(item.get("pubtype"))
    urls = item.get("url")  # Paperpile keeps a list of links
    url = csl._text(urls[0] if isinstance(urls, list) and urls else urls)
    return LibraryItem(
        key=key, title=csl._text(item.get("title")), authors=tuple(authors), year=year,
        doi=csl._doi(item.get("doi")), kind=kind.removeprefix("PP_").lower() if kind else None,
        origin="field", arxiv=csl._text(item.get("arxivid")), pmid=csl._text(item.get("pmid")),
        pmcid=csl._text(item.get("pmc")), isbn=csl._text(item.get("isbn")), url=url)


def _paperpile_citation(instruction: str, most_inflated: int) -> Citation:
    """Paperpile's ``ADDIN paperpile_citation``: the cited ids with their locators in
    ``<metadata>``, the items in ``<data>``. An item's key is its ``citekey`` (the key a
    BibTeX export of the library gives it), else its ``_id``."""
    payload = _tag(instruction, "data")
    items: dict[str, Mapping[str, Any]] = {}
    if payload is not None:
        raw = _inflated(payload, "the Paperpile field data", most_inflated)
        data = _json(raw.decode("utf-8", "replace"), "the Paperpile field data")
        for item in data if isinstance(data, list) else ():
            if isinstance(item, Mapping) and csl._text(item.get("_id")):
                items.setdefault(str(csl._text(item.get("_id"))), item)
    metadata = _tag(instruction, "metadata") or ""
    blocks = re.findall(r"<citation>(.*?)</citation>", metadata, re.DOTALL)
    if not blocks:  # no metadata: every item of the data, without locators
        blocks = [f"<id>{item_id}</id>" for item_id in items]
    cited: list[Cited] = []
    for block in blocks:
        item_id = (_tag(block, "id") or "").strip()
        if not item_id:
            continue
        data_item = items.get(item_id)
        key = (csl._text(data_item.get("citekey")) if data_item else None) or item_id
        item = _paperpile_item(data_item, key) if data_item is not None else None
        locator = clean_locator(_tag(block, "locator"))
        label = csl._text(_tag(block, "locator_label")) or "page"
        if locator and label != "page":
            locator = f"{label} {locator}"
        cited.append(Cited(key, item, locator, csl._text(_tag(block, "prefix"))))
    if not cited:
        raise Unreadable("the Paperpile field names no item")
    return Citation("Paperpile", tuple(cited), None)
