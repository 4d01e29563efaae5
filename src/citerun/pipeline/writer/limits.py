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


class DocxLimits(_Limits):
    """A Word thesis (:mod:`.docx`): its XML parts, fields and the data in the fields."""

    max_core_bytes: int = pydantic.Field(
        65_536, ge=1, description="Bytes of a Word document's core properties part read "
        "for its title (Word writes about 1 KB); a bigger one gives no title.")
    max_depth: int = pydantic.Field(
        256, ge=1, description="How deep elements of an XML part (or of an EndNote field's "
        "XML) may nest: Word's deepest real nesting (tables in tables in text boxes) stays "
        "under a hundred.")
    max_elements: int = pydantic.Field(
        4_000_000, ge=1, description="Elements of one XML part: the tree is held in memory "
        "(about 100 bytes an element); a 300-page thesis has about a million.")
    max_instruction: int = pydantic.Field(
        4 * 1024 * 1024, ge=1, description="Characters of one field code or of one field's "
        "data: a Zotero field citing twenty items with their abstracts is about 200 kB.")
    max_fields: int = pydantic.Field(
        200_000, ge=1, description="Fields of one document (citations, page numbers, "
        "cross-references).")
    max_open_fields: int = pydantic.Field(
        64, ge=1, description="Fields open inside one another (Word nests a few).")
    max_inflated: int = pydantic.Field(
        16 * 1024 * 1024, ge=1, description="Bytes a Paperpile field's compressed data may "
        "inflate to (a field citing ten items with abstracts is about 30 kB); a field over "
        "it is left out and reported.")
    max_citavi_objects: int = pydantic.Field(
        200_000, ge=1, description="JSON objects of one Citavi placeholder; a field over it "
        "is left out and reported.")


class BibLimits(_Limits):
    """A BibTeX/BibLaTeX library's entries (:mod:`.bib`); the file's size and entries are
    the library's limits (:class:`~.model.LibraryLimits`)."""

    max_field_chars: int = pydantic.Field(
        2_000, ge=1, description="Characters of a title or name decoded from LaTeX: a "
        "longer field is cut, and one over ten times this is read no further (a title is "
        "never this long; pylatexenc recurses per brace group, so its input is kept small).")
    max_names: int = pydantic.Field(
        200, ge=1, description="Names of one entry read (a physics collaboration lists "
        "thousands; mapping reads 100).")
    max_joined_chars: int = pydantic.Field(
        100_000, ge=1, description="Characters a value joined with BibTeX's # may reach, "
        "an @string's or a field's: a .bib joining more is refused with this limit named "
        "(issue 48: a field naming a big @string a thousand times, or an @string doubling "
        "itself 30 times, is gigabytes from a small file; a real library joins a journal's "
        "or a proceedings' name).")
    max_items_chars: int = pydantic.Field(
        2_000_000, ge=1, description="Characters the entries of one .bib may give together "
        "(keys, titles, surnames, file paths, DOIs), or twice the file's characters where "
        "that is more: over it the .bib is refused with this limit named. A real library "
        "gives fewer than its file holds (each entry has more than is read); entries that "
        "name big @string macros or a crossref parent each repeat them (issue 48: a 65 KB "
        ".bib gave 48 MB to store).")


class WriterLimits(_Limits):
    """The readers of a writer's files (``CITERUN_LIMITS__WRITER__*``)."""

    latex: LatexLimits = pydantic.Field(
        default_factory=LatexLimits, description="A LaTeX thesis "
        "(CITERUN_LIMITS__WRITER__LATEX__MAX_INCLUDES, ...).")
    docx: DocxLimits = pydantic.Field(
        default_factory=DocxLimits, description="A Word thesis "
        "(CITERUN_LIMITS__WRITER__DOCX__MAX_FIELDS, ...).")
    bib: BibLimits = pydantic.Field(
        default_factory=BibLimits, description="The entries of a .bib library "
        "(CITERUN_LIMITS__WRITER__BIB__MAX_NAMES, ...).")
    max_title_chars: int = pydantic.Field(
        300, ge=1, description="Characters of a thesis's own title (LaTeX's \\title, "
        "Word's properties) kept: a longer one is cut with an ellipsis (a name on a page, "
        "not a paragraph).")
