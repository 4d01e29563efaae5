"""Each SQL file sits beside its one owner: ``x.sql`` is loaded by ``x.py`` in the same
folder and by no other module of the package, so a statement has one module that runs it
and others call that module's functions. The pipeline loads no file of the worker or of any
folder above it: its import contracts would hold for imports only if it did.

The test reads the sources (every ``sql.load(package, filename)`` call) rather than
importing them; the migrations are read by ``core/db.py`` as a folder and are not
statements anyone loads by name.
"""

from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

import pytest

from citerun.core import sql

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "citerun"
MIGRATIONS = PACKAGE / "core" / "migrations"

#: The folders a pipeline module may load SQL from: its own and the core below it.
PIPELINE_MAY_LOAD = ("citerun.pipeline", "citerun.core")


@dataclass(frozen=True)
class Load:
    module: pathlib.Path
    line: int
    package: str
    filename: str
    names: frozenset[str]   # the statements taken by literal: _Q["name"] or load(...)["name"]

    @property
    def file(self) -> pathlib.Path:
        return PACKAGE.parent.joinpath(*self.package.split("."), self.filename)

    def where(self) -> str:
        return f"{self.module.relative_to(REPO)}:{self.line}"


def _is_sql_load(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "load" and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "sql")


def _loads(module: pathlib.Path) -> list[Load]:
    """The ``sql.load`` calls of ``module``, each with the statement names taken from it."""
    tree = ast.parse(module.read_text(encoding="utf-8"), str(module))
    found: list[Load] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not _is_sql_load(node):
            continue
        args = node.args
        if (len(args) != 2 or node.keywords
                or not all(isinstance(a, ast.Constant) and isinstance(a.value, str)
                           for a in args)):
            pytest.fail(f"{module.relative_to(REPO)}:{node.lineno}: sql.load takes two string "
                        "literals (package, filename), so this test can follow it")
        package, filename = (str(a.value) for a in args if isinstance(a, ast.Constant))
        variables = {t.id for a in ast.walk(tree) if isinstance(a, ast.Assign) and a.value is node
                     for t in a.targets if isinstance(t, ast.Name)}
        names = {sub.slice.value for sub in ast.walk(tree)
                 if isinstance(sub, ast.Subscript)
                 and (sub.value is node
                      or isinstance(sub.value, ast.Name) and sub.value.id in variables)
                 and isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, str)}
        found.append(Load(module, node.lineno, package, filename, frozenset(names)))
    return found


def _sources(root: pathlib.Path) -> list[pathlib.Path]:
    """The modules under ``root`` (this test, which loads every file by its path, aside)."""
    this = pathlib.Path(__file__).resolve()
    return sorted(p for p in root.rglob("*.py")
                  if "__pycache__" not in p.parts and p.resolve() != this)


def _package_loads() -> list[Load]:
    return [load for module in _sources(PACKAGE) for load in _loads(module)]


def _sql_files() -> list[pathlib.Path]:
    return sorted(p for p in PACKAGE.rglob("*.sql") if MIGRATIONS not in p.parents)


def test_the_scan_finds_the_loads_it_judges() -> None:
    """The scan sees the known owners, so an empty result cannot pass the tests below."""
    owners = {load.module.relative_to(PACKAGE).as_posix() for load in _package_loads()}
    assert {"core/queue.py", "core/runs.py", "worker/tasks.py",
            "pipeline/judging/cache.py"} <= owners


def test_the_package_imports_the_loader_one_way() -> None:
    """``from citerun.core import sql`` then ``sql.load``: a module that imported ``load``
    by another name would load files this test does not see."""
    for module in _sources(PACKAGE):
        tree = ast.parse(module.read_text(encoding="utf-8"), str(module))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "citerun.core.sql":
                pytest.fail(f"{module.relative_to(REPO)}: import the module "
                            "(from citerun.core import sql), not its names")
            if isinstance(node, ast.ImportFrom) and node.module == "citerun.core":
                for alias in node.names:
                    assert not (alias.name == "sql" and alias.asname not in (None, "sql")), (
                        f"{module.relative_to(REPO)}: sql imported as {alias.asname}")


@pytest.mark.parametrize("path", _sql_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_each_sql_file_is_loaded_by_the_one_module_beside_it_named_after_it(
        path: pathlib.Path) -> None:
    owner = path.with_suffix(".py")
    assert owner.exists(), f"{path.relative_to(REPO)} has no module {owner.name} beside it"
    loaders = sorted({load.where() for load in _package_loads() if load.file == path})
    assert loaders, f"no module loads {path.relative_to(REPO)}"
    strangers = [w for w in loaders if not w.startswith(str(owner.relative_to(REPO)) + ":")]
    assert not strangers, (
        f"{path.relative_to(REPO)} is loaded by {strangers} as well as its owner "
        f"{owner.relative_to(REPO)}: call the owner's functions instead")


def test_every_loaded_file_exists_and_has_the_statements_taken_from_it() -> None:
    """Beyond the package, the benches and the tests load the owner's file too; each name
    they take from it is one of its statements."""
    loads = _package_loads() + [load for root in (REPO / "bench", REPO / "tests")
                                for module in _sources(root) for load in _loads(module)]
    for load in loads:
        assert load.file.is_file(), f"{load.where()}: no file {load.package}/{load.filename}"
        missing = sorted(load.names - set(sql.load(load.package, load.filename)))
        assert not missing, f"{load.where()}: {load.package}/{load.filename} has no {missing}"


@pytest.mark.parametrize("path", _sql_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_each_statement_is_used_by_its_owner(path: pathlib.Path) -> None:
    """A statement nobody runs is gone, not kept: each is named in its owner module."""
    owner = path.with_suffix(".py")
    statements = sql.load(".".join(path.parent.relative_to(PACKAGE.parent).parts), path.name)
    literals = {n.value for n in ast.walk(ast.parse(owner.read_text(encoding="utf-8")))
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    unused = sorted(set(statements) - literals)
    assert not unused, f"{owner.relative_to(REPO)} never runs {unused} of {path.name}"


def test_the_pipeline_loads_no_file_of_the_worker_or_above() -> None:
    """"The pipeline reaches no worker file": no pipeline module loads SQL of the worker,
    the operator, the web, the CLI, local or kube (only its own folders' and the core's)."""
    strays = [f"{load.where()} loads {load.package}/{load.filename}"
              for load in _package_loads()
              if load.module.is_relative_to(PACKAGE / "pipeline")
              and not any(load.package == allowed or load.package.startswith(allowed + ".")
                          for allowed in PIPELINE_MAY_LOAD)]
    assert not strays, strays


def test_every_sql_file_ships_with_the_package() -> None:
    """pyproject's package-data names each SQL file's folder, so an installed citerun has
    the statements its modules load (and the migrations)."""
    import fnmatch
    import tomllib
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = data["tool"]["setuptools"]["package-data"]
    for path in sorted(PACKAGE.rglob("*.sql")):
        package = ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        patterns = shipped.get(package, [])
        assert any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns), (
            f"{path.relative_to(REPO)} is not in [tool.setuptools.package-data] {package!r}")
