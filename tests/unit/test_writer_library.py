"""Libraries as BibTeX, biber and reference managers write them (issue 40 items 2, 3).

Each test is built from a small library in the shape a writer's tool leaves it: JabRef
2.x and BibDesk capitalise field names, a LaTeX thesis's folder holds experiment
configs beside its CSL-JSON.
"""

from __future__ import annotations

import json

import pytest

from citerun.pipeline.writer import bib, formats
from citerun.pipeline.writer.model import WriterFileError

# JabRef 2.10 writes field names capitalised, with a "% This file was created" header
# and a @comment holding its metadata; BibDesk does the same with "Bdsk-File-1".
JABREF = """% This file was created with JabRef 2.10.
% Encoding: UTF8

@String{jcp = {Journal of Comparative Psychology}}

@Article{Hammer2010,
  Title                    = {Tool use in {C}orvids},
  Author                   = {Hammer, Anna and M{\\"u}ller, Ben},
  Journal                  = jcp,
  Year                     = {2010},
  DOI                      = {10.1000/corvid.2010},
  File                     = {:Hammer_2010.pdf:PDF}
}

@comment{jabref-meta: databaseType:bibtex;}
"""


def test_capitalised_field_names_are_read_as_bibtex_reads_them() -> None:
    items, skipped = bib.read_bibtex(JABREF)
    assert skipped == ()
    (item,) = items
    assert item.key == "Hammer2010"
    assert item.title == "Tool use in Corvids"
    assert item.authors == ("Hammer", "Müller")
    assert item.year == 2010
    assert item.doi == "10.1000/corvid.2010"
    assert item.files == ("Hammer_2010.pdf",)


def test_crossref_lends_the_parent_s_year_and_editors_not_its_title() -> None:
    text = """@InProceedings{child, title = {A Paper}, crossref = {Proc2019}}
@Proceedings{proc2019, Title = {Proceedings of X}, Editor = {Eve Editor}, YEAR = 2019,
  doi = {10.1/proc}}
"""
    items, _ = bib.read_bibtex(text)
    child = next(i for i in items if i.key == "child")
    assert (child.title, child.year, child.authors, child.doi) == ("A Paper", 2019,
                                                                   ("Editor",), None)


def test_string_macros_resolve_whatever_their_case() -> None:
    text = """@STRING{ Y2 = "2021" }
@misc{m, title = "Macro " # y2, year = Y2}
"""
    (item,), _ = bib.read_bibtex(text)
    assert (item.title, item.year) == ("Macro 2021", 2021)


def test_a_json_that_is_no_library_is_not_read_as_one() -> None:
    # A LaTeX thesis's folder as the CLI bundles it: the thesis, its .bib, and the
    # configs of the experiments the thesis reports on.
    config = json.dumps({"learning_rate": 0.1, "layers": [64, 32]}).encode()
    code = b'[{"x": 1}, {"x": 2}]'
    csl_items = json.dumps([{"id": "smith2020", "type": "article-journal",
                             "title": "Smith's Paper", "issued": {"date-parts": [[2020]]}}])
    files = {"config.json": config, "experiments/config_2.json": code,
             "Tests/broken.json": b'{"not": json', "refs.json": csl_items.encode()}
    items, skipped = formats.read_library(files)
    assert [i.key for i in items] == ["smith2020"]
    assert skipped == ()


def test_a_given_library_that_is_broken_names_its_file_and_line() -> None:
    files = {"library/mylib.json": b'[\n  {"id": "a", "type": "book"},\n  {"id": "b",, }\n]'}
    with pytest.raises(WriterFileError, match=r"mylib\.json.*line 3"):
        formats.read_library(files)


def test_a_malformed_bib_entry_names_its_file_and_line() -> None:
    files = {"library/refs.bib": b"@misc{ok, title={Fine}}\n\n@misc{bad, title={Open\n"}
    items, skipped = formats.read_library(files)
    assert [i.key for i in items] == ["ok"]
    assert skipped and skipped[0].where == "refs.bib, line 3"
