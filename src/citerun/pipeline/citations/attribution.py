"""Citations that name a work: what the marker is attached to, and whether a source is it.

"Bigtable relies on a lock service called Chubby [8]" does not cite [8] for what
Bigtable does; it says that [8] is the Chubby paper. Such a *naming* citation attributes
one thing to its source, that the source is the work it names, so that is what is
checked: the name (or its acronym, or the words the acronym stands for) in the source's
title, authors or first page. :func:`named_work` finds the name when extracting;
:func:`found_in` looks for it in a source. Both stay conservative: a marker at the end of
a clause that makes a claim ("X improves Y [3]") names nothing, and an unchecked name
leaves the citation to the ordinary judge of its whole sentence.

A marker names a work when, in its sentence,

- a naming word or a kind of work stands before the name the marker follows: "called
  Chubby [8]", "known as Spanner [3]", "the framework of MapReduce (Dean and Ghemawat,
  2004)";
- it follows an acronym as it is defined: "Generative Adversarial Network (GAN) [32]";
- it follows a technical name, an acronym of three capitals or a CamelCase word, that is
  not a place ("we encode them with BERT [5]", not "rates rose in the USA [3]") and, at
  the end of the sentence, is introduced as a thing used or listed ("with BERT [5].",
  not "this improves BERT [5].");
- it closes a sentence that defines such a name: "A Generative Adversarial Network
  (GAN) is a type of neural network architecture for generative modeling [32]";
- it is an author's narrative citation used as the name of a method: "trained as in
  Vaswani et al. (2017)" (not "following Smith et al. (2020), we set ...", which says
  what the source did).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import re

from citerun.pipeline import normalize, pdf
from citerun.pipeline.citations import model, patterns

# One word of a name: capitalised ("Chubby"), CamelCase ("MapReduce"), an acronym with
# digits or a hyphen ("GPT-3", "ResNet-50").
_WORD = rf"{patterns.CAP}[\w]*(?:-[\w]+)*"
_NAME = rf"(?P<name>{_WORD}(?:\s+{_WORD}){{0,4}})(?:\s*\((?P<acronym>{patterns.CAP}[\w-]*)\))?"
# Words that say that a name follows ("called Chubby") and kinds of work that are
# named ("the framework of MapReduce", "the Adam optimizer" is not matched: the kind
# must stand before the name).
_KINDS = ("framework", "system", "model", "method", "algorithm", "architecture", "tool",
          "toolkit", "library", "service", "language", "dataset", "corpus", "benchmark",
          "package", "software", "platform", "approach", "technique", "protocol", "database",
          "engine", "paradigm", "programming model")
_CUE = re.compile(
    rf"(?:\b(?:called|named|dubbed|termed|known\s+as)"
    rf"|\b(?:the|a|an|its|our)\s+(?:[\w-]+\s+)?(?:{'|'.join(_KINDS)})s?(?:\s+(?:of|called|named))?)"
    rf"\s+{_NAME}\s*$")
_NAME_AT_END = re.compile(rf"(?<![\w-]){_NAME}\s*$")
# "A Generative Adversarial Network (GAN) is a ...": the sentence defines the name.
_DEFINITION = re.compile(rf"^\s*(?:(?:A|An|The)\s+)?{_NAME}\s+(?:is|are)\s+(?:a|an|one|the)\b")
# An acronym of three capitals or more ("GAN", "GPT-3"; not "YH" of a table's author, not
# the plural "RCTs" of a kind of study) or a CamelCase word ("MapReduce", "word2Vec").
_TECHNICAL = re.compile(r"^(?:(?=(?:[A-Z0-9-]*[A-Z]){3})[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*"
                        r"|[A-Z]?[a-z]+[A-Z]\w*(?:-\w+)*)$")
# "in the USA [3]", "across the EU [2]": a place, not a work.
_PLACE = re.compile(r"\b(?:in|at|from|across|within|throughout|of)\s+(?:the\s+)?$", re.IGNORECASE)
# What may stand before a technical name that closes its sentence: "with BERT [5].",
# "metrics like ROUGE (Lin, 2004)."; "X improves BERT [3]." cites the claim.
_INTRODUCED = re.compile(r"(?:\b(?:with|using|uses?|used|like|and|or|via|including|namely|"
                         r"such\s+as|e\.g\.)|,)\s*$", re.IGNORECASE)
_AS_IN = re.compile(r"\bas\s+in\s*$", re.IGNORECASE)
_CLOSING = re.compile(r"^[\s.,;:!?)\]]*$")


def named_work(text: str, marker: model.Marker, sentence: tuple[int, int]) -> str | None:
    """The name ``marker`` is attached to in ``text`` ("Chubby", "Generative Adversarial
    Network (GAN)", "Vaswani et al."), or None when it cites the sentence's claim.

    ``sentence`` is the (start, end) of the marker's sentence in ``text``.
    """
    start, end = sentence
    before = text[start:max(start, marker.start)]
    after = text[marker.end:max(marker.end, end)]
    if marker.cut_start > marker.start:  # "Vaswani et al. (2017)": the names stay in the text
        names = text[marker.start:marker.cut_start].strip()
        return names if _AS_IN.search(before) and names else None
    cued = _CUE.search(before)
    if cued:
        return _spelled(cued)
    at_end = _NAME_AT_END.search(before)
    if at_end and at_end["acronym"] and _initials_match(at_end["acronym"], at_end["name"]):
        return _spelled(at_end)
    if at_end:
        last = at_end["name"].split()[-1]
        ahead = before[:before.rstrip().rfind(last)]
        if _TECHNICAL.match(last) and not _PLACE.search(ahead) and (
                not _CLOSING.match(after) or _INTRODUCED.search(ahead)):
            return last
    defined = _DEFINITION.match(before)
    if defined and _CLOSING.match(after) and (
            (defined["acronym"] and _initials_match(defined["acronym"], defined["name"]))
            or _TECHNICAL.match(defined["name"])):
        return _spelled(defined)
    return None


@dataclasses.dataclass(frozen=True)
class Found:
    """Where a source shows the name: ``quote`` is the title or the sentence holding it."""

    where: str
    quote: str


def found_in(name: str, title: str | None, authors: collections.abc.Sequence[str],
             first_page: str) -> Found | None:
    """Where the source with ``title``, ``authors`` and ``first_page`` shows ``name``.

    The title counts first, then the authors (for "Vaswani et al."), then a sentence of
    the first page (the abstract); None when none of them holds the name in any of its
    forms.
    """
    forms = _forms(name)
    if title and any(_holds(title, form, title=True) for form in forms):
        return Found("its title", title)
    surnames = {normalize.fold(a.split()[-1]) for a in authors if a.split()}
    named = [form for form in forms if normalize.fold(form) in surnames]
    if named:
        return Found("its authors", ", ".join(authors))
    for sentence in pdf.sentences(first_page):
        if any(_holds(sentence, form, title=False) for form in forms):
            return Found("its first page", sentence)
    return None


def _spelled(match: re.Match[str]) -> str:
    """"Generative Adversarial Network (GAN)" or "Chubby", as the match spells it; a
    defined acronym keeps only the words it stands for ("A Generative ..." loses "A")."""
    words = match["name"].split()
    acronym = match["acronym"]
    if acronym:
        letters = _letters(acronym)
        for k in range(1, len(words) + 1):
            if _initials(" ".join(words[-k:])) == letters:
                words = words[-k:]
                break
        return f"{' '.join(words)} ({acronym})"
    return " ".join(words)


def _forms(name: str) -> list[str]:
    """"Generative Adversarial Network (GAN)" -> the name and the acronym; "Vaswani et
    al." -> "Vaswani"."""
    bare = patterns.ET_AL_RE.sub("", name).strip()
    head, _, acronym = bare.partition(" (")
    forms = [head.strip()]
    if acronym.rstrip(")"):
        forms.append(acronym.rstrip(")"))
    return [f for f in forms if f]


def _holds(text: str, form: str, *, title: bool) -> bool:
    """Whether ``text`` spells ``form``: its words in a row ("Nets" for "Network"), or,
    for an acronym, the acronym itself or words with its initials."""
    words = normalize.words(text)
    wanted = normalize.words(form)
    if not wanted:
        return False
    loose = len(wanted) > 1  # "Nets" for "Network" only among other words of the name
    if any(all(_same(w, t, loose=loose) for w, t in zip(wanted, words[i:i + len(wanted)]))
           for i in range(len(words) - len(wanted) + 1)):
        return True
    if len(wanted) == 1 and _TECHNICAL.match(form) and form.upper() == form.removesuffix("s"):
        letters = _letters(form)
        # A title's words, or the capitalised words of a sentence, with those initials.
        spelled = [w for w in re.findall(r"[A-Za-z]+", text) if title or w[0].isupper()]
        return len(letters) >= 2 and letters.isalpha() and any(
            _initials(" ".join(spelled[i:i + len(letters)])) == letters
            for i in range(len(spelled) - len(letters) + 1))
    return False


def _same(wanted: str, word: str, *, loose: bool) -> bool:
    """"networks" ~ "network"; ``loose``: also "network" ~ "nets" (one the other's head)."""
    if wanted.removesuffix("s") == word.removesuffix("s"):
        return True
    short, long = sorted((wanted.removesuffix("s"), word.removesuffix("s")), key=len)
    return loose and len(short) >= 3 and long.startswith(short)


def _letters(acronym: str) -> str:
    return acronym.removesuffix("s").replace("-", "").lower()


def _initials(name: str) -> str:
    return "".join(w[0].lower() for w in re.findall(r"[A-Za-z]+", name))


def _initials_match(acronym: str, name: str) -> bool:
    """"GAN" of "Generative Adversarial Network": the acronym's letters are the initials
    of the name's last words (a hyphenated word gives one initial per part)."""
    letters = _letters(acronym)
    return len(letters) >= 2 and _initials(name).endswith(letters)
