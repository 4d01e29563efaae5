"""The README's commands for the writer's examples (issue 47, item 5), run as written.

The ``sh`` block that follows "The same thesis as its writer keeps it" in README.md is
read out of the README, so the two cannot drift, and run by ``bash -e -c`` in a folder
holding a copy of ``examples/`` (its reports land there, by their default names), with
``CITERUN_DATA_DIR`` a folder of the test's. Each report is the LaTeX or Word thesis of
``examples/`` (``python -m examples.make_writer_examples`` writes it again byte for byte),
called by the thesis's title, each citation mapped to the source the writer's library
names and judged as ``examples/expected.json`` accepts for the same sentence of the PDF
thesis; Keller (2017), whose PDF is not there, is unresolved and listed.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import typing

import pytest

from tests.conftest import citerun_command

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXPECTED = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))
TITLE = "Cooling the Compact City: Urban Heat Islands, Health and Low-Cost Adaptation"


def readme_commands() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text.split("The same thesis as its writer keeps it", 1)[1]
    match = re.search(r"```sh\n(.+?)\n```", after, re.DOTALL)
    assert match, "README.md: no sh block after 'The same thesis as its writer keeps it'"
    return match.group(1).strip()


def test_the_readme_names_both_examples_and_the_script_writes_them_again(
        tmp_path: pathlib.Path) -> None:
    commands = readme_commands().splitlines()
    assert commands == ["citerun verify examples/latex/main.tex --sources examples/sources",
                        "citerun verify examples/word/thesis.docx --sources examples/sources"]
    kept = {p: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((EXAMPLES / "latex").rglob("*")) + [EXAMPLES / "word" / "thesis.docx"]
            if p.is_file()}
    copy = tmp_path / "repo"
    shutil.copytree(EXAMPLES, copy / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "examples.make_writer_examples"], cwd=copy, check=True,
                   timeout=120)
    again = {p: hashlib.sha256((copy / p.relative_to(ROOT)).read_bytes()).hexdigest()
             for p in kept}
    assert again == kept, "examples/make_writer_examples.py no longer writes the examples kept"


@pytest.fixture(scope="module")
def ran(server_tmp: typing.Callable[[str], pathlib.Path]) -> tuple[pathlib.Path, str]:
    """The README's block run as written, in a folder holding a copy of examples/."""
    where = server_tmp("writer-examples")
    shutil.copytree(EXAMPLES, where / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITERUN_")}
    script = pathlib.Path(citerun_command()[0])
    env.update(CITERUN_DATA_DIR=str(where / "data"), COLUMNS="250",
               PATH=f"{script.parent}{os.pathsep}{env.get('PATH', '')}")
    done = subprocess.run(["bash", "-e", "-c", readme_commands()], cwd=where, env=env,
                          capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return where, done.stdout


@pytest.mark.parametrize(("stem", "fmt"), [("main", "latex"), ("thesis", "docx")])
def test_the_readme_runs_the_writer_s_examples(ran: tuple[pathlib.Path, str], stem: str,
                                               fmt: str) -> None:
    where, stdout = ran
    assert f"report: {where / stem}.citerun.html" in stdout, stdout
    report = json.loads((where / f"{stem}.citerun.json").read_text(encoding="utf-8"))
    assert report["thesis"]["format"] == fmt and report["thesis"]["title"] == TITLE
    html = (where / f"{stem}.citerun.html").read_text(encoding="utf-8")
    assert f"<title>Citation report: {TITLE}</title>" in html
    wrong = []
    for claim in EXPECTED["documents"]["thesis.pdf"]["claims"]:
        source = pathlib.Path(claim["source"]).name if claim["source"] else None
        hits = [c for c in report["citations"]
                if claim["claim"] in " ".join(c["claim"].split())
                and ((c["source"] or {}).get("filename") if source else c["source"]) == source]
        assert len(hits) == 1, (claim, [(c["claim"], c["source"]) for c in report["citations"]])
        if hits[0]["verdict"] not in claim["accept"]:
            wrong.append(f"{claim['claim']!r} vs {source}: {hits[0]['verdict']} "
                         f"(expected {claim['accept']}): {hits[0]['rationale']}")
    assert not wrong, "\n".join(wrong)
    keller = next(c for c in report["citations"] if "block the wind" in c["claim"])
    assert keller["verdict"] == "unresolved_citation" and "Keller" in (keller["reference"] or "")
    assert len(report["citations"]) == len(EXPECTED["documents"]["thesis.pdf"]["claims"])
