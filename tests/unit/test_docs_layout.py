"""The README's tree and docs/architecture.md name the package's folders as they are
(issue 42): a folder added, renamed or removed fails here until both say so."""

from __future__ import annotations

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "citerun"


def _layers() -> set[str]:
    return {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def _readme_tree() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## How it works", 1)[1]
    return section.split("```", 2)[1]


def test_the_readme_tree_names_every_folder_of_the_package_and_only_those() -> None:
    named = set(re.findall(r"^src/citerun/([a-z_]+)/ ", _readme_tree(), re.M))
    assert named == _layers(), (f"README's tree names {sorted(named)}; the package has "
                                f"{sorted(_layers())}")


def test_every_path_the_docs_name_exists() -> None:
    """Each `src/citerun/...` path in the README's tree and in docs/architecture.md is a
    file or folder of the checkout."""
    texts = [_readme_tree(), (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")]
    missing = sorted({path for text in texts
                      for path in re.findall(r"src/citerun/[\w/.]*[\w/]", text)
                      if not (REPO / path.rstrip("/")).exists()})
    assert not missing, f"the docs name paths that do not exist: {missing}"


def test_the_architecture_document_has_a_row_for_each_folder() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `src/citerun/([a-z_]+)/", text, re.M))
    assert _layers() <= rows, f"docs/architecture.md has no row for {sorted(_layers() - rows)}"
