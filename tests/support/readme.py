"""The README's fenced blocks under one heading, as the recipe tests read them: a test
runs what the README shows, so the README changing under it fails it."""

from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def blocks(heading: str, *languages: str) -> tuple[str, ...]:
    """The first ```LANGUAGE block of each of ``languages`` in the section ``heading``
    opens (to the next ``##`` or ``###`` heading); the heading must be there once."""
    text = README.read_text(encoding="utf-8")
    assert text.count(heading) == 1, f"README.md has no one section {heading!r}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    found = [re.search(rf"```{language}\n(.*?)```", section, re.S) for language in languages]
    assert all(found), f"the section's {', '.join('```' + lang for lang in languages)} blocks"
    return tuple(match.group(1) for match in found if match is not None)
