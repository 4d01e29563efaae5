"""A Citavi organisation author is named by its name, never by its GUID (issue 46, item 6).

Citavi keeps people and organisations in one list; an organisation's name may stand in
``Name``/``FullName`` with its short form in ``Abbreviation``, in the reference's
``Organizations`` or ``Collaborators``, or only on the parent reference (a chapter of
an organisation's report). Where none was read the report named the reference by its
Citavi id ("4f1c2b0e-..., (2020). Bevölkerung ..."), and the mapping had no author to
match the source by.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from citerun.pipeline import citations
from citerun.pipeline.writer import fields
from citerun.pipeline.writer.model import LibraryItem, entry_for

REFERENCE_ID = "4f1c2b0e-9a7d-4e2b-8c1a-6b3e2d1f0a99"
PERSON_ID = "7d2e9c41-3b5a-4f60-9e8d-1a2b3c4d5e6f"


def _organisation(**names: str) -> dict[str, Any]:
    return {"$id": "3", "$type": "SwissAcademic.Citavi.Person, SwissAcademic.Citavi",
            "Id": PERSON_ID, "Protected": False, "Sex": 0, **names}


def _code(reference: dict[str, Any]) -> str:
    payload = {
        "$id": "1", "$type": "SwissAcademic.Citavi.Citations.WordPlaceholder, SwissAcademic.Citavi",
        "Entries": [{
            "$id": "2",
            "$type": "SwissAcademic.Citavi.Citations.WordPlaceholderEntry, SwissAcademic.Citavi",
            "Id": "entry-1", "ReferenceId": REFERENCE_ID, "Reference": reference}],
        "Text": "(Destatis 2020)", "WAIVersion": "6.19.2.1"}
    encoded = base64.b64encode(json.dumps(payload).encode()).decode()
    return "ADDIN CitaviPlaceholder{" + encoded + "}"


def _reference(**fields_: Any) -> dict[str, Any]:
    return {"$id": "4", "$type": "SwissAcademic.Citavi.Reference, SwissAcademic.Citavi",
            "Id": REFERENCE_ID, "ReferenceType": "UnpublishedWork",
            "Title": "Bevölkerung und Erwerbstätigkeit", "Year": "2020", **fields_}


def _item(reference: dict[str, Any]) -> LibraryItem:
    (cited,) = fields.citation_of("Citavi", _code(reference)).cited
    assert cited.item is not None
    return cited.item


@pytest.mark.parametrize("reference", [
    # The organisation's name in Name, its short form beside it, as an author.
    _reference(Authors=[_organisation(Name="Statistisches Bundesamt", Abbreviation="Destatis")]),
    # In FullName, among the reference's organisations.
    _reference(Authors=[], Organizations=[_organisation(FullName="Statistisches Bundesamt")]),
    # In LastName, as a collaborator (the issuing body of a report).
    _reference(Collaborators=[_organisation(LastName="Statistisches Bundesamt")]),
    # Only on the parent: a chapter of the organisation's report.
    _reference(ReferenceType="Contribution", Authors=[], ParentReference={
        "$id": "5", "$type": "SwissAcademic.Citavi.Reference, SwissAcademic.Citavi",
        "Id": "0b9e8d7c-6f5a-4b3c-2d1e-0f9a8b7c6d5e", "ReferenceType": "BookEdited",
        "Title": "Statistisches Jahrbuch 2020",
        "Organizations": [_organisation(LastName="Statistisches Bundesamt")]}),
])
def test_an_organisation_author_is_named_by_its_name(reference: dict[str, Any]) -> None:
    item = _item(reference)
    assert item.authors == ("Statistisches Bundesamt",)
    entry = entry_for(0, item)
    assert entry.text.startswith("Statistisches Bundesamt (2020). Bevölkerung")
    assert REFERENCE_ID not in entry.text and PERSON_ID not in entry.text
    # And the organisation's report is found by its name.
    source = citations.SourceInfo(document_id="destatis", filename="report.pdf",
                                  title="Bevölkerung und Erwerbstätigkeit",
                                  authors=("Statistisches Bundesamt",), year=2020)
    extraction = citations.Extraction(
        (citations.ExtractedCitation(1, REFERENCE_ID, "Claim.", 1, "(Destatis 2020)", None),),
        (entry,), None)
    (mapped,) = citations.map_citations(extraction, [source])
    assert mapped.document_id == "destatis"


def test_a_reference_without_any_author_is_not_named_by_its_id() -> None:
    item = _item(_reference(Authors=[_organisation(Id=PERSON_ID)]))
    assert item.authors == ()
    text = entry_for(0, item).text
    assert REFERENCE_ID not in text and PERSON_ID not in text
    assert text.startswith("Bevölkerung und Erwerbstätigkeit (2020).")
