"""How much of a writer's file the readers take: the bounds on LaTeX, Word and BibTeX
input, as settings.

The worker's parse child reads them from ``CITERUN_LIMITS__WRITER__*``
(:class:`citerun.pipeline.settings.LimitSettings`, e.g.
``CITERUN_LIMITS__WRITER__LATEX__MAX_INCLUDES``); the readers take them as arguments and
their defaults hold real theses with room to spare. A hostile file over a limit is refused
(or the excess is left out and reported), with the limit named.
"""

from __future__ import annotations

import pydantic


class _Limits(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class LatexLimits(_Limits):
    """A LaTeX thesis (:mod:`.latex`)."""

    max_depth: int = pydantic.Field(
        20, ge=1, description="How deep \\input files, packages, conditionals and macros "
        "expanding into macros may nest.")
    max_total_chars: int = pydantic.Field(
        20 * 1024 * 1024, ge=1, description="Characters of LaTeX read in all, every "
        "included file and macro expansion counted.")
    max_includes: int = pydantic.Field(
        5_000, ge=1, description="\\input/\\include files read in all, each reading "
        "counted (issue 41: 20 tiny files each reading the next ten times, 2.4 KB, took "
        "18.6 s of CPU to reach the text cap).")
    max_macro_body: int = pydantic.Field(
        2_000, ge=1, description="Characters of a \\newcommand body that is expanded; a "
        "longer one is not.")
    max_macros: int = pydantic.Field(
        10_000, ge=1, description="Macros expanded; those defined beyond are not.")
    max_skipped: int = pydantic.Field(
        1_000, ge=1, description="Things left out listed one by one; beyond this they "
        "are counted.")
    max_quoted_chars: int = pydantic.Field(
        10_000, ge=1, description="Characters of a quotation of several sentences taken "
        "whole into its claim.")
    max_bibitems: int = pydantic.Field(
        5_000, ge=1, description="Entries of a hand-made reference list "
        "(thebibliography) read.")
    max_cite_groups: int = pydantic.Field(
        100, ge=1, description="Key groups of one multi-cite (\\cites[..]{a}[..]{b}...) "
        "read.")


class WriterLimits(_Limits):
    """The readers of a writer's files (``CITERUN_LIMITS__WRITER__*``)."""

    latex: LatexLimits = pydantic.Field(
        default_factory=LatexLimits, description="A LaTeX thesis "
        "(CITERUN_LIMITS__WRITER__LATEX__MAX_INCLUDES, ...).")
