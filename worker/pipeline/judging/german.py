"""German claims against English sources: detect German and gloss it word by word.

A German thesis cites English papers. WordLlama's vectors and the word-overlap
features are English, so a German claim is first glossed into English with the
hand-written glossary ``german_glossary.tsv`` (function words the judge needs —
negation, comparison, causation — and the general vocabulary of study reports). A
word not in the glossary is split as a compound ("Brustkrebs" -> "breast cancer") when
its parts are entries, else kept: gene and protein names, abbreviations and many
Latin-Greek technical terms are spelt the same in both languages. Deterministic, no
model; what it cannot do is reorder (German verb-final clauses stay verb-final, which a
bag-of-words reading mostly tolerates) or know words outside the glossary.
"""

from __future__ import annotations

import functools
import pathlib
import re

GLOSSARY = pathlib.Path(__file__).with_name("german_glossary.tsv")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Frequent German function words that English does not share: their share says German.
_MARKERS = frozenset(
    "der die das den dem des ein eine einer eines einem einen und ist sind wird werden "
    "wurde wurden nicht kein keine mit von bei nach für über durch auf aus zur zum im "
    "auch sich dass als oder haben hat".split()
)


@functools.cache
def glossary() -> dict[str, str]:
    """The glossary, German (case-folded) -> English."""
    entries: dict[str, str] = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        german, _, english = line.partition("\t")
        entries.setdefault(german.strip().casefold(), english.strip())
    return entries


def is_german(text: str) -> bool:
    """Whether ``text`` reads as German: German function words or umlauts in it."""
    words = [w.casefold() for w in _WORD.findall(text)]
    if not words:
        return False
    markers = sum(1 for w in words if w in _MARKERS)
    umlauts = sum(1 for w in words if any(c in w for c in "äöüß"))
    return markers / len(words) >= 0.12 or (markers >= 2 and umlauts >= 1)


@functools.lru_cache(maxsize=16384)
def _word(word: str) -> str:
    folded = word.casefold()
    known = _entry(folded)
    if known is not None:
        return known
    # A compound: the longest known last part, and the rest glossed the same way (or kept:
    # "Statintherapie" -> "statin therapy").
    for cut in range(3, len(folded) - 3):
        head, tail = folded[:cut], folded[cut:]
        tail_gloss = _entry(tail)
        if tail_gloss is not None:
            if _entry(head) is None and head.endswith("s") and _entry(head[:-1]) is not None:
                head = head[:-1]  # the linking s: "Gesundheitsrisiko"
            return f"{_word(head)} {tail_gloss}"
    return word


def _entry(folded: str) -> str | None:
    """The gloss of a word or of its genitive/plural stem ("Infarkts" ~ "Infarkt")."""
    entries = glossary()
    for form in (folded, folded[:-1] if folded.endswith("s") else "",
                 folded[:-2] if folded.endswith(("es", "en")) else ""):
        if len(form) >= 3 and form in entries:
            return entries[form]
    return None


def gloss(text: str) -> str:
    """``text`` with each German word the glossary knows replaced by its English gloss."""
    glossed = _WORD.sub(lambda m: _word(m.group(0)), text)
    return " ".join(glossed.split())


def to_english(text: str) -> str:
    """The gloss of ``text`` if it reads as German, else ``text`` unchanged."""
    return gloss(text) if is_german(text) else text
