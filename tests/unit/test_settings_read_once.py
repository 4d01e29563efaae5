"""Settings are read from the environment once per process, at its entry, and passed on.

Each process has one entry: the command line's :func:`citerun.cli.main.main` (every
``citerun`` command: verify, worker, serve, operator, ...), which reads the core
:class:`~citerun.core.settings.Settings` once and hands them to the command; a command
that needs another model (the pipeline's, the web's, the operator's) reads it there, once.
A module deeper down takes the settings it is given: it never reads the environment
itself, so a test or a bench can hand it any settings, and one process never runs with
two readings of its environment.

The test reads the sources: a call of a settings model, of ``runspec.judge_profiles()``
(without an environment of its own) or an ``os.environ`` / ``os.getenv`` read anywhere
but the places below fails, with the place named.
"""

from __future__ import annotations

import ast
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "citerun"

#: The models read from ``CITERUN_*`` variables (pydantic-settings ``BaseSettings``).
SETTINGS_MODELS = frozenset({"Settings", "PipelineSettings", "OperatorSettings", "ServeSettings"})

#: Where a settings model may be read (module -> models), and why there.
MAY_READ_SETTINGS: dict[str, tuple[frozenset[str], str]] = {
    "cli/main.py": (SETTINGS_MODELS - {"OperatorSettings"},
                    "the entry of every citerun process: main reads Settings once, and the "
                    "worker, serve and reembed commands read their own model once"),
    "operator/handlers.py": (frozenset({"OperatorSettings"}),
                             "kopf registers the operator's handlers at import with its "
                             "settings (the resync interval and finalizer retries are "
                             "decorator arguments): read once, when citerun operator "
                             "imports the module"),
}

#: Where ``runspec.judge_profiles()`` may read CITERUN_JUDGE_PROFILES, and why there.
MAY_READ_JUDGE_PROFILES: dict[str, str] = {
    "operator/handlers.py": "the operator's startup, once; the admission checks take them",
    "cli/main.py": "citerun worker, once, for its Worker: the judge tasks take them from "
                   "their TaskContext",
}

#: Where ``os.environ`` or ``os.getenv`` may be used, and why there.
MAY_USE_ENVIRON: dict[str, str] = {
    "cli/main.py": "the entry: the unknown-variable check, the default log format and the "
                   "pid of the verify that started a worker",
    "core/settings.py": "the settings themselves (process_name: the pod's name)",
    "core/runspec.py": "judge_profiles, the reader of CITERUN_JUDGE_PROFILES",
    "local/workers.py": "the environment handed on to the worker processes it starts",
    "local/embedded.py": "the environment handed on to the Postgres tools it runs",
    "pipeline/judging/openai.py": "the judge's API key, a secret the settings name by its "
                                  "variable (judge.openai.api_key_env), never a setting",
}


def _modules() -> list[pathlib.Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _reads(module: pathlib.Path) -> list[tuple[int, str]]:
    """(line, what) for each read of the environment in ``module``."""
    tree = ast.parse(module.read_text(encoding="utf-8"), str(module))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _called_name(node)
            if name in SETTINGS_MODELS:
                found.append((node.lineno, name))
            elif name == "judge_profiles" and not node.args and not node.keywords:
                found.append((node.lineno, "judge_profiles"))
            elif name == "getenv":
                found.append((node.lineno, "environ"))
        elif (isinstance(node, ast.Attribute) and node.attr == "environ"
              and isinstance(node.value, ast.Name) and node.value.id == "os"):
            found.append((node.lineno, "environ"))
    return found


def _allowed(where: str, what: str) -> bool:
    if what in SETTINGS_MODELS:
        return what in MAY_READ_SETTINGS.get(where, (frozenset(), ""))[0]
    if what == "judge_profiles":
        return where in MAY_READ_JUDGE_PROFILES
    return where in MAY_USE_ENVIRON


def test_the_environment_is_read_only_at_each_process_entry() -> None:
    strays = [f"src/citerun/{module.relative_to(PACKAGE).as_posix()}:{line} reads {what}"
              for module in _modules() for line, what in _reads(module)
              if not _allowed(module.relative_to(PACKAGE).as_posix(), what)]
    assert not strays, ("read the settings at the process's entry and pass them: "
                        + "; ".join(strays))


def test_the_scan_sees_the_reads_it_allows() -> None:
    """Each allowed place still reads what it is allowed (an entry gone stale is removed),
    and the scan finds reads at all (it cannot pass by seeing nothing)."""
    seen = {(module.relative_to(PACKAGE).as_posix(), what)
            for module in _modules() for _, what in _reads(module)}
    for where, (models, _why) in MAY_READ_SETTINGS.items():
        for model in models:
            assert (where, model) in seen, f"{where} no longer reads {model}: drop it here"
    for where in MAY_READ_JUDGE_PROFILES:
        assert (where, "judge_profiles") in seen, f"{where} no longer reads judge profiles"
    for where in MAY_USE_ENVIRON:
        assert (where, "environ") in seen, f"{where} no longer uses os.environ"


def test_the_models_named_here_are_the_ones_read_from_the_environment() -> None:
    """Every BaseSettings model of the package is in SETTINGS_MODELS (a new one is held
    by this test as soon as it exists)."""
    found = set()
    for module in _modules():
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Name) and b.id == "BaseSettings")
                    or (isinstance(b, ast.Attribute) and b.attr == "BaseSettings")
                    for b in node.bases):
                found.add(node.name)
    assert found == SETTINGS_MODELS
