"""The forms text is compared in, the DOI and the year: one owner for every stage.

Parsing, layout and citation matching each compare text with other text (a reference
entry's surname with a source's author, a source's metadata title with its first page,
an evidence quote with the lines of its page). They fold it the same way, by
:func:`words`, in one of two alphabets: ``transliterate`` (the default) is ASCII, so
"Müller" and "Mueller" are one key and an accent does not matter; without it every
script's letters stay as they are, for text compared with itself (a quote with its own
page), where a Greek or Chinese quote must not fold to nothing. The ASCII alphabet is
the core's (:func:`citerun.core.citekeys.ascii_words`), so the run spec compares citation
keys exactly as the matchers do.

What a DOI and a year look like is written here once, for the PDF's text, the reference
entries, the markers and the writer's libraries alike (``tests/unit/test_facts_owned.py``
fails on a DOI or year pattern written anywhere else).
"""

from __future__ import annotations

import re

from citerun.core import citekeys

_DOI_START = r"10\.\d{4,9}/"
# A DOI as printed in a reference entry or on a first page; a closing full stop, comma
# or bracket belongs to the sentence around it, not to the DOI.
DOI = re.compile(rf"\b({_DOI_START}[^\s\"<>]+[^\s\"<>.,;)\]])")
# A DOI as a library's field holds it: the field is the DOI, so what follows the prefix
# up to a space is kept (an SICI DOI carries "<", ">" and brackets).
FIELD_DOI = re.compile(rf"{_DOI_START}\S+")
# The resolver a library's DOI field may start with ("https://doi.org/", "doi:").
DOI_RESOLVER = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)

# A publication year in running text or a reference entry: 1600-2099.
YEAR = r"(?:1[6-9]|20)\d{2}"
# A year of the last two centuries, as a copyright or venue line of a first page or a
# byline's date prints it.
RECENT_YEAR = r"(?:19|20)\d{2}"
# The year in a library's date field ("2020", "{2020}", "2019-05-02"): any four digits,
# the field says it is a year (a history thesis cites 1543).
FIELD_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")


def field_year(text: str | None) -> int | None:
    """The year of a library's date field, or None."""
    match = FIELD_YEAR.search(text) if text else None
    return int(match[1]) if match else None

_ANY_WORD = re.compile(r"[^\W_]+")


def words(text: str, *, transliterate: bool = True) -> list[str]:
    """The case-folded runs of letters and digits of ``text``.

    With ``transliterate`` German umlauts become two letters, accents go and what is
    not an ASCII letter or digit then separates words ("Müller-Lüdenscheidt" ->
    ["mueller", "luedenscheidt"]); without it every script's letters and digits are
    kept ("Αθήνα 2020" -> ["αθήνα", "2020"]).
    """
    if transliterate:
        return citekeys.ascii_words(text)
    return _ANY_WORD.findall(text.casefold())


def fold(text: str, *, transliterate: bool = True) -> str:
    """The words of :func:`words` run together: "Müller-Lüdenscheidt" -> "muellerluedenscheidt"."""
    return "".join(words(text, transliterate=transliterate))


def fold_words(text: str, *, transliterate: bool = True) -> str:
    """The words of :func:`words` separated by single spaces, for fuzzy comparison."""
    return " ".join(words(text, transliterate=transliterate))
