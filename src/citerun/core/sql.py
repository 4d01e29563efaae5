"""Named SQL statements loaded from ``.sql`` files.

Each statement sits under a ``-- name: verb_noun --`` header followed by one comment line
saying what it does. Files are read once at import; no SQL is ever built with string
formatting (procrastinate and River do the same).
"""

from __future__ import annotations

import re
from importlib import resources
from types import MappingProxyType
from typing import Mapping

from citerun.core import errors

_HEADER = re.compile(r"^-- name: ([a-z0-9_]+) --\s*$", re.MULTILINE)


class SqlFileError(errors.CiterunError):
    """A .sql file is malformed."""


def parse(text: str, origin: str) -> Mapping[str, str]:
    """Split ``text`` into ``{name: statement}`` by its ``-- name:`` headers."""
    parts = _HEADER.split(text)
    statements: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        if name in statements:
            raise SqlFileError(f"{origin}: statement {name!r} defined twice")
        statement = body.strip()
        if not statement:
            raise SqlFileError(f"{origin}: statement {name!r} is empty")
        statements[name] = statement
    return MappingProxyType(statements)


def load(package: str, filename: str) -> Mapping[str, str]:
    """Load the statements of ``filename`` shipped inside ``package``."""
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    return parse(text, f"{package}/{filename}")
