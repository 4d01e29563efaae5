"""The CI examples for a thesis repository (issue 39) run a `citerun verify` the real
parser accepts, gated by the documented default, and the README points at them."""

from __future__ import annotations

import pathlib
import shlex

import pytest
import yaml

from citerun.cli import main as cli, gate

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "ci").glob("*.yml"))


def _commands(node: object) -> list[str]:
    """Every string in the YAML document that runs `citerun verify`."""
    if isinstance(node, dict):
        return [c for v in node.values() for c in _commands(v)]
    if isinstance(node, list):
        return [c for v in node for c in _commands(v)]
    return [node] if isinstance(node, str) and node.startswith("citerun verify") else []


def test_there_are_examples_and_the_readme_points_at_each() -> None:
    assert len(EXAMPLES) >= 2
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in EXAMPLES:
        assert f"(examples/ci/{path.name})" in readme


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_example_gates_with_the_ci_default(path: pathlib.Path) -> None:
    commands = _commands(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert len(commands) == 1, commands
    argv = [word.replace("$THESIS", "thesis.pdf").replace("$SOURCES", "sources")
            for word in shlex.split(commands[0])]
    args = cli.build_parser().parse_args(argv[1:])
    assert args.command == "verify" and args.thesis == "thesis.pdf"
    assert args.sources == ["sources"] and args.out.endswith(".html")
    assert args.fail_on == frozenset(gate.CI_FAIL_ON)
