"""The terminal says where a citation stands as the report does (issue 46): a LaTeX or
Word citation by its file and line or paragraph, a PDF's by its page. Before, the table
and the --fail-on message said "page 1" for every citation of a writer's file
("#3 contradicted: \\footcite[see][5]{lindqvist2021} on page 1" where the report had
chapters/health.tex:4)."""

from __future__ import annotations

import io

from rich.console import Console

from citerun.cli import gate, verify_run

LATEX = {"ordinal": 3, "marker": "\\footcite[see][5]{lindqvist2021}", "page": 1,
         "location": "chapters/health.tex:4", "verdict": "contradicted",
         "claim": "Street trees cool the pavement.", "source": {"filename": "lindqvist2021.pdf"}}
WORD = {**LATEX, "ordinal": 4, "marker": "(Lindqvist, 2021)", "location": "paragraph 34"}
PDF = {**LATEX, "ordinal": 5, "marker": "[4]", "page": 7, "location": None}


def test_the_fail_on_message_names_the_file_and_line() -> None:
    lines = gate.fail_on_lines({"citations": [LATEX, WORD, PDF]}, frozenset({"contradicted"}))
    assert ("  #3 contradicted: \\footcite[see][5]{lindqvist2021} at chapters/health.tex:4 "
            "(lindqvist2021.pdf): Street trees cool the pavement.") in lines
    assert any("#4 contradicted: (Lindqvist, 2021) at paragraph 34" in line for line in lines)
    assert any("#5 contradicted: [4] on page 7" in line for line in lines)
    assert not any("page 1" in line for line in lines)


def test_the_table_has_a_where_column() -> None:
    out = io.StringIO()
    verify_run.print_summary(Console(file=out, width=200), {"citations": [LATEX, WORD, PDF]})
    text = out.getvalue()
    assert "where" in text and "chapters/health.tex:4" in text and "paragraph 34" in text
    assert "page 7" in text and "page 1" not in text
