"""Citation keys: the ASCII folding they are compared in, and which keys a run may name.

Core, so that the run spec (:mod:`citerun.core.runspec`) and ``citerun verify --key`` refuse
what the mapping could never use with the very rule the mapping compares keys by: the
pipeline's word folding (:mod:`citerun.pipeline.normalize`) and its
``normalize_key`` are this module's. Two sources whose keys fold to one key would fail the
run's extraction on every attempt, and a key that folds to nothing matches no citation,
so both are refused before any work.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from citerun.core import errors

_UMLAUTS = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})
_ASCII_WORD = re.compile(r"[a-z0-9]+")


def ascii_words(text: str) -> list[str]:
    """The case-folded ASCII words of ``text``: German umlauts become two letters,
    accents go, and what is then not an ASCII letter or digit separates words
    ("Müller-Lüdenscheidt" -> ["mueller", "luedenscheidt"])."""
    text = unicodedata.normalize("NFKD", text.casefold().translate(_UMLAUTS))
    return _ASCII_WORD.findall("".join(c for c in text if not unicodedata.combining(c)))


def normalize_key(key: str) -> str:
    """The form keys are compared in: "[1]" -> "1", "Müller2018" -> "mueller2018"."""
    return "".join(ascii_words(key))


class KeyConflict(errors.CiterunError, ValueError):
    """Explicit citation keys that no mapping can use: two sources' keys that fold to one
    key, or a key that folds to nothing. A ValueError too, so a pydantic validator that
    raises it reports it as the spec's own problem."""


def check_explicit(keys_by_source: Iterable[tuple[str, Iterable[str]]]) -> None:
    """Raise :class:`KeyConflict` naming every unusable key and its source.

    ``keys_by_source`` is (source name, its keys) in order. One source may spell a key
    several ways ("Smith-2020" and "smith2020"): they are one key of one source.
    """
    owner: dict[str, tuple[str, str]] = {}  # folded key -> (source, key as given)
    problems: list[str] = []
    for source, keys in keys_by_source:
        for key in keys:
            folded = normalize_key(key)
            if not folded:
                problems.append(f"the citation key {key!r} of {source} has no letter or "
                                "digit, so no citation can match it")
                continue
            first = owner.setdefault(folded, (source, key))
            if first[0] != source:
                problems.append(f"the citation keys {first[1]!r} of {first[0]} and {key!r} of "
                                f"{source} are one key ({folded!r}); give it to one source")
    if problems:
        raise KeyConflict("; ".join(problems))
