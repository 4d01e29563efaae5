"""German claims against English sources: detect German and gloss it word by word.

A German thesis cites English papers. WordLlama's vectors and the word-overlap
features are English, so a German claim is first glossed into English, word by word,
from two dictionaries:

1. the hand-written glossary ``german_glossary.tsv``, first: the function words the
   judge needs (negation, comparison, causation) and the general vocabulary of study
   reports, each with the one English word the judge's cues know;
2. Ding, the German-English dictionary of TU Chemnitz (Debian package ``trans-de-en``,
   GPL-2+, read from ``/usr/share/trans/de-en`` at run time, not shipped here): some
   300,000 German word forms, plural nouns and participles included, with their English
   translations. A German word often has several; a human translator picks the one the
   context calls for, and so does the glosser: the first translation whose words the
   cited source uses ("zitiert" -> "cited" next to a paper on citations, not "summoned"),
   else the one the dictionary gives most often.

A word neither knows is tried without an inflection ending ("infektiöser" ->
"infektiös"), then, if it is a noun (capitalised), as a compound of known words
("Erythrozytentransfusionen" -> "erythrocytes transfusions"), else kept: gene and
protein names, abbreviations (never translated: "EMA" stays "EMA") and many Latin-Greek
technical terms are spelt the same in both languages. Deterministic, no model; what it
cannot do is reorder (German verb-final clauses stay verb-final, which the judge's
bag-of-words reading mostly tolerates). Without the Ding file (a machine without
``trans-de-en``) only the glossary is used, and German claims are judged less well
(docs/benchmarks.md has both figures).
"""

from __future__ import annotations

import collections
import collections.abc
import functools
import logging
import pathlib
import re

import rapidfuzz

from citerun.pipeline.judging import language

log = logging.getLogger(__name__)

GLOSSARY = pathlib.Path(__file__).with_name("german_glossary.tsv")
DING = pathlib.Path("/usr/share/trans/de-en")  # Debian's trans-de-en
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Frequent German function words that English does not share: their share says German.
_MARKERS = frozenset(
    "der die das den dem des ein eine einer eines einem einen und ist sind wird werden "
    "wurde wurden nicht kein keine mit von bei nach für über durch auf aus zur zum im "
    "auch sich dass als oder haben hat".split()
)
# Inflection endings of adjectives and nouns, longest first: "infektiöser" -> "infektiös".
_ENDINGS = ("en", "em", "er", "es", "e", "s", "n")
# A cognate: a word of 7 letters and more, 85% alike in spelling once umlauts and k/z are
# English; shorter words are too often alike by chance ("Rate" ~ "rat").
_COGNATE_LENGTH = 7
_COGNATE_SCORE = 85.0
_ENGLISH_SPELLING = str.maketrans({"ä": "e", "ö": "o", "ü": "u", "ß": "ss", "k": "c", "z": "c"})
_SHORTEST_PART = 4  # compound parts from the big dictionary: "Maler" is no part of "mesenchymalen"

# German form -> its English translations joined by tabs (one string a form: 60 MB less
# than tuples for Ding's 300,000 forms).
Dictionary = collections.abc.Mapping[str, str]


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


# Ding's notes: {f} gender and part of speech, [med.] domain, (erwähnen) sense, <variants>,
# /TVT/ abbreviations; and the placeholders of objects and pronoun forms.
_NOTES = re.compile(r"\{[^}]*\}|\[[^\]]*\]|\([^)]*\)|<[^>]*>|/[^/\s]+/")
_PLACEHOLDERS = frozenset("jdn. jdm. jds. etw. sb. sth. sb.'s sth.'s sich to".split())
_ONE_WORD = re.compile(r"[^\W\d_][^\W\d_-]*(?:-[^\W\d_]+)*", re.UNICODE)
_MOST_SENSES = 8


def _clean(text: str) -> str:
    words = _NOTES.sub(" ", text).split()
    return " ".join(w for w in words if "/" not in w and w not in _PLACEHOLDERS)


def parse_ding(lines: collections.abc.Iterable[str]) -> dict[str, str]:
    """Ding's lines ("Träger {m} | Träger {pl} :: carrier | carriers") -> one-word German
    form (case-folded) -> its English translations (joined by tabs), in the order the file
    gives them; a translation given by several entries is listed once per entry (its
    weight)."""
    senses: dict[str, list[str]] = collections.defaultdict(list)
    for line in lines:
        german, separator, english = line.rstrip("\n").partition(" :: ")
        if not separator or line.startswith("#"):
            continue
        german_parts, english_parts = german.split(" | "), english.split(" | ")
        if len(german_parts) != len(english_parts):  # not aligned: only the headword
            german_parts, english_parts = german_parts[:1], english_parts[:1]
        for german_part, english_part in zip(german_parts, english_parts):
            translation = next((t for t in map(_clean, english_part.split(";")) if t), "")
            if not translation:
                continue
            for word in map(_clean, german_part.split(";")):
                if _ONE_WORD.fullmatch(word) and len(found := senses[word.casefold()]) < _MOST_SENSES:
                    found.append(translation)
    return {word: "\t".join(found) for word, found in senses.items()}


@functools.cache
def ding(path: pathlib.Path = DING) -> Dictionary:
    """Ding's dictionary at ``path``, parsed once per process (3-5 CPU-s, 80-90 MB); empty,
    with one warning, where the file is missing."""
    try:
        with path.open(encoding="utf-8") as lines:
            return parse_ding(lines)
    except OSError as exc:
        log.warning("German claims: no Ding dictionary at %s (%s); glossing with the "
                    "built-in glossary only (apt-get install trans-de-en)", path, exc)
        return {}


def is_german(text: str) -> bool:
    """Whether ``text`` reads as German: German function words or umlauts in it."""
    words = [w.casefold() for w in _WORD.findall(text)]
    if not words:
        return False
    markers = sum(1 for w in words if w in _MARKERS)
    umlauts = sum(1 for w in words if any(c in w for c in "äöüß"))
    return markers / len(words) >= 0.12 or (markers >= 2 and umlauts >= 1)


class Glosser:
    """Glosses German text with the glossary and ``dictionary``, choosing among a word's
    translations by the words of ``context`` (the cited source's content words)."""

    def __init__(self, dictionary: Dictionary, context: collections.abc.Set[str] = frozenset()) -> None:
        self._dictionary = dictionary
        self._context = context
        self._done: dict[str, str] = {}

    def gloss(self, text: str) -> str:
        glossed = _WORD.sub(lambda m: self._word(m.group(0)), text)
        return " ".join(glossed.split())

    def _word(self, word: str) -> str:
        if word not in self._done:
            self._done[word] = self._translate(word)
        return self._done[word]

    def _translate(self, word: str) -> str:
        folded = word.casefold()
        if sum(c.isupper() for c in word) >= 2:  # an abbreviation or a name: "EMA", "ApoE"
            return glossary().get(folded, word)
        known = self._entry(folded)
        if known is not None:
            return known
        cognate = self._cognate(folded)
        if cognate is not None:
            return cognate
        if not word[0].isupper():  # compounds are nouns; "mesenchymalen" is no "mesenchy-malen"
            return word
        # A compound: the longest known last part, and the rest glossed the same way (or
        # kept: "Statintherapie" -> "statin therapy"), without a linking s
        # ("Gesundheitsrisiko").
        for cut in range(3, len(folded) - 2):
            head, tail = folded[:cut], folded[cut:]
            tail_gloss = self._entry(tail)
            if tail_gloss is not None:
                if head.endswith("s") and self._entry(head) is None and self._entry(head[:-1]) is not None:
                    head = head[:-1]
                return f"{self._translate(head.capitalize())} {tail_gloss}"
        return word

    def _entry(self, folded: str) -> str | None:
        """The gloss of a word, or of it without an inflection ending ("Infarkts" ~ "Infarkt");
        the big dictionary only for words of 4 letters and more ("Tau" is no "dew")."""
        forms = [folded] + [folded[: -len(e)] for e in _ENDINGS if folded.endswith(e)]
        entries = glossary()
        for form in forms:
            if (len(form) >= 3 or form == folded) and form in entries:
                return entries[form]
        for form in forms:
            if len(form) >= _SHORTEST_PART and form in self._dictionary:
                return self._choose(tuple(self._dictionary[form].split("\t")))
        return None

    def _cognate(self, folded: str) -> str | None:
        """The source's word spelt (almost) like ``folded`` once German spelling is undone:
        Latin-Greek terms are cognates ("Hyperfibrinogenämie" ~ "hyperfibrinogenemia",
        "femoropoplitealer" ~ "femoropopliteal")."""
        if len(folded) < _COGNATE_LENGTH or not self._context:
            return None
        spelt = folded.translate(_ENGLISH_SPELLING)
        best = rapidfuzz.process.extractOne(spelt, self._context, scorer=rapidfuzz.fuzz.ratio,
                                            score_cutoff=_COGNATE_SCORE)
        return None if best is None else str(best[0])

    def _choose(self, translations: tuple[str, ...]) -> str:
        for translation in translations:
            words = language.content_words(translation)
            if words and all(language.found(w, self._context) for w in words):
                return translation
        counts = collections.Counter(translations)
        # The translation most entries give; of those, the shortest, then the first.
        return min(translations, key=lambda t: (-counts[t], len(t.split()), translations.index(t)))


def gloss(text: str, context: collections.abc.Set[str] = frozenset(),
          dictionary: Dictionary | None = None) -> str:
    """``text`` with each German word replaced by its English gloss."""
    return Glosser(ding() if dictionary is None else dictionary, context).gloss(text)


def to_english(text: str, context: collections.abc.Set[str] = frozenset(),
               dictionary: Dictionary | None = None) -> str:
    """The gloss of ``text`` if it reads as German, else ``text`` unchanged."""
    return gloss(text, context, dictionary) if is_german(text) else text
