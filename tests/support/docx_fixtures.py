"""Real .docx files with the citation fields of Zotero, Mendeley, Citavi and EndNote.

python-docx is not a dependency, so the parts are written as XML: the minimum a Word
document needs ([Content_Types].xml, _rels/.rels, word/document.xml, its relationships,
word/styles.xml, word/footnotes.xml) zipped as Word zips them. The fields are complex
fields as the programs insert them: ``w:fldChar`` begin, the code split over several
``w:instrText`` runs, separate, the displayed result, end; Citavi's inside its content
control, EndNote's record as base64 in ``w:fldData`` with a nested ``EN.CITE.DATA``
field, or inline. Every builder is a pure function of its arguments, so a failure
reproduces.
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_DOCUMENT_HEAD = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    f'<w:document xmlns:w="{W}" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'mc:Ignorable="w14" xmlns:w14="http://schemas.microsoft.com/office/word/2010/wordml">'
    '<w:body>')
_DOCUMENT_TAIL = ('<w:sectPr><w:pgSz w:w="11906" w:h="16838"/>'
                  '<w:pgMar w:top="1417" w:right="1417" w:bottom="1134" w:left="1417"/>'
                  '</w:sectPr></w:body></w:document>')
_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.wordprocessingml.document.main+xml"/>'
    '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.wordprocessingml.styles+xml"/>'
    '<Override PartName="/word/footnotes.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.wordprocessingml.footnotes+xml"/>'
    '</Types>')
_PACKAGE_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="word/document.xml"/></Relationships>')
_DOCUMENT_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/styles" Target="styles.xml"/>'
    '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/footnotes" Target="footnotes.xml"/></Relationships>')
# German Word's ids for its headings ("Überschrift 1" loses its Ü), named as in English.
_STYLES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    f'<w:styles xmlns:w="{W}">'
    '<w:style w:type="paragraph" w:default="1" w:styleId="Standard"><w:name w:val="Normal"/></w:style>'
    '<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/>'
    '<w:basedOn w:val="Standard"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>'
    '<w:style w:type="paragraph" w:styleId="Kapitel"><w:name w:val="Kapitel"/>'
    '<w:basedOn w:val="berschrift1"/></w:style>'
    '<w:style w:type="paragraph" w:styleId="Funotentext"><w:name w:val="footnote text"/></w:style>'
    '<w:style w:type="character" w:styleId="Funotenzeichen"><w:name w:val="footnote reference"/></w:style>'
    '</w:styles>')
_NOTES_HEAD = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    f'<w:footnotes xmlns:w="{W}">'
    '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
    '<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/>'
    '</w:r></w:p></w:footnote>')


def run(text: str) -> str:
    """A run of plain text, its spaces kept."""
    return f'<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r>'


def paragraph(*runs: str, style: str | None = None) -> str:
    """A paragraph of the given runs; ``style`` is a paragraph style id."""
    properties = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{properties}{''.join(runs)}</w:p>"


def pieces(text: str, count: int) -> list[str]:
    """``text`` cut into ``count`` parts, as Word cuts a long field code into runs."""
    size = max(1, -(-len(text) // count))
    return [text[i:i + size] for i in range(0, len(text), size)]


def field(code: str, result: str, *, parts: int = 3, data: str | None = None,
          nested: str | None = None, nested_data: str | None = None) -> str:
    """A complex field: begin (with ``w:fldData``), the code over ``parts`` runs, a nested
    field (EndNote's ``EN.CITE.DATA``) if given, separate, the result, end."""
    begin_data = f'<w:fldData xml:space="preserve">{data}</w:fldData>' if data else ""
    xml = [f'<w:r><w:fldChar w:fldCharType="begin">{begin_data}</w:fldChar></w:r>']
    xml += [f'<w:r><w:instrText xml:space="preserve">{escape(p)}</w:instrText></w:r>'
            for p in pieces(code, parts)]
    if nested is not None:
        inner = f'<w:fldData xml:space="preserve">{nested_data}</w:fldData>' if nested_data else ""
        xml += [f'<w:r><w:fldChar w:fldCharType="begin">{inner}</w:fldChar></w:r>',
                f'<w:r><w:instrText xml:space="preserve">{escape(nested)}</w:instrText></w:r>',
                '<w:r><w:fldChar w:fldCharType="end"/></w:r>']
    xml += ['<w:r><w:fldChar w:fldCharType="separate"/></w:r>',
            f'<w:r><w:rPr><w:noProof/></w:rPr><w:t xml:space="preserve">{escape(result)}</w:t></w:r>',
            '<w:r><w:fldChar w:fldCharType="end"/></w:r>']
    return "".join(xml)


def simple_field(code: str, result: str) -> str:
    """A simple field (``w:fldSimple``), as Word writes cross-references and page numbers."""
    return f"<w:fldSimple w:instr={quoteattr(code)}>{run(result)}</w:fldSimple>"


def footnote_reference(note_id: int) -> str:
    return f'<w:r><w:rPr><w:rStyle w:val="Funotenzeichen"/></w:rPr><w:footnoteReference w:id="{note_id}"/></w:r>'


def footnote(note_id: int, *runs: str) -> str:
    """A footnote: Word's number mark, a space, then the runs."""
    return (f'<w:footnote w:id="{note_id}"><w:p><w:pPr><w:pStyle w:val="Funotentext"/></w:pPr>'
            '<w:r><w:rPr><w:rStyle w:val="Funotenzeichen"/></w:rPr><w:footnoteRef/></w:r>'
            f'{run(" ")}{"".join(runs)}</w:p></w:footnote>')


# --- the programs' field codes ----------------------------------------------------------

def csl_item(key: str, title: str, authors: Sequence[tuple[str, str]], year: int,
             doi: str | None = None, kind: str = "article-journal", item_id: Any = None) -> dict[str, Any]:
    """A CSL item as Zotero and Mendeley embed it (Zotero writes the year as a string)."""
    item: dict[str, Any] = {
        "id": item_id if item_id is not None else key, "type": kind, "title": title,
        "author": [{"family": family, "given": given} for family, given in authors],
        "issued": {"date-parts": [[str(year)]]}}
    if doi:
        item["DOI"] = doi
    return item


def zotero_code(items: Iterable[Mapping[str, Any]], formatted: str, *, note_index: int = 0) -> str:
    """``ADDIN ZOTERO_ITEM CSL_CITATION {json}``; each of ``items`` has ``key`` (the
    item key in its URI), ``data`` (the CSL item) and optionally locator, label, prefix."""
    cited = []
    for item in items:
        entry: dict[str, Any] = {
            "id": item["data"]["id"],
            "uris": [f"http://zotero.org/users/4711/items/{item['key']}"],
            "itemData": item["data"]}
        for name in ("locator", "label", "prefix"):
            if name in item:
                entry[name] = item[name]
        cited.append(entry)
    citation = {
        "citationID": "a1b2c3d4",
        "properties": {"formattedCitation": formatted, "plainCitation": formatted,
                       "noteIndex": note_index},
        "citationItems": cited,
        "schema": "https://github.com/citation-style-language/schema/raw/master/csl-citation.json"}
    return f" ADDIN ZOTERO_ITEM CSL_CITATION {json.dumps(citation, ensure_ascii=False)} "


def mendeley_code(items: Iterable[Mapping[str, Any]], formatted: str) -> str:
    """Mendeley Desktop's ``ADDIN CSL_CITATION {json}``; ``key`` is the document's uuid."""
    cited = []
    for number, item in enumerate(items, 1):
        entry: dict[str, Any] = {
            "id": f"ITEM-{number}", "itemData": {**item["data"], "id": f"ITEM-{number}"},
            "uris": [f"http://www.mendeley.com/documents/?uuid={item['key']}"]}
        for name in ("locator", "label", "prefix"):
            if name in item:
                entry[name] = item[name]
        cited.append(entry)
    citation = {
        "citationItems": cited,
        "mendeley": {"formattedCitation": formatted, "plainTextFormattedCitation": formatted,
                     "previouslyFormattedCitation": formatted},
        "properties": {"noteIndex": 0},
        "schema": "https://github.com/citation-style-language/schema/raw/master/csl-citation.json"}
    return f"ADDIN CSL_CITATION {json.dumps(citation)}"


def citavi_payload(entries: Sequence[Mapping[str, Any]], text: str) -> dict[str, Any]:
    """A Citavi WordPlaceholder as Json.NET writes it: ``$id`` on every object, and a
    person met twice written as ``{"$ref": ...}`` the second time."""
    counter = iter(range(1, 10_000))
    people: dict[tuple[str, str], str] = {}

    def person(last: str, first: str) -> dict[str, Any]:
        if (last, first) in people:
            return {"$ref": people[(last, first)]}
        ident = str(next(counter))
        people[(last, first)] = ident
        return {"$id": ident, "$type": "SwissAcademic.Citavi.Person, SwissAcademic.Citavi",
                "FirstName": first, "LastName": last, "Protected": False, "Sex": 0}

    placeholder: dict[str, Any] = {
        "$id": str(next(counter)),
        "$type": "SwissAcademic.Citavi.Citations.WordPlaceholder, SwissAcademic.Citavi",
        "AssociateWithPlaceholderTag": "CitaviPlaceholder#8b2c9c2e-6c1d-4a47-9a0e-2f1b8f2a1c11",
        "Entries": [], "Text": text, "WAIVersion": "6.19.2.1"}
    for entry in entries:
        reference: dict[str, Any] = {
            "$id": str(next(counter)), "$type": "SwissAcademic.Citavi.Reference, SwissAcademic.Citavi",
            "Id": entry["id"], "ReferenceType": entry.get("type", "Book"),
            "Title": entry["title"], "Year": str(entry["year"]),
            "Authors": [person(last, first) for last, first in entry["authors"]]}
        if "subtitle" in entry:
            reference["Subtitle"] = entry["subtitle"]
        if "doi" in entry:
            reference["Doi"] = entry["doi"]
        item: dict[str, Any] = {
            "$id": str(next(counter)),
            "$type": "SwissAcademic.Citavi.Citations.WordPlaceholderEntry, SwissAcademic.Citavi",
            "Id": f"entry-{entry['id']}", "ReferenceId": entry["id"], "Reference": reference,
            "UseNumberingTypeOfParentDocument": False}
        if "pages" in entry:
            start, end = entry["pages"]
            item["PageRange"] = (f"<sp><n>{start}</n><in>true</in><os>{start}</os><ps>{start}</ps></sp>"
                                 f"<ep><n>{end}</n><in>true</in><os>{end}</os><ps>{end}</ps></ep>"
                                 f"<os>{start}-{end}</os>" if end else
                                 f"<sp><n>{start}</n><in>true</in><os>{start}</os><ps>{start}</ps></sp>"
                                 f"<os>{start}</os>")
        if "prefix" in entry:
            item["Prefix"] = entry["prefix"]
        placeholder["Entries"].append(item)
    return placeholder


def citavi_field(payload: Mapping[str, Any], result: str, *, parts: int = 4) -> str:
    """Citavi's content control around ``ADDIN CitaviPlaceholder{base64}``."""
    encoded = base64.b64encode(json.dumps(payload, ensure_ascii=False).encode("utf-8")).decode()
    return ('<w:sdt><w:sdtPr><w:alias w:val="To edit, see citavi.com/edit"/>'
            '<w:tag w:val="CitaviPlaceholder#8b2c9c2e-6c1d-4a47-9a0e-2f1b8f2a1c11"/>'
            '<w:id w:val="-1181431061"/></w:sdtPr><w:sdtContent>'
            + field(f"ADDIN CitaviPlaceholder{{{encoded}}}", result, parts=parts)
            + "</w:sdtContent></w:sdt>")


def endnote_xml(cites: Sequence[Mapping[str, Any]]) -> str:
    """EndNote's ``<EndNote>`` citation XML, record fields wrapped in ``<style>``."""
    def styled(text: str) -> str:
        return f'<style face="normal" font="default" size="100%">{escape(text)}</style>'

    out = ["<EndNote>"]
    for cite in cites:
        authors = "".join(f"<author>{styled(a)}</author>" for a in cite["authors"])
        doi = (f"<electronic-resource-num>{styled(cite['doi'])}</electronic-resource-num>"
               if "doi" in cite else "")
        pages = f"<Pages>{escape(cite['pages'])}</Pages>" if "pages" in cite else ""
        prefix = f"<Prefix>{escape(cite['prefix'])}</Prefix>" if "prefix" in cite else ""
        out.append(
            f"<Cite><Author>{escape(cite['authors'][0].split(',')[0])}</Author>"
            f"<Year>{cite['year']}</Year><RecNum>{cite['recnum']}</RecNum>{prefix}{pages}"
            f"<DisplayText>{escape(cite.get('display', ''))}</DisplayText>"
            f"<record><rec-number>{cite['recnum']}</rec-number>"
            f'<foreign-keys><key app="EN" db-id="x9sdf0we">{cite["recnum"]}</key></foreign-keys>'
            f'<ref-type name="Journal Article">17</ref-type>'
            f"<contributors><authors>{authors}</authors></contributors>"
            f"<titles><title>{styled(cite['title'])}</title>"
            f"<secondary-title>{styled(cite.get('journal', 'Journal'))}</secondary-title></titles>"
            f"<dates><year>{styled(str(cite['year']))}</year></dates>{doi}</record></Cite>")
    out.append("</EndNote>")
    return "".join(out)


def endnote_field(cites: Sequence[Mapping[str, Any]], result: str, *, inline: bool = False) -> str:
    """An EndNote citation: the record base64 in ``w:fldData`` of ``ADDIN EN.CITE`` and
    of its nested ``ADDIN EN.CITE.DATA`` (EndNote's form for long records), or inline."""
    xml = endnote_xml(cites)
    if inline:
        return field(f" ADDIN EN.CITE {xml}", result, parts=5)
    data = base64.b64encode(xml.encode("utf-8")).decode()
    wrapped = "\n".join(data[i:i + 76] for i in range(0, len(data), 76))
    return field(" ADDIN EN.CITE ", result, parts=2, data=wrapped, nested=" ADDIN EN.CITE.DATA ",
                 nested_data=wrapped)


def paperpile_field(items: Sequence[Mapping[str, Any]], result: str, *,
                    metadata: Sequence[Mapping[str, str]] | None = None) -> str:
    """Paperpile's ``ADDIN paperpile_citation``: ``<clusterId>``, ``<metadata>`` naming each
    cited item's ``_id`` (with ``locator``, ``locator_label``, ``prefix``, ``no_author``
    where given), ``<data>`` the items as zlib-compressed JSON in base64."""
    import zlib

    blocks = metadata if metadata is not None else [{"id": item["_id"]} for item in items]
    meta = "".join("<citation>" + "".join(f"<{k}>{escape(v)}</{k}>" for k, v in block.items())
                   + "</citation>" for block in blocks)
    data = base64.b64encode(zlib.compress(json.dumps(list(items)).encode())).decode()
    code = (f"ADDIN paperpile_citation <clusterId>C267Q325M915J429</clusterId>"
            f"<metadata>{meta}</metadata><data>{data}</data> \\* MERGEFORMAT")
    return field(code, result, parts=6)


def paperpile_item(item_id: str, citekey: str, title: str, authors: Sequence[str], year: int,
                   doi: str | None = None) -> dict[str, Any]:
    """An item as Paperpile embeds it in its field data."""
    item: dict[str, Any] = {
        "_id": item_id, "citekey": citekey, "title": title, "pubtype": "PP_ARTICLE",
        "published": {"year": str(year)}, "owner": "73B4D5C6", "created": 1745847974.2,
        "author": [{"last": last, "first": "A", "formatted": f"{last} A"} for last in authors]}
    if doi:
        item["doi"] = doi
    return item


# --- the package ------------------------------------------------------------------------

def document_xml(body: str) -> str:
    return _DOCUMENT_HEAD + body + _DOCUMENT_TAIL


def footnotes_xml(notes: str) -> str:
    return _NOTES_HEAD + notes + "</w:footnotes>"


def docx(body: str, notes: str = "", *, document: str | None = None,
         stored: bool = False, extra: Mapping[str, bytes] | None = None) -> bytes:
    """A .docx: ``body`` (paragraph XML) in word/document.xml, ``notes`` (footnote XML) in
    word/footnotes.xml; ``document`` replaces the whole document part (hostile input);
    ``stored`` zips without compression, so a huge part is not taken for a zip bomb."""
    parts: dict[str, bytes] = {
        "[Content_Types].xml": _CONTENT_TYPES.encode(),
        "_rels/.rels": _PACKAGE_RELS.encode(),
        "word/document.xml": (document if document is not None else document_xml(body)).encode(),
        "word/_rels/document.xml.rels": _DOCUMENT_RELS.encode(),
        "word/styles.xml": _STYLES.encode(),
        "word/footnotes.xml": footnotes_xml(notes).encode(),
        **(extra or {}),
    }
    buffer = io.BytesIO()
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# --- the thesis the tests read ------------------------------------------------------------

SMITH = csl_item("smith", "Urban heat islands at night", [("Smith", "Anna"), ("Lee", "Ben")], 2020,
                 doi="10.1016/j.uclim.2020.100645", item_id=1201)
JONES = csl_item("jones", "Street trees and the air below them", [("Jones", "Carl")], 2019,
                 doi="10.1007/s00484-019-01711-5")
MUELLER: dict[str, Any] = {"id": "0a6d1c3e-1111-4b9e-9d3c-5e2c0b1f7a01", "title": "Gründächer in der Stadt",
           "subtitle": "Messungen an 40 Gebäuden", "year": 2018,
           "authors": [("Müller", "Jana"), ("Schmidt", "Uwe")], "doi": "10.5194/gruen-2018-12",
           "pages": (12, 14)}
SCHMIDT: dict[str, Any] = {"id": "0a6d1c3e-2222-4b9e-9d3c-5e2c0b1f7a02", "title": "Dachbegrünung", "year": 2017,
           "authors": [("Schmidt", "Uwe")]}
KELLER: dict[str, Any] = {"id": "0a6d1c3e-3333-4b9e-9d3c-5e2c0b1f7a03", "title": "Water bodies and urban climate",
          "year": 2015, "authors": [("Keller", "Eva")], "type": "JournalArticle"}
BROWN: dict[str, Any] = {"recnum": "37", "authors": ["Brown, David", "Miller, Fay"], "year": 2016,
         "title": "Cool roofs reflect sunlight", "doi": "10.1016/j.enbuild.2016.03.012",
         "pages": "7", "display": "(Brown et al., 2016, p. 7)"}
GREEN: dict[str, Any] = {"recnum": "52", "authors": ["Green, Gale"], "year": 2014,
         "title": "Parks as cool islands", "display": "(Green, 2014)"}
VOGEL: dict[str, Any] = {"id": "0a6d1c3e-4444-4b9e-9d3c-5e2c0b1f7a04", "title": "Fassaden und Wärme", "year": 2012,
         "authors": [("Vogel", "Ida")], "pages": (88, None), "prefix": "Vgl."}


def thesis_docx() -> bytes:
    """A short thesis citing with all four programs, in the body and in two footnotes."""
    body = "".join([
        paragraph(run("1 Einleitung"), style="berschrift1"),
        paragraph(
            run("Urban heat islands raise night temperatures by up to four kelvin "),
            field(zotero_code([{"key": "ABCD2345", "data": SMITH, "locator": "45", "label": "page"}],
                              "(Smith & Lee, 2020, p. 45)"), "(Smith & Lee, 2020, p. 45)", parts=4),
            run(". Street trees cool the air below their crowns "),
            field(mendeley_code([{"key": "5f0c8e52-7d2b-3c4e-8a1f-0b9d6e4c2a17", "data": JONES,
                                  "locator": "3", "label": "chapter"}], "(Jones, 2019, chap. 3)"),
                  "(Jones, 2019, chap. 3)", parts=3),
            run(".")),
        paragraph(
            run("Green roofs lower the surface temperature of buildings "),
            citavi_field(citavi_payload([MUELLER, SCHMIDT], "(Müller und Schmidt 2018, S. 12–14; Schmidt 2017)"),
                         "(Müller und Schmidt 2018, S. 12–14; Schmidt 2017)"),
            run(". Cool roofs reflect most of the sunlight "),
            endnote_field([BROWN], "(Brown et al., 2016, p. 7)"),
            run(".")),
        paragraph(run("2 Ergebnisse"), style="Kapitel"),
        paragraph(
            citavi_field(citavi_payload([KELLER], "Keller (2015)"), "Keller (2015)"),
            run(" showed that water bodies cool their surroundings. Parks form cool islands in the city "),
            endnote_field([GREEN], "(Green, 2014)", inline=True),
            run(".")),
        paragraph(
            run("As "), simple_field(" REF _Ref51234 \\h ", "Table 1"),
            run(" shows, ventilation corridors carry cool air into the centre."),
            footnote_reference(1),
            run(" Facade materials store heat during the day."),
            footnote_reference(2)),
        paragraph(run("Literatur"), style="berschrift1"),
        "<w:p>" + '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText xml:space="preserve"> ADDIN ZOTERO_BIBL {"uncited":[],"omitted":[],'
        '"custom":[]} CSL_BIBLIOGRAPHY </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        + run("Smith, A., & Lee, B. (2020). Urban heat islands at night.") + "</w:p>"
        + "<w:p>" + run("Jones, C. (2019). Street trees and the air below them.")
        + '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>',
    ])
    notes = "".join([
        footnote(1, field(zotero_code([{"key": "ABCD2345", "data": SMITH, "locator": "12-13",
                                        "label": "page", "prefix": "see"}],
                                      "See Smith and Lee, Urban heat islands at night, 12–13.", note_index=1),
                          "See Smith and Lee, Urban heat islands at night, 12–13.", parts=5)),
        footnote(2, citavi_field(citavi_payload([VOGEL], "Vgl. Vogel 2012, S. 88."), "Vgl. Vogel 2012, S. 88.")),
    ])
    return docx(body, notes)


def plain_docx() -> bytes:
    """A thesis whose citations are typed text: no fields at all."""
    return docx("".join([
        paragraph(run("1 Introduction"), style="berschrift1"),
        paragraph(run("Urban heat islands raise night temperatures (Smith & Lee, 2020, p. 45).")),
        paragraph(run("Street trees cool the air below their crowns [2]."), footnote_reference(1)),
    ]), footnote(1, run("Vgl. Jones 2019, S. 3.")))
