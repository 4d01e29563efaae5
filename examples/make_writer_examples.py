"""Write the demo thesis as its writer keeps it: a LaTeX thesis with its BibLaTeX library
and a Word thesis with Zotero's citation fields, both citing the demo's source PDFs.

Run ``python -m examples.make_writer_examples`` from the repository root; it rewrites
``examples/latex/`` (``main.tex``, an ``\\input`` preamble, two chapters, ``refs.bib``) and
``examples/word/thesis.docx``. The output is byte-for-byte reproducible (the zip's
members in a fixed order with a fixed date), so a re-run leaves ``git status`` clean.

The claims are those of ``thesis.pdf`` (``examples/make_examples.py``), so the verdicts
``expected.json`` gives for them hold here too. Each thesis cites, on purpose:

- four sources whose PDFs are in ``examples/sources`` (the .bib's ``file`` fields name
  them as JabRef writes a relative link; Zotero's fields carry each item's metadata),
  one citation with a page locator;
- Keller (2017), whose PDF is not there: the report lists it among the sources to add.

The .bib is BibLaTeX as Zotero's Better BibTeX exports it (``date``, ``journaltitle``,
``langid``, double braces to keep capitals); the .docx holds what Word and Zotero write
(the field code ``ADDIN ZOTERO_ITEM CSL_CITATION {json}`` over several runs, the shown
citation, the bibliography field, the document's title in its core properties).
"""

from __future__ import annotations

import json
import pathlib
import zipfile
from typing import Any
from xml.sax.saxutils import escape

from examples.make_examples import (
    C_ADMISSIONS, C_BILLS, C_CANOPY, C_CANOPY_WRONG, C_NIGHT, C_PEAK, C_ROOFS, C_STORMWATER,
    C_UNEVEN, C_WIND, THESIS_AUTHOR, THESIS_TITLE,
)

HERE = pathlib.Path(__file__).resolve().parent

# --- the library ------------------------------------------------------------------------

ITEMS: dict[str, dict[str, Any]] = {
    "alvarez2019": {
        "type": "article-journal", "bibtype": "article", "file": "alvarez2019.pdf",
        "title": "Nocturnal Heat in Dense Urban Cores: A Two-Year Sensor Study in Seville",
        "author": [("Alvarez", "Maria"), ("Becker", "Thomas")], "year": 2019,
        "journal": "Urban Climate Letters", "volume": "7", "issue": "2", "pages": "45--58"},
    "wei2018": {
        "type": "article-journal", "bibtype": "article", "file": "wei2018.pdf",
        "title": "Heat Waves and Emergency Hospital Admissions among Older Adults",
        "author": [("Wei", "Li"), ("Mitchell", "Sarah")], "year": 2018,
        "journal": "Public Health and Climate", "volume": "3", "issue": "3", "pages": "210--222"},
    "lindqvist2021": {
        "type": "article-journal", "bibtype": "article", "file": "lindqvist2021.pdf",
        "title": "Street Trees and Surface Temperature: Evidence from Twelve European Cities",
        "author": [("Lindqvist", "Hannah"), ("Haddad", "Omar"), ("Novak", "Petra")], "year": 2021,
        "journal": "Landscape and Urban Climate", "volume": "15", "pages": "112--130"},
    "okafor2020": {
        "type": "article-journal", "bibtype": "article", "file": "okafor2020.pdf",
        "title": "Cool Roofs and Indoor Heat Exposure in Social Housing",
        "author": [("Okafor", "Joy")], "year": 2020,
        "journal": "Energy and Buildings Review", "volume": "9", "issue": "1", "pages": "1--14"},
    "keller2017": {
        "type": "article-journal", "bibtype": "article", "file": None,
        "title": "Urban Form and Wind Ventilation in Compact Cities",
        "author": [("Keller", "Rosa")], "year": 2017,
        "journal": "Journal of Building Physics", "volume": "12", "issue": "4", "pages": "301--319"},
}


# Better BibTeX keeps a proper name's capitals in double braces.
_PROPER = ("Seville", "European")


def _bib_title(title: str) -> str:
    for name in _PROPER:
        title = title.replace(name, f"{{{{{name}}}}}")
    return title


def bib() -> str:
    entries = []
    for key, item in ITEMS.items():
        authors = " and ".join(f"{family}, {given}" for family, given in item["author"])
        fields = [("title", _bib_title(str(item["title"]))), ("author", authors),
                  ("date", str(item["year"])), ("journaltitle", str(item["journal"])),
                  ("volume", str(item["volume"]))]
        if item.get("issue"):
            fields.append(("number", str(item["issue"])))
        fields += [("pages", str(item["pages"])), ("langid", "english")]
        if item["file"]:
            # JabRef's link relative to the .bib: description, path, type.
            fields.append(("file", f":../sources/{item['file']}:PDF"))
        body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
        entries.append(f"@{item['bibtype']}{{{key},\n{body}\n}}\n")
    return "\n".join(entries)


# --- the LaTeX thesis ---------------------------------------------------------------------

MAIN = r"""% !TEX program = lualatex
\input{preamble}

\begin{document}
\maketitle

\input{chapters/heat}
\input{chapters/measures}

\printbibliography
\end{document}
"""

PREAMBLE = rf"""\documentclass[
  a4paper,
  12pt,
  headings=small,
]{{scrreprt}}
\usepackage[english]{{babel}}
\usepackage{{csquotes}}
\usepackage[style=authoryear, backend=biber]{{biblatex}}
\addbibresource{{refs.bib}}

\title{{{THESIS_TITLE}}}
\author{{{THESIS_AUTHOR}}}
\date{{2024}}
"""

HEAT = rf"""\chapter{{Heat and health}}

Cities are warmer than their rural surroundings, a phenomenon known as the urban heat
island. In dense city centres the heat island is {C_NIGHT}, when the difference to the
rural surroundings can exceed 6~°C \parencite[1]{{alvarez2019}}. Heat exposure in cities is
uneven: it is {C_UNEVEN} \parencite{{alvarez2019,wei2018}}.

The health burden of heat falls mostly on older people. \Textcite{{wei2018}} showed that
emergency hospital admissions of people aged 75 and over {C_ADMISSIONS} by which the
daily maximum exceeded 30~°C. Admissions {C_PEAK}, which gives health services a short
warning time \parencite{{wei2018}}.
"""

MEASURES = rf"""\chapter{{Trees and roofs}}

Trees cool streets by shading and by transpiration. \Textcite{{lindqvist2021}} estimate
that every ten additional percentage points of tree canopy lower the afternoon surface
temperature of a neighbourhood by {C_CANOPY}. Yet a dense canopy also traps heat, so that
neighbourhoods with more tree cover {C_CANOPY_WRONG} \parencite{{lindqvist2021}}.

Reflective white roofs {C_ROOFS} during heat waves than dark roofs did
\parencite{{okafor2020}}. Green roofs additionally {C_STORMWATER} runoff
\parencite{{okafor2020}}. White roofs lowered indoor temperatures and {C_BILLS} of the
households \parencite{{okafor2020}}.

Roofs are only part of the picture. Compact street grids also {C_WIND} heat out of the
city centre \parencite{{keller2017}}, so roof and street measures should be planned
together.
"""

# --- the Word thesis ------------------------------------------------------------------------

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_ZOTERO_USER = "http://zotero.org/users/4711/items/"
_ZOTERO_KEYS = {"alvarez2019": "QX7B2KTA", "wei2018": "8NM3ZC4D", "lindqvist2021": "HV6T9WRE",
                "okafor2020": "T2KD8PLM", "keller2017": "C4FJ7QAB"}


def _csl(key: str) -> dict[str, object]:
    item = ITEMS[key]
    data: dict[str, object] = {
        "id": 1001 + list(ITEMS).index(key), "type": item["type"], "title": item["title"],
        "container-title": item["journal"], "volume": item["volume"],
        "page": str(item["pages"]).replace("--", "-"),
        "author": [{"family": f, "given": g} for f, g in item["author"]],
        "issued": {"date-parts": [[str(item["year"])]]}}
    if item.get("issue"):
        data["issue"] = item["issue"]
    return data


def _run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r>'


def _zotero(keys: list[str], shown: str, number: int, locator: str | None = None) -> str:
    """A Zotero citation field as Zotero writes it: begin, the code cut over runs,
    separate, the citation as shown, end."""
    cited = []
    for key in keys:
        entry: dict[str, object] = {"id": _csl(key)["id"], "uris": [_ZOTERO_USER + _ZOTERO_KEYS[key]],
                                    "itemData": _csl(key)}
        if locator:
            entry.update(locator=locator, label="page")
        cited.append(entry)
    citation = {"citationID": f"demo{number:04d}",
                "properties": {"formattedCitation": shown, "plainCitation": shown, "noteIndex": 0},
                "citationItems": cited,
                "schema": "https://github.com/citation-style-language/schema/raw/master/csl-citation.json"}
    code = f" ADDIN ZOTERO_ITEM CSL_CITATION {json.dumps(citation, ensure_ascii=False)} "
    size = -(-len(code) // 3)
    parts = "".join(f'<w:r><w:instrText xml:space="preserve">{escape(code[i:i + size])}</w:instrText></w:r>'
                    for i in range(0, len(code), size))
    return ('<w:r><w:fldChar w:fldCharType="begin"/></w:r>' + parts
            + '<w:r><w:fldChar w:fldCharType="separate"/></w:r>' + _run(shown)
            + '<w:r><w:fldChar w:fldCharType="end"/></w:r>')


def _paragraph(*runs: str, style: str | None = None) -> str:
    properties = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{properties}{''.join(runs)}</w:p>"


def _word_body() -> str:
    n = iter(range(1, 100))
    return "".join([
        _paragraph(_run(THESIS_TITLE), style="Title"),
        _paragraph(_run("1 Heat and health"), style="Heading1"),
        _paragraph(
            _run("Cities are warmer than their rural surroundings, a phenomenon known as the urban "
                 f"heat island. In dense city centres the heat island is {C_NIGHT}, when the "
                 "difference to the rural surroundings can exceed 6 °C "),
            _zotero(["alvarez2019"], "(Alvarez & Becker, 2019, p. 1)", next(n), "1"),
            _run(f". Heat exposure in cities is uneven: it is {C_UNEVEN} "),
            _zotero(["alvarez2019", "wei2018"], "(Alvarez & Becker, 2019; Wei & Mitchell, 2018)", next(n)),
            _run(".")),
        _paragraph(
            _run("The health burden of heat falls mostly on older people. Emergency hospital "
                 f"admissions of people aged 75 and over {C_ADMISSIONS} by which the daily maximum "
                 "exceeded 30 °C "),
            _zotero(["wei2018"], "(Wei & Mitchell, 2018)", next(n)),
            _run(f". Admissions {C_PEAK}, which gives health services a short warning time "),
            _zotero(["wei2018"], "(Wei & Mitchell, 2018)", next(n)), _run(".")),
        _paragraph(_run("2 Trees and roofs"), style="Heading1"),
        _paragraph(
            _run("Every ten additional percentage points of tree canopy lower the afternoon surface "
                 f"temperature of a neighbourhood by {C_CANOPY} "),
            _zotero(["lindqvist2021"], "(Lindqvist et al., 2021)", next(n)),
            _run(". Yet a dense canopy also traps heat, so that neighbourhoods with more tree cover "
                 f"{C_CANOPY_WRONG} "),
            _zotero(["lindqvist2021"], "(Lindqvist et al., 2021)", next(n)), _run(".")),
        _paragraph(
            _run(f"Reflective white roofs {C_ROOFS} during heat waves than dark roofs did "),
            _zotero(["okafor2020"], "(Okafor, 2020)", next(n)),
            _run(f". Green roofs additionally {C_STORMWATER} runoff "),
            _zotero(["okafor2020"], "(Okafor, 2020)", next(n)),
            _run(f". White roofs lowered indoor temperatures and {C_BILLS} of the households "),
            _zotero(["okafor2020"], "(Okafor, 2020)", next(n)), _run(".")),
        _paragraph(
            _run(f"Roofs are only part of the picture. Compact street grids also {C_WIND} heat out "
                 "of the city centre "),
            _zotero(["keller2017"], "(Keller, 2017)", next(n)),
            _run(", so roof and street measures should be planned together.")),
        _paragraph(_run("References"), style="Heading1"),
        _paragraph('<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
                   '<w:r><w:instrText xml:space="preserve"> ADDIN ZOTERO_BIBL {"uncited":[],'
                   '"omitted":[],"custom":[]} CSL_BIBLIOGRAPHY </w:instrText></w:r>'
                   '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
                   + _run("Alvarez, M., & Becker, T. (2019). Nocturnal heat in dense urban cores.")
                   + '<w:r><w:fldChar w:fldCharType="end"/></w:r>'),
    ])


_PARTS = {
    "[Content_Types].xml":
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
        'officedocument.wordprocessingml.document.main+xml"/>'
        '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-'
        'officedocument.wordprocessingml.styles+xml"/>'
        '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-'
        'package.core-properties+xml"/></Types>',
    "_rels/.rels":
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/officeDocument" Target="word/document.xml"/>'
        '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/'
        'relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>',
    "word/_rels/document.xml.rels":
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/styles" Target="styles.xml"/></Relationships>',
    "word/styles.xml":
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<w:styles xmlns:w="{W}">'
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/>'
        '<w:basedOn w:val="Normal"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/>'
        '<w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>'
        '</w:styles>',
    "docProps/core.xml":
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/'
        'core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        f"<dc:title>{escape(THESIS_TITLE)}</dc:title><dc:creator>{escape(THESIS_AUTHOR)}</dc:creator>"
        '<dcterms:created xsi:type="dcterms:W3CDTF">2024-05-02T09:00:00Z</dcterms:created>'
        "</cp:coreProperties>",
}


def docx() -> bytes:
    parts = dict(_PARTS)
    parts["word/document.xml"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<w:document xmlns:w="{W}"><w:body>{_word_body()}'
        '<w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr></w:body></w:document>')
    path = HERE / "word" / "thesis.docx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(parts, key=lambda p: (p != "[Content_Types].xml", p)):
            info = zipfile.ZipInfo(name, date_time=(2024, 5, 2, 9, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, parts[name].encode("utf-8"))
    return path.read_bytes()


def main() -> None:
    files = {"latex/main.tex": MAIN, "latex/preamble.tex": PREAMBLE,
             "latex/chapters/heat.tex": HEAT, "latex/chapters/measures.tex": MEASURES,
             "latex/refs.bib": bib()}
    for name, text in files.items():
        path = HERE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (HERE / "word").mkdir(exist_ok=True)
    docx()


if __name__ == "__main__":
    main()
