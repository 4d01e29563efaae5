"""What the run page says in words: a document's state for its run, the stage its
workers are in, and the run's name (citerun.web.pages)."""

from __future__ import annotations

from citerun.web.pages import document_label, run_title, stage_label


def test_a_documents_state_for_its_run() -> None:
    assert document_label({"state": "parsed", "error_reason": None}, "running") == "read"
    assert document_label({"state": "staged", "error_reason": None}, "running") == \
        "waiting to be read"
    # A finished run's uploads are erased (back to staged): the run's own outcome counts.
    assert document_label({"state": "staged", "error_reason": None, "read_for_run": True},
                          "succeeded") == "read"
    assert document_label({"state": "staged", "error_reason": None, "read_for_run": False},
                          "cancelled") == "not read"
    assert document_label({"state": "staged", "error_reason": "encrypted"}, "failed") == \
        "could not be read: encrypted"


def test_the_stage_is_named_and_a_slow_first_judgement_explained() -> None:
    parse = {"kind": "parse_document", "running": 2, "queued": 3, "running_s": 4.0}
    judge = {"kind": "judge_citation", "running": 2, "queued": 9, "running_s": 3.0}
    assert stage_label([judge, parse], 0) == "Reading the documents: 2 being read, 3 waiting."
    assert stage_label([judge], 0) == "Judging the citations."
    slow = {**judge, "running_s": 25.0}
    said = stage_label([slow], 0)
    assert said is not None and "word lists" in said and "German" in said
    assert stage_label([slow], 3) == "Judging the citations."  # past the first
    assert stage_label([{"kind": "finalize_run", "running": 1, "queued": 0,
                         "running_s": 1.0}], 11) == "Writing the report."
    assert stage_label([], 0) is None


def test_a_run_is_named_by_its_thesis() -> None:
    assert run_title({"title": "Cooling the City", "filename": "masterarbeit.pdf",
                      "name": "masterarbeit"}) == "Cooling the City"
    assert run_title({"title": None, "filename": "masterarbeit.pdf",
                      "name": "masterarbeit"}) == "masterarbeit.pdf"
    assert run_title({"title": " ", "filename": None, "name": "x"}) == "x"
