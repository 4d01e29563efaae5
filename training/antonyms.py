"""Write the judge's antonym lexicon from WordNet 3.0: ``judging/antonyms.tsv``.

Usage::

    apt-get install wordnet-base      # Debian's WordNet 3.0 database, /usr/share/wordnet
    python -m training.antonyms  # writes src/citerun/pipeline/judging/antonyms.tsv
    python -m training.antonyms --check   # exit 1 when the committed file differs

Each line is a pair of single words that WordNet marks as direct antonyms of each other
(its ``!`` pointers between word senses, in adjectives, verbs, nouns and adverbs:
effective/ineffective, increase/decrease, presence/absence), lower-cased, once per
unordered pair, sorted. The pairs are WordNet's as they stand: no pair was added, dropped
or chosen by looking at any claim, so the lexicon is general English and not tuned to the
judge's training data. Multi-word entries ("take_away") are dropped: claims are matched
word by word. A third column names, where one word of the pair is the other with a
negating prefix (un-, in-, im-, ir-, il-, non-, dis-) or with ``-less`` for ``-ful``, that
negated word (empty otherwise): it states an absence by itself ("ineffective", "harmless"), which the judge's
negation cues, looking for "not", do not see.

Licence: WordNet 3.0, Copyright 2006 by Princeton University, under the WordNet licence
(permissive: use, copy, modify and distribute, keeping its notice). The script writes that
notice, as WordNet's data files carry it, to ``judging/antonyms.LICENSE``. Run time: about
a second.
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import re
import sys

from citerun.pipeline.judging import sentences

OUT = sentences.ANTONYMS
WORDNET = pathlib.Path("/usr/share/wordnet")
PARTS = ("adj", "adv", "noun", "verb")
_NEGATING_PREFIXES = ("un", "in", "im", "ir", "il", "non", "dis")
_WORD = re.compile(r"^[a-z][a-z-]*[a-z]$")
HEADER = ("# WordNet 3.0 direct antonyms (training/antonyms.py; WordNet licence in "
          "antonyms.LICENSE): word, word, the one that is the other negated by a prefix or -less\n")


def _synsets(path: pathlib.Path) -> dict[str, tuple[list[str], list[tuple[str, str, int, int]]]]:
    """offset -> (its words, its antonym pointers as (target offset, part, source word,
    target word)), from one ``data.*`` file (format: wndb(5WN))."""
    out = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):  # the licence header
            continue
        fields = line.split(" | ")[0].split()
        count = int(fields[3], 16)
        words = [re.sub(r"\([a-z]+\)$", "", fields[4 + 2 * i]).casefold() for i in range(count)]
        at = 4 + 2 * count
        pointers = []
        for _ in range(int(fields[at])):
            symbol, target, part, source_target = fields[at + 1:at + 5]
            at += 4
            if symbol == "!":
                pointers.append((target, part, int(source_target[:2], 16), int(source_target[2:], 16)))
        out[fields[0]] = (words, pointers)
    return out


def licence(wordnet: pathlib.Path = WORDNET) -> str:
    """The licence WordNet's data files open with (its numbered, indented lines)."""
    lines = itertools.takewhile(lambda line: line.startswith("  "),
                                (wordnet / "data.adj").read_text(encoding="latin-1").splitlines())
    text = "\n".join(re.sub(r"^\s*\d+ ?", "", line).rstrip() for line in lines).strip()
    return ("The antonym lexicon antonyms.tsv is derived from WordNet 3.0 (training/antonyms.py).\n\n"
            + text + "\n")


def negated(a: str, b: str) -> bool:
    """``a`` is ``b`` with a negating prefix, or ``b``'s -ful as -less."""
    return (any(a == p + b or a == p + "-" + b for p in _NEGATING_PREFIXES)
            or (b.endswith("ful") and a == b[:-3] + "less"))


def pairs(wordnet: pathlib.Path = WORDNET) -> list[tuple[str, str, str]]:
    found: set[tuple[str, str]] = set()
    for part in PARTS:
        synsets = _synsets(wordnet / f"data.{part}")
        for words, pointers in synsets.values():
            for target, target_part, source, target_word in pointers:
                if target_part[0] != part[0] and not (part == "adj" and target_part == "s"):
                    continue
                a, b = words[source - 1], synsets[target][0][target_word - 1]
                if a != b and _WORD.match(a) and _WORD.match(b):
                    found.add((min(a, b), max(a, b)))
    return [(a, b, a if negated(a, b) else b if negated(b, a) else "") for a, b in sorted(found)]


def render(rows: list[tuple[str, str, str]]) -> str:
    return HEADER + "".join(f"{a}\t{b}\t{n}\n" for a, b, n in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wordnet", type=pathlib.Path, default=WORDNET)
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    args = parser.parse_args()
    text = render(pairs(args.wordnet))
    notice = licence(args.wordnet)
    licence_path = args.out.with_suffix(".LICENSE")
    if args.check:
        for path, wanted in ((args.out, text), (licence_path, notice)):
            if not path.exists() or path.read_text(encoding="utf-8") != wanted:
                sys.exit(f"{path} is not what WordNet at {args.wordnet} gives: run python -m training.antonyms")
        return
    args.out.write_text(text, encoding="utf-8")
    licence_path.write_text(notice, encoding="utf-8")
    rows = pairs(args.wordnet)
    print(f"wrote {args.out}: {len(rows)} pairs, {sum(1 for *_, n in rows if n)} negated by affix",
          file=sys.stderr)


if __name__ == "__main__":
    main()
