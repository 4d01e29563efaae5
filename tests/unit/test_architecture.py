"""The layers point one way (import-linter contracts) and the package type-checks
(mypy --strict), both configured in pyproject.toml, run over src/ as it is; and no module
grows past 500 lines.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SRC = REPO / "src"


def test_import_contracts_hold(tmp_path: pathlib.Path) -> None:
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.fail("import-linter is not installed (it is in the test extra)")
    result = subprocess.run([lint, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and "Analyzed" in result.stdout, result.stdout


def test_mypy_strict_passes_on_the_package(tmp_path: pathlib.Path) -> None:
    mypy = shutil.which("mypy")
    if mypy is None:
        pytest.fail("mypy is not installed (it is in the test extra)")
    result = subprocess.run([mypy, "--no-incremental", "-p", "citerun"], cwd=REPO,
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "MYPYPATH": str(SRC)})
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "Success: no issues found" in result.stdout


MAX_MODULE_LINES = 500

def _line_count(path: pathlib.Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_over_500_lines() -> None:
    """A module is cut along its seams before it passes 500 lines (issue 42: seven were,
    the largest 1,744); none is exempt."""
    counts = {path.relative_to(SRC).as_posix(): _line_count(path)
              for path in sorted(SRC.rglob("*.py"))}
    assert len(counts) > 50, f"found only {len(counts)} modules under {SRC}"
    over = {name: n for name, n in counts.items() if n > MAX_MODULE_LINES}
    assert not over, (f"modules over {MAX_MODULE_LINES} lines; cut them along their "
                      f"seams: {over}")


#: The package root: its face and the folders that are its layers (docs/architecture.md).
FACE = {"__init__.py", "__main__.py", "py.typed"}
LAYERS = {"core", "pipeline", "local", "kube", "worker", "operator", "web", "cli"}


def test_the_package_root_holds_its_face_and_its_layers_only() -> None:
    """A module added beside the folders would belong to no layer, and no contract would
    hold it (issue 42: the root once mixed 23 modules of four layers)."""
    root = SRC / "citerun"
    entries = {p.name for p in root.iterdir() if p.name != "__pycache__"}
    assert entries == FACE | LAYERS, (f"the root holds {sorted(entries - FACE - LAYERS)} "
                                      f"beside its face and layers; missing: "
                                      f"{sorted((FACE | LAYERS) - entries)}")


def test_every_layer_is_named_by_the_import_contracts() -> None:
    """The import-linter contracts name folders: each layer is in one, so a new module is
    held wherever it is put."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    named: set[str] = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        for key in ("source_modules", "modules", "forbidden_modules"):
            named.update(contract.get(key, ()))
    assert {f"citerun.{layer}" for layer in LAYERS} <= named, sorted(named)
    assert all(name.count(".") == 1 for name in named), (
        f"contracts name folders, not modules: {sorted(n for n in named if n.count('.') > 1)}")
