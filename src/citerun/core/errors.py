"""The root of citerun's exceptions.

Every error citerun raises on purpose derives from :class:`CiterunError`; a class's
docstring is its default message, so ``raise SomeError()`` still says something useful.
"""

from __future__ import annotations


class CiterunError(Exception):
    """citerun failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip() or type(self).__name__)


def code_of(stored: str | None) -> str:
    """A stable, short code for an error stored as text (a task's ``last_error``, which
    may hold a traceback or a server's answer): the exception class in snake case
    (``...JudgeUnavailable: ...`` -> ``judge_unavailable``), ``error`` when none is seen.
    What reaches a run's status, events and report is this code, never the text."""
    import re

    last = (stored or "").strip().splitlines()[-1:] or [""]
    name = last[0].split(":", 1)[0].rsplit(".", 1)[-1].strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,80}", name):
        return "error"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
