"""Word theses with reference-manager fields (issue 24): citations, claims, items, limits.

The documents are real .docx files (:mod:`tests.support.docx_fixtures`) with the fields
of Zotero, Mendeley, Citavi and EndNote, read back by :func:`read_docx`; the hostile ones
must fail with a :class:`WriterFileError` in bounded time and memory, or, for one bad
field, leave the rest of the document read and say what was skipped.
"""

from __future__ import annotations

import base64
import io
import json
import os
import time
import tracemalloc
import zipfile

import pytest

from citerun.pipeline.writer import csl
from citerun.pipeline.writer.docx import read_docx
from citerun.pipeline.writer.limits import DocxLimits
from citerun.pipeline.writer.model import (
    LibraryLimits, WriterFileError, WrittenThesis, to_extraction,
)
from tests.support import docx_fixtures as fx

MAX_DEPTH = DocxLimits().max_depth
MAX_OPEN_FIELDS = DocxLimits().max_open_fields
SMITH, JONES = "ABCD2345", "5f0c8e52-7d2b-3c4e-8a1f-0b9d6e4c2a17"
MUELLER, SCHMIDT, KELLER, VOGEL = (fx.MUELLER["id"], fx.SCHMIDT["id"], fx.KELLER["id"],
                                   fx.VOGEL["id"])


@pytest.fixture(scope="module")
def thesis() -> WrittenThesis:
    return read_docx(fx.thesis_docx())


def test_every_citation_is_found_with_key_locator_place_and_claim(thesis: WrittenThesis) -> None:
    found = [(c.keys, c.locator, c.where, c.in_footnote, c.claim) for c in thesis.citations]
    assert found == [
        ((SMITH,), "45", "paragraph 2", False,
         "Urban heat islands raise night temperatures by up to four kelvin."),
        ((JONES,), "chapter 3", "paragraph 2", False, "Street trees cool the air below their crowns."),
        ((MUELLER,), "12-14", "paragraph 3", False, "Green roofs lower the surface temperature of buildings."),
        ((SCHMIDT,), None, "paragraph 3", False, "Green roofs lower the surface temperature of buildings."),
        (("37",), "7", "paragraph 3", False, "Cool roofs reflect most of the sunlight."),
        ((KELLER,), None, "paragraph 5", False, "Keller showed that water bodies cool their surroundings."),
        (("52",), None, "paragraph 5", False, "Parks form cool islands in the city."),
        ((SMITH,), "12-13", "footnote 1", True,
         "As Table 1 shows, ventilation corridors carry cool air into the centre."),
        ((VOGEL,), "88", "footnote 2", True, "Facade materials store heat during the day."),
    ]
    assert thesis.skipped == ()
    assert thesis.format == "docx"


def test_markers_and_prenotes_are_as_displayed(thesis: WrittenThesis) -> None:
    by_where = {(c.where, c.keys): c for c in thesis.citations}
    assert by_where[("paragraph 2", (SMITH,))].marker == "(Smith & Lee, 2020, p. 45)"
    assert by_where[("paragraph 3", ("37",))].marker == "(Brown et al., 2016, p. 7)"
    assert by_where[("footnote 1", (SMITH,))].prenote == "see"
    assert by_where[("footnote 2", (VOGEL,))].prenote == "Vgl."
    assert by_where[("footnote 2", (VOGEL,))].marker == "Vgl. Vogel 2012, S. 88."


def test_library_items_come_from_the_fields_once_per_key(thesis: WrittenThesis) -> None:
    items = {item.key: item for item in thesis.library}
    assert len(items) == len(thesis.library) == 8  # Smith is cited twice, kept once
    assert all(item.origin == "field" for item in thesis.library)
    smith = items[SMITH]
    assert (smith.title, smith.authors, smith.year, smith.doi) == (
        "Urban heat islands at night", ("Smith", "Lee"), 2020, "10.1016/j.uclim.2020.100645")
    jones = items[JONES]
    assert (jones.authors, jones.year, jones.doi) == (("Jones",), 2019, "10.1007/s00484-019-01711-5")
    mueller = items[MUELLER]  # Citavi: subtitle joined, the second author a Json.NET $ref
    assert (mueller.title, mueller.authors, mueller.year, mueller.doi) == (
        "Gründächer in der Stadt: Messungen an 40 Gebäuden", ("Müller", "Schmidt"), 2018,
        "10.5194/gruen-2018-12")
    assert items[SCHMIDT].authors == ("Schmidt",)
    brown = items["37"]  # EndNote, from the base64 record data
    assert (brown.title, brown.authors, brown.year, brown.doi, brown.kind) == (
        "Cool roofs reflect sunlight", ("Brown", "Miller"), 2016, "10.1016/j.enbuild.2016.03.012",
        "Journal Article")
    assert (items["52"].title, items["52"].year) == ("Parks as cool islands", 2014)


def test_claims_hold_no_marker_no_heading_and_no_field_code(thesis: WrittenThesis) -> None:
    for citation in thesis.citations:
        assert "(" not in citation.claim and "[" not in citation.claim, citation
        assert not any(word in citation.claim for word in ("Einleitung", "Ergebnisse", "Literatur"))
        assert citation.claim.endswith(".") and "  " not in citation.claim


def test_pages_are_the_text_as_displayed(thesis: WrittenThesis) -> None:
    ((page, text),) = thesis.pages
    assert page == 1
    assert "four kelvin (Smith & Lee, 2020, p. 45). Street trees" in text
    assert "As Table 1 shows" in text  # a cross-reference field keeps its result
    assert "Jones, C. (2019). Street trees and the air below them." in text  # the bibliography field
    assert "2 Vgl. Vogel 2012, S. 88." in text  # footnotes after the body, numbered
    for code in ("ADDIN", "CSL_CITATION", "EndNote", "<", "REF _Ref"):
        assert code not in text
    assert text.startswith("1 Einleitung\n\nUrban heat")


def test_to_extraction_maps_by_key(thesis: WrittenThesis) -> None:
    extraction = to_extraction(thesis)
    labels = {entry.label for entry in extraction.references}
    assert {c.key for c in extraction.citations} <= labels
    assert len(extraction.citations) == 9
    first = extraction.citations[0]
    assert (first.key, first.locator, first.marker) == (SMITH, "45", "(Smith & Lee, 2020, p. 45)")
    smith = next(e for e in extraction.references if e.label == SMITH)
    assert (smith.authors, smith.year, smith.doi) == (("Smith", "Lee"), 2020, "10.1016/j.uclim.2020.100645")


def test_a_document_without_fields_gives_its_text_only() -> None:
    plain = read_docx(fx.plain_docx())
    assert plain.citations == () and plain.library == () and plain.skipped == ()
    text = plain.pages[0][1]
    assert "raise night temperatures (Smith & Lee, 2020, p. 45)." in text
    assert "1 Vgl. Jones 2019, S. 3." in text


def _smith(**extra: object) -> dict[str, object]:
    return {"key": SMITH, "data": fx.SMITH, **extra}


def _jones(**extra: object) -> dict[str, object]:
    return {"key": "JONES001", "data": fx.JONES, **extra}


def test_items_of_one_field_share_a_citation_only_with_the_same_locator() -> None:
    body = fx.paragraph(
        fx.run("Cities are warmer at night "),
        fx.field(fx.zotero_code([_smith(), _jones()], "(Smith & Lee, 2020; Jones, 2019)"),
                 "(Smith & Lee, 2020; Jones, 2019)"),
        fx.run(". Trees help "),
        fx.field(fx.zotero_code([_smith(locator="4", label="page"),
                                 _jones(locator="12", label="paragraph")], "(Smith & Lee, 2020, p. 4; Jones, 2019, para. 12)"),
                 "(Smith & Lee, 2020, p. 4; Jones, 2019, para. 12)"),
        fx.run("."))
    thesis = read_docx(fx.docx(body))
    assert [(c.keys, c.locator, c.claim) for c in thesis.citations] == [
        ((SMITH, "JONES001"), None, "Cities are warmer at night."),
        ((SMITH,), "4", "Trees help."),
        (("JONES001",), "paragraph 12", "Trees help."),
    ]


def test_mendeley_cite_content_control_is_read() -> None:
    citation = {"citationID": "MENDELEY_CITATION_0c1d", "properties": {"noteIndex": 0},
                "isEdited": False, "manualOverride": {"isManuallyOverridden": False},
                "citationItems": [{"id": "6e3f", "itemData": {**fx.JONES, "id": "6e3f"},
                                   "isTemporary": False, "locator": "7", "label": "page"}]}
    tag = "MENDELEY_CITATION_v3_" + base64.b64encode(json.dumps(citation).encode()).decode()
    body = fx.paragraph(fx.run("Trees shade streets "),
                        f'<w:sdt><w:sdtPr><w:tag w:val="{tag}"/><w:id w:val="1"/></w:sdtPr>'
                        f'<w:sdtContent>{fx.run("(Jones, 2019, p. 7)")}</w:sdtContent></w:sdt>',
                        fx.run("."))
    (found,) = read_docx(fx.docx(body)).citations
    assert (found.keys, found.locator, found.marker, found.claim) == (
        ("6e3f",), "7", "(Jones, 2019, p. 7)", "Trees shade streets.")


def test_a_citation_in_a_heading_is_skipped_with_its_reason() -> None:
    body = fx.paragraph(fx.run("2.1 Urban heat "),
                        fx.field(fx.zotero_code([_smith()], "(Smith & Lee, 2020)"), "(Smith & Lee, 2020)"),
                        style="berschrift1")
    thesis = read_docx(fx.docx(body + fx.paragraph(fx.run("Cities are warm."))))
    assert thesis.citations == ()
    assert [(s.where, s.text) for s in thesis.skipped] == [("paragraph 1", "(Smith & Lee, 2020)")]
    assert "heading" in thesis.skipped[0].reason
    assert [item.key for item in thesis.library] == [SMITH]


def test_a_footnote_no_mark_points_at_claims_its_own_sentence() -> None:
    note = fx.footnote(7, fx.run("Wind matters most "),
                       fx.field(fx.zotero_code([_smith()], "(Smith & Lee, 2020)"), "(Smith & Lee, 2020)"),
                       fx.run("."))
    (found,) = read_docx(fx.docx(fx.paragraph(fx.run("No marks here.")), note)).citations
    assert (found.claim, found.where, found.in_footnote) == (
        "Wind matters most.", "footnote id 7 (not referenced)", True)


@pytest.mark.parametrize(("code", "reason"), [
    (" ADDIN ZOTERO_ITEM CSL_CITATION {\"citationItems\": [ ", "not valid JSON"),
    (" ADDIN ZOTERO_ITEM CSL_CITATION {\"x\": " + "[" * 100_000 + "]" * 100_000 + "}", "not valid JSON"),
    (" ADDIN CSL_CITATION {\"citationItems\": []}", "names no item"),
    ("ADDIN CitaviPlaceholder{@@not base64@@}", "not valid base64"),
    ("ADDIN CitaviPlaceholder{" + base64.b64encode(b"[1, 2]").decode() + "}", "no Entries"),
    (" ADDIN EN.CITE <!DOCTYPE EndNote [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;\">]>"
     "<EndNote><Cite><RecNum>&b;</RecNum></Cite></EndNote>", "DTDs and entities are not read"),
    (" ADDIN EN.CITE " + "<EndNote>" + "<a>" * (MAX_DEPTH + 5) + "</a>" * (MAX_DEPTH + 5) + "</EndNote>",
     "nested deeper"),
    (" ADDIN EN.CITE ", "no <EndNote> record"),
])
def test_an_unreadable_field_is_skipped_and_the_rest_is_read(code: str, reason: str) -> None:
    body = fx.paragraph(
        fx.run("Cities are warm "), fx.field(code, "(Broken, 2000)"), fx.run(". Trees cool "),
        fx.field(fx.zotero_code([_smith()], "(Smith & Lee, 2020)"), "(Smith & Lee, 2020)"), fx.run("."))
    thesis = read_docx(fx.docx(body))
    assert [(c.keys, c.claim) for c in thesis.citations] == [((SMITH,), "Trees cool.")]
    (skipped,) = thesis.skipped
    assert (skipped.where, skipped.text) == ("paragraph 1", "(Broken, 2000)")
    assert reason in skipped.reason


# --- hostile documents ------------------------------------------------------------------

_DOCUMENT_OPEN = f'<w:document xmlns:w="{fx.W}"><w:body>'
_DOCUMENT_CLOSE = "</w:body></w:document>"


def _refused(data: bytes, message: str, *, seconds: float = 5.0, megabytes: float = 64.0,
             limits: DocxLimits = DocxLimits()) -> None:
    """``data`` is refused naming ``message``, within the time and the Python memory given
    (timed in one run, memory traced in another: tracing slows every allocation)."""
    started = time.perf_counter()
    with pytest.raises(WriterFileError, match=message):
        read_docx(data, docx_limits=limits)
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    try:
        with pytest.raises(WriterFileError, match=message):
            read_docx(data, docx_limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < seconds, f"refused after {elapsed:.1f} s"
    assert peak < megabytes * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_entity_expansion_is_refused() -> None:
    entities = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{n} "{("&lol%s;" % (n - 1 if n > 1 else "")) * 10}">' for n in range(1, 10))
    document = (f'<?xml version="1.0"?><!DOCTYPE w:document [{entities}]>'
                f"{_DOCUMENT_OPEN}<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p>{_DOCUMENT_CLOSE}")
    _refused(fx.docx("", document=document), "DTDs and entities are not read", seconds=2, megabytes=16)


def test_an_external_entity_is_not_read() -> None:
    document = ('<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
                f"{_DOCUMENT_OPEN}<w:p><w:r><w:t>&xxe;</w:t></w:r></w:p>{_DOCUMENT_CLOSE}")
    with pytest.raises(WriterFileError, match="DTDs and entities are not read") as refused:
        read_docx(fx.docx("", document=document))
    assert "root:" not in str(refused.value)


def test_an_external_entity_in_the_footnotes_is_not_read() -> None:
    notes = ('<?xml version="1.0"?><!DOCTYPE w:footnotes [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
             f'<w:footnotes xmlns:w="{fx.W}"><w:footnote w:id="1"><w:p><w:r><w:t>&xxe;</w:t></w:r>'
             "</w:p></w:footnote></w:footnotes>")
    data = fx.docx(fx.paragraph(fx.run("Text.")), extra={"word/footnotes.xml": notes.encode()})
    with pytest.raises(WriterFileError, match="word/footnotes.xml: refused"):
        read_docx(data)


def test_deep_nesting_is_refused_in_bounded_time_and_memory() -> None:
    depth = 100_000
    document = (_DOCUMENT_OPEN + "<w:p>" + "<w:hyperlink>" * depth + "<w:r><w:t>x</w:t></w:r>"
                + "</w:hyperlink>" * depth + "</w:p>" + _DOCUMENT_CLOSE)
    # The tree is parsed whole, then refused: memory in proportion to the 2.6 MB part.
    _refused(fx.docx("", document=document, stored=True), f"nested deeper than {MAX_DEPTH}",
             seconds=2, megabytes=64)


def test_too_many_elements_are_refused_while_parsing() -> None:
    # The limit lowered so that the test is quick; the refusal is the same at 4 million.
    document = _DOCUMENT_OPEN + "<w:p>" + "<w:r/>" * 20_000 + "</w:p>" + _DOCUMENT_CLOSE
    _refused(fx.docx("", document=document), "more than 10000 elements", seconds=2, megabytes=16,
             limits=DocxLimits(max_elements=10_000))


def test_a_field_code_of_50_megabytes_is_refused() -> None:
    # Random base64 text, stored: the archive's zip-bomb check is not what refuses it.
    chunk = base64.b64encode(os.urandom(3 * 2**20 // 4)).decode()  # 1 MiB of code per run
    code = "".join(f'<w:r><w:instrText xml:space="preserve">{chunk}</w:instrText></w:r>'
                   for _ in range(50))
    document = (_DOCUMENT_OPEN + '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
                '<w:r><w:instrText> ADDIN ZOTERO_ITEM CSL_CITATION {</w:instrText></w:r>' + code
                + '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>' + _DOCUMENT_CLOSE)
    _refused(fx.docx("", document=document, stored=True), "a field code of over", seconds=20,
             megabytes=400)


def test_a_single_field_code_run_of_50_megabytes_is_refused() -> None:
    run = base64.b64encode(os.urandom(3 * 50 * 2**20 // 4)).decode()
    document = (_DOCUMENT_OPEN + '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
                f'<w:r><w:instrText>ADDIN CitaviPlaceholder{{{run}}}</w:instrText></w:r>'
                '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>' + _DOCUMENT_CLOSE)
    _refused(fx.docx("", document=document, stored=True), "a field code of over", seconds=20,
             megabytes=400)


def test_fields_opened_without_end_are_refused() -> None:
    begins = '<w:r><w:fldChar w:fldCharType="begin"/></w:r>' * (MAX_OPEN_FIELDS + 1)
    _refused(fx.docx(fx.paragraph(begins)), f"fields nested deeper than {MAX_OPEN_FIELDS}",
             seconds=2, megabytes=16)


def test_not_a_zip_is_refused() -> None:
    with pytest.raises(WriterFileError, match="not a readable zip archive"):
        read_docx(b"%PDF-1.7\n" + b"x" * 1000)


def test_a_zip_without_a_document_is_refused() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(WriterFileError, match="not a Word document"):
        read_docx(buffer.getvalue())


def test_malformed_xml_is_refused() -> None:
    with pytest.raises(WriterFileError, match="word/document.xml: not well-formed XML"):
        read_docx(fx.docx("", document=_DOCUMENT_OPEN + "<w:p><w:r>"))


# --- CSL-JSON libraries -----------------------------------------------------------------

def test_a_csl_json_library_is_read() -> None:
    library = [
        {"id": "smith2020", "type": "article-journal", "title": "Heat in <i>cities</i>",
         "author": [{"family": "Smith", "given": "Anna"}, {"family": "Gogh", "given": "Vincent",
                                                          "non-dropping-particle": "van"}],
         "issued": {"date-parts": [[2020, 5, 1]]}, "DOI": "https://doi.org/10.1000/XYZ.1"},
        {"id": 42, "type": "book", "title": "Report", "author": [{"literal": "World Health Organization"}],
         "issued": {"raw": "spring 2011"}},
        {"id": "edited", "editor": [{"family": "Kern"}], "issued": {"date-parts": [["1999"]]},
         "title": ["not", "a", "string"]},
        {"id": "smith2020", "title": "A second item with the same id"},
    ]
    items = csl.read_csl_json(json.dumps(library))
    assert [(i.key, i.title, i.authors, i.year, i.doi, i.kind, i.origin) for i in items] == [
        ("smith2020", "Heat in cities", ("Smith", "van Gogh"), 2020, "10.1000/XYZ.1",
         "article-journal", "csl-json"),
        ("42", "Report", ("World Health Organization",), 2011, None, "book", "csl-json"),
        ("edited", None, ("Kern",), 1999, None, None, "csl-json"),
    ]


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not a CSL-JSON file"),
    ('{"id": "x"}', "is a list of items"),
    ("[1, 2]", "item 1: a CSL-JSON item is a int"),
    ('[{"title": "no id"}]', "item 1: a CSL-JSON item has no id"),
    ("[" * 100_000 + "]" * 100_000, "not a CSL-JSON file"),
    (json.dumps([{"id": str(n)} for n in range(LibraryLimits().max_items + 1)]),
     "over the limit of 50000"),
    ('[{"id": "a", "abstract": "' + "x" * LibraryLimits().max_bytes + '"}]', "over the limit of"),
])
def test_a_bad_csl_json_library_is_refused(text: str, message: str) -> None:
    with pytest.raises(WriterFileError, match=message):
        csl.read_csl_json(text)


# --- Paperpile (issue 40: a Word thesis written with Paperpile was refused) ------------------

def test_paperpile_fields_are_read_with_items_locators_and_paragraphs() -> None:
    blanch = fx.paperpile_item("1c2ed450-d1a1", "Blanchflower2011-mx", "International happiness",
                               ["Blanchflower", "Oswald"], 2011, doi="10.5465/amp.25.1.6")
    hicks = fx.paperpile_item("7f96cfd2-68fc", "Hicks2013-ab", "Measuring subjective well-being",
                              ["Hicks", "Tinkler", "Allin"], 2013)
    body = "".join([
        fx.paragraph(fx.run("Introduction"), style="berschrift1"),
        fx.paragraph(fx.run("Well-being has been increasingly acknowledged "),
                     fx.paperpile_field([blanch, hicks],
                                        "(Blanchflower & Oswald, 2011; Hicks et al., 2013)"),
                     fx.run(". Policy follows it.")),
        fx.paragraph(fx.run("Hicks et al. "),
                     fx.paperpile_field([hicks], "(2013, p. 75)",
                                        metadata=[{"id": "7f96cfd2-68fc", "no_author": "true",
                                                   "locator": "75"}]),
                     fx.run(" measure it by survey.")),
        fx.paragraph(fx.simple_field("ADDIN paperpile_bibliography <pp-bibliography/>",
                                     "Blanchflower, D. G. (2011). International happiness.")),
    ])
    thesis = read_docx(fx.docx(body))
    found = [(c.keys, c.locator, c.where, c.claim) for c in thesis.citations]
    assert found == [
        (("Blanchflower2011-mx", "Hicks2013-ab"), None, "paragraph 2",
         "Well-being has been increasingly acknowledged."),
        (("Hicks2013-ab",), "75", "paragraph 3", "Hicks et al. measure it by survey."),
    ]
    items = {i.key: i for i in thesis.library}
    assert (items["Blanchflower2011-mx"].title, items["Blanchflower2011-mx"].authors,
            items["Blanchflower2011-mx"].year, items["Blanchflower2011-mx"].doi) == (
        "International happiness", ("Blanchflower", "Oswald"), 2011, "10.5465/amp.25.1.6")
    assert items["Hicks2013-ab"].authors == ("Hicks", "Tinkler", "Allin")
    assert thesis.skipped == ()


def test_a_paperpile_field_whose_data_inflates_past_the_limit_is_skipped() -> None:
    item = fx.paperpile_item("x1", "Big2020", "A" * 5000, ["Big"], 2020)
    body = fx.paragraph(fx.run("A claim "), fx.paperpile_field([item], "(Big, 2020)"),
                        fx.run(" stands here."))
    thesis = read_docx(fx.docx(body), docx_limits=DocxLimits(max_inflated=1000))
    assert thesis.citations == ()
    assert [s.reason for s in thesis.skipped] == [
        "the Paperpile field data inflates beyond 1000 bytes"]
