"""Issue 42, item 4: facts that were kept twice, each with one owner. A copy that can
import the owner does; a copy that cannot (YAML, a chart template) is read here and
compared with the owner, so a change to one fails until every copy follows. See
``docs/architecture.md`` ("One owner per fact")."""

from __future__ import annotations

import ast
import uuid
import re
import typing
from pathlib import Path

import pytest
import yaml

from citerun.core import flow, pdfmagic, runspec, verdicts
from citerun.operator import access
from citerun.operator import status as operator_status
from citerun.pipeline import normalize
from citerun.pipeline.report import meaning
from citerun.core.settings import QueueSettings
from citerun.core.states import RunState
from citerun.worker import tasks

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "citerun"
YAML_DIRS = (REPO / "crds", REPO / "charts", REPO / "examples")


def _python_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _yaml_files() -> list[Path]:
    return sorted(p for d in YAML_DIRS for p in d.rglob("*.yaml"))


# -- the API group: runspec.GROUP ------------------------------------------------------

def test_only_runspec_spells_the_api_group() -> None:
    spelled = [str(p.relative_to(REPO)) for p in _python_files()
               if runspec.GROUP in p.read_text(encoding="utf-8")]
    assert spelled == ["src/citerun/core/runspec.py"]


def test_the_yaml_names_the_api_group_of_runspec() -> None:
    """The CRDs, the chart's RBAC, access policy and Chart.yaml, and the example cannot
    import: every place they name the group holds runspec.GROUP."""
    places = [
        r"apiGroups:\s*\[(?P<g>[^\]]+)\]\s*\n\s*(?:apiVersions:[^\n]*\n\s*)?resources:\s*\[citationruns",
        r"\bcitationruns\.(?P<g>[\w.-]+)",
        r"apiVersion:\s*(?P<g>[\w.-]+)/v1alpha1\s*\nkind:\s*CitationRun",
        r"^\s*group:\s*(?P<g>[\w.-]+)\s*$",
        r"'(?P<g>[\w.-]+)/access-policy-probe'",
    ]
    groups: set[str] = set()
    for pattern in places:
        hits = [match["g"].strip() for path in _yaml_files()
                for match in re.finditer(pattern, path.read_text(encoding="utf-8"), re.MULTILINE)]
        # A pattern that finds nothing would let its copies drift unseen.
        assert hits, pattern
        groups.update(hits)
    assert groups == {runspec.GROUP}
    assert access.PROBE_ANNOTATION == f"{runspec.GROUP}/access-policy-probe"


# -- the CitationRun phases: citerun.operator.status.ALL_PHASES --------------------------

CRDS = (REPO / "crds" / "citationrun.yaml", REPO / "charts" / "citerun" / "crds" / "citationrun.yaml")


def test_the_crd_phase_enum_is_the_operators_list() -> None:
    for path in CRDS:
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
        assert status["properties"]["phase"]["enum"] == list(operator_status.ALL_PHASES), path


def test_every_phase_is_written_and_none_is_spelled_by_hand() -> None:
    """Each phase of the list is one the operator writes (Pending while a run waits, one
    per run state after), and no module writes a ``"phase": "<literal>"`` of its own: a
    phase nothing writes (the old "Admitted") or one the CRD refuses cannot come back."""
    assert operator_status.ALL_PHASES == (
        "Pending", *(operator_status.PHASES[s.value] for s in RunState))
    literal = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if (isinstance(key, ast.Constant) and key.value == "phase"
                            and isinstance(value, ast.Constant)):
                        literal.append(f"{path.relative_to(REPO)}:{value.lineno}")
    assert literal == []


# -- the risk order: citerun.pipeline.report.meaning._RISK -------------------------------

def test_the_risk_order_ranks_every_verdict_once_and_its_guard_bites(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The order is keyed by the Verdict members (no strings); the import-time check
    refuses a table that misses one, so a new verdict cannot go unranked."""
    assert set(meaning._RISK) == set(verdicts.Verdict)
    assert all(isinstance(v, verdicts.Verdict) for v in meaning._RISK)
    fewer = dict(meaning._RISK)
    del fewer[verdicts.Verdict.SOURCE_UNAVAILABLE]
    monkeypatch.setattr(meaning, "_RISK", fewer)
    with pytest.raises(RuntimeError, match="risk order"):
        meaning._complete()


# -- task payloads: citerun.core.flow.PAYLOADS ------------------------------------------------

def test_the_worker_handles_each_kind_with_the_flows_payload_model() -> None:
    assert set(flow.PAYLOADS) == set(flow.KINDS)
    assert tasks.registry.kinds == tuple(sorted(flow.KINDS))
    for kind in flow.KINDS:
        spec = tasks.registry.get(kind)
        assert spec is not None and spec.payload_model is flow.PAYLOADS[kind], kind


def test_a_task_carries_its_kinds_model_as_json_and_nothing_else() -> None:
    run_id = uuid.uuid4()
    made = flow.of(QueueSettings()).task(flow.FETCH_DOCUMENT,
                                         flow.FetchPayload(run_id=run_id,
                                                           url="https://x.test/a.pdf",
                                                           filename="a.pdf", role="source",
                                                           keys=["k"]),
                                         run_id=run_id, priority=0, dedupe_key="d")
    assert made.payload == {"run_id": str(run_id), "url": "https://x.test/a.pdf",
                            "filename": "a.pdf", "role": "source", "keys": ["k"]}
    # What the flow stores is what the worker's model reads back.
    assert flow.FetchPayload.model_validate(made.payload).run_id == run_id
    with pytest.raises(TypeError, match="FetchPayload"):
        flow.of(QueueSettings()).task(flow.FETCH_DOCUMENT, flow.RunPayload(run_id=run_id),
                                      run_id=run_id, priority=0, dedupe_key="d")


# -- DOI and year patterns: citerun.pipeline.normalize -----------------------------------

# What a DOI or a year pattern looks like when written out in a regex.
_PATTERN_COPIES = {
    "DOI": re.compile(r"10\\\.\\d|doi\\\.org"),
    "year": re.compile(r"1\[[5-9]-9\]|\(\?:19\|20\)|\(\?<!\\d\)\(\\d\{4\}\)"),
}


def test_doi_and_year_patterns_are_written_only_in_normalize() -> None:
    owner = SRC / "pipeline" / "normalize.py"
    found = {name: [str(p.relative_to(REPO)) for p in _python_files()
                    if p != owner and pattern.search(p.read_text(encoding="utf-8"))]
             for name, pattern in _PATTERN_COPIES.items()}
    assert found == {"DOI": [], "year": []}
    # The patterns above do find the owner's (a scan that finds nothing proves nothing).
    text = owner.read_text(encoding="utf-8")
    assert all(pattern.search(text) for pattern in _PATTERN_COPIES.values())


def test_the_doi_and_year_forms_read_what_they_say() -> None:
    assert normalize.DOI.search("see doi:10.1000/xyz123.")[1] == "10.1000/xyz123"
    field = normalize.DOI_RESOLVER.sub("", "https://doi.org/10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-O")
    assert normalize.FIELD_DOI.fullmatch(field)
    assert normalize.field_year("{1543}") == 1543 and normalize.field_year("2019-05-02") == 2019
    assert normalize.field_year("n.d.") is None
    assert re.fullmatch(normalize.YEAR, "1600") and not re.fullmatch(normalize.YEAR, "1543")
    assert patterns_year() == normalize.YEAR


def patterns_year() -> str:
    from citerun.pipeline.citations import patterns
    return patterns.YEAR


# -- thesis and library file types: citerun.core.pdfmagic, read by citerun.pipeline.intake --

def _zip(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_every_reader_of_a_thesis_or_library_takes_the_owners_suffixes(tmp_path: Path) -> None:
    """The CLI and the web tell a thesis and a library by the intake's one rule, whose
    suffixes are the owner's; the upload page offers exactly those."""
    from citerun.cli import verify
    from citerun.pipeline import intake
    from citerun.pipeline.writer import formats
    from citerun.web import pages
    assert intake.THESIS_SUFFIXES is pdfmagic.THESIS_SUFFIXES
    assert intake.LIBRARY_SUFFIXES is pdfmagic.LIBRARY_SUFFIXES
    assert formats.LIBRARY_SUFFIXES is pdfmagic.LIBRARY_SUFFIXES
    assert set(intake.ZIP_SUFFIXES) < set(pdfmagic.THESIS_SUFFIXES)
    # Each by its structure (issue 48): a zip's magic alone is no zip, nor a Word document.
    magic = {".pdf": b"%PDF-1.7\n", ".docx": _zip({pdfmagic.CONTENT_TYPES: b"<Types/>"}),
             ".zip": _zip({"main.tex": b"\\documentclass{article}"}),
             ".tex": b"\\documentclass{article}"}
    assert set(magic) == set(pdfmagic.THESIS_SUFFIXES)
    for suffix, data in magic.items():
        intake.check_thesis(f"thesis{suffix.upper()}", data)  # the web's check
        path = tmp_path / f"thesis{suffix}"
        path.write_bytes(data)
        assert verify.check_thesis(str(path)) == path  # the CLI's
    for suffix in pdfmagic.LIBRARY_SUFFIXES:
        intake.check_library(f"refs{suffix}", b"{}")
    (tmp_path / "thesis.rtf").write_bytes(b"{\\rtf1}")
    with pytest.raises(intake.FileRefused):
        intake.check_thesis("thesis.rtf", b"{\\rtf1}")
    with pytest.raises(verify.UsageError):
        verify.check_thesis(str(tmp_path / "thesis.rtf"))
    with pytest.raises(intake.FileRefused):
        intake.check_library("refs.ris", b"TY  - JOUR")
    html = pages.upload_page(user="u", csrf="c", max_bytes=1 << 20)
    accepts = dict(re.findall(r'<input id="(thesis|library)"[^>]*?accept="([^"]*)"', html))
    assert accepts == {"thesis": ",".join(pdfmagic.THESIS_SUFFIXES),
                       "library": ",".join(pdfmagic.LIBRARY_SUFFIXES)}


def test_no_other_module_lists_the_suffixes() -> None:
    """No tuple, list or set of string constants equal to either list, outside the owner."""
    owned = {frozenset(pdfmagic.THESIS_SUFFIXES), frozenset(pdfmagic.LIBRARY_SUFFIXES)}
    spelled: dict[str, int] = {}
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                if frozenset(typing.cast(ast.Constant, e).value for e in node.elts) in owned:
                    name = str(path.relative_to(REPO))
                    spelled[name] = spelled.get(name, 0) + 1
    assert spelled == {"src/citerun/core/pdfmagic.py": 2}


# -- page-locator prefixes: citerun.pipeline.citations.patterns.PAGE_PREFIXES ------------

def test_every_reader_of_a_page_locator_takes_the_owners_prefixes() -> None:
    from citerun.pipeline.citations import footnotes, locators, markers, patterns
    from citerun.pipeline.writer import latex_tables
    for word in patterns.PAGE_PREFIXES:
        marker = markers.find_markers(f"as shown (Smith, 2020, {word} 45).")
        assert [m.locator for m in marker] == ["45"], word
        assert latex_tables._PAGES.fullmatch(f"{word} 45"), word
        assert locators.parse_locator(f"{word} 45").kind == "pages", word
        loc = footnotes._LOCATOR.search(f"Müller, Jana: Titel, Berlin 2019, {word} 45.")
        assert loc is not None and loc["prefix"] in footnotes._PAGE_PREFIXES, word


def test_no_other_module_writes_a_page_prefix_pattern() -> None:
    owner = SRC / "pipeline" / "citations" / "patterns.py"
    copy = re.compile(r"S\\\.\||\|S\\\.|pp\?\\\.|Seiten\?|\|pp\\\.|pp\\\.\|")
    spelled = [str(p.relative_to(REPO)) for p in _python_files()
               if p != owner and copy.search(p.read_text(encoding="utf-8"))]
    assert spelled == []


# -- a writer's file's limits: settable in LimitSettings ----------------------------------

def _latex_bundle(chapters: int) -> bytes:
    import io
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        body = "".join(f"\\input{{ch{i}}}\n" for i in range(chapters))
        bundle.writestr("main.tex", "\\documentclass{article}\n\\begin{document}\n"
                        f"{body}\\end{{document}}\n")
        for i in range(chapters):
            bundle.writestr(f"ch{i}.tex", f"Chapter {i} says something \\cite{{k{i}}}.\n")
    return buffer.getvalue()


def _bib_bundle(bib: str) -> bytes:
    """A LaTeX thesis citing k0 with ``bib`` as its refs.bib."""
    import io
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("main.tex", "\\documentclass{article}\n\\begin{document}\n"
                        "Heat islands warm cities \\cite{k0}.\n\\bibliography{refs}\n"
                        "\\end{document}\n")
        bundle.writestr("refs.bib", bib)
    return buffer.getvalue()


def _docx() -> bytes:
    from tests.support import docx_fixtures as fx
    return fx.thesis_docx()


#: (the document, a limit's variable, its value, the refusal that value gives)
REFUSALS = [
    (lambda: _latex_bundle(4), "CITERUN_LIMITS__BUNDLE__MAX_MEMBERS", "3", "over the limit of 3"),
    (lambda: _bib_bundle("".join(f"@misc{{k{i}, title={{Title {i}}}, year={{2020}}}}\n"
                                 for i in range(5))),
     "CITERUN_LIMITS__LIBRARY__MAX_ITEMS", "3", "5 entries, over the limit of 3"),
    (lambda: _latex_bundle(4), "CITERUN_LIMITS__WRITER__LATEX__MAX_INCLUDES", "3",
     "reads included files over 3 times"),
    (_docx, "CITERUN_LIMITS__WRITER__DOCX__MAX_FIELDS", "2", "more than 2 fields"),
]


@pytest.mark.parametrize(("make", "variable", "value", "refusal"), REFUSALS,
                         ids=[r[1] for r in REFUSALS])
def test_the_writer_limits_are_settings_the_parse_child_obeys(
        monkeypatch: pytest.MonkeyPatch, make: typing.Callable[[], bytes], variable: str,
        value: str, refusal: str) -> None:
    """Read whole within the defaults, refused under the setting (each failed before its
    limit was a setting: the variable was unknown)."""
    from citerun.pipeline.settings import DocumentSettings, PipelineSettings
    from citerun.worker import steps
    data, documents = make(), DocumentSettings(max_bytes=1 << 30)
    assert isinstance(steps.parse(data, PipelineSettings().limits, documents), steps.Parsed)
    monkeypatch.setenv(variable, value)
    outcome = steps.parse(data, PipelineSettings().limits, documents)
    assert isinstance(outcome, steps.Rejected) and refusal in outcome.message, outcome


def test_the_bib_limits_are_settings_the_parse_child_obeys(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from citerun.pipeline.settings import DocumentSettings, PipelineSettings
    from citerun.worker import steps
    data = _bib_bundle("@misc{k0, author={Ames and Baker and Cole}, "
                       "title={Urban heat}, year={2020}}\n")
    documents = DocumentSettings(max_bytes=1 << 30)

    def authors() -> tuple[str, ...]:
        parsed = steps.parse(data, PipelineSettings().limits, documents)
        assert isinstance(parsed, steps.Parsed)
        written = parsed.document.written
        assert written is not None
        return written.library[0].authors

    assert authors() == ("Ames", "Baker", "Cole")
    monkeypatch.setenv("CITERUN_LIMITS__WRITER__BIB__MAX_NAMES", "2")
    assert authors() == ("Ames", "Baker")


def test_no_writer_module_has_a_limit_constant() -> None:
    """A limit of a writer's reader is a field of writer.limits (a setting) or of the
    library's or bundle's limits, not a module-level ``MAX_*``."""
    found: dict[str, list[str]] = {}
    for path in sorted((SRC / "pipeline" / "writer").glob("*.py")):
        names = [t.id for node in ast.parse(path.read_text(encoding="utf-8")).body
                 if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                 if isinstance(t, ast.Name) and t.id.lstrip("_").startswith("MAX_")]
        if names:
            found[path.name] = names
    assert found == {}


def test_the_writer_limits_keep_their_defaults() -> None:
    """The readers' limits became settings with the values the constants had."""
    from citerun.pipeline.writer.limits import BibLimits, DocxLimits, LatexLimits
    assert LatexLimits().model_dump() == {
        "max_depth": 20, "max_total_chars": 20 * 1024 * 1024, "max_includes": 5_000,
        "max_macro_body": 2_000, "max_macros": 10_000, "max_skipped": 1_000,
        "max_quoted_chars": 10_000, "max_bibitems": 5_000, "max_cite_groups": 100}
    assert DocxLimits().model_dump() == {
        "max_depth": 256, "max_elements": 4_000_000, "max_instruction": 4 * 1024 * 1024,
        "max_fields": 200_000, "max_open_fields": 64, "max_inflated": 16 * 1024 * 1024,
        "max_citavi_objects": 200_000, "max_core_bytes": 65_536}
    assert BibLimits().model_dump() == {"max_field_chars": 2_000, "max_names": 200,
                                        "max_joined_chars": 100_000,
                                        "max_items_chars": 2_000_000}
