"""The scripts of bench/ as modules, for the tests of what they compute.

bench/ is no package: its scripts import each other from beside them, and their
dataclasses look their module up in ``sys.modules``, so a script is registered there
under its own name before it runs, and bench/ is put on ``sys.path``.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def load(name: str) -> types.ModuleType:
    """``bench/NAME.py``, loaded once per test process."""
    if name in sys.modules:
        return sys.modules[name]
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
