"""The forms text is compared in, and the DOI as printed: one owner for every stage.

Parsing, layout and citation matching each compare text with other text (a reference
entry's surname with a source's author, a source's metadata title with its first page,
an evidence quote with the lines of its page). They fold it the same way, by
:func:`words`, in one of two alphabets: ``transliterate`` (the default) is ASCII, so
"Müller" and "Mueller" are one key and an accent does not matter; without it every
script's letters stay as they are, for text compared with itself (a quote with its own
page), where a Greek or Chinese quote must not fold to nothing. The ASCII alphabet is
the core's (:func:`citerun.citekeys.ascii_words`), so the run spec compares citation
keys exactly as the matchers do.
"""

from __future__ import annotations

import re

from citerun import citekeys

# A DOI as printed in a reference entry or on a first page; a closing full stop, comma
# or bracket belongs to the sentence around it, not to the DOI.
DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+[^\s\"<>.,;)\]])")

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
