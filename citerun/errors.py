"""The root of citerun's exceptions.

Every error citerun raises on purpose derives from :class:`CiterunError`; a class's
docstring is its default message, so ``raise SomeError()`` still says something useful.
"""

from __future__ import annotations


class CiterunError(Exception):
    """citerun failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip() or type(self).__name__)
