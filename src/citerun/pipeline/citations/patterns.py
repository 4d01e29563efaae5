"""The vocabulary every part of the extraction reads names and years with.

Markers in the body, the lines that open a reference entry and the author part of an
entry are all written with the same pieces: a capitalised surname with its particles
("van der Berg"), "et al." and its German and English kin, a year, a page locator. They
are regex fragments here, each written once, and the word sets that tell a surname from
a capitalised word that only opens a sentence.
"""

from __future__ import annotations

import re

from citerun.pipeline import normalize

CAP = r"[A-ZÄÖÜÀ-ÖØ-ÞŁŚŻŹČŠŽ]"
SURNAME_WORD = rf"{CAP}[\w'’]*(?:-{CAP}[\w'’]*)?"
# Particles a surname may open with in a pattern ("van der Berg", "de la Cruz").
_NAME_PARTICLES = ("van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "le",
                   "la", "ten", "ter", "zu", "dos")
PARTICLE_WORD = f"(?i:{'|'.join(_NAME_PARTICLES)})"
PARTICLE = rf"(?:{PARTICLE_WORD}\s+)"
SURNAME = rf"{PARTICLE}*{SURNAME_WORD}"
# Words that belong to a surname when they stand before it, as the backward walk over an
# author group and the split of an entry's names read them; "al" and "el" too ("al Saud").
PARTICLES = frozenset({*_NAME_PARTICLES, "das", "do", "af", "al", "el", "bin", "ibn"})
ET_AL = r"(?:et\s+al\.?|u\.\s*a\.|and\s+colleagues)"
ET_AL_RE = re.compile(rf"\s*,?\s*{ET_AL}\s*$")
JOIN = r"(?:&|and|und|u\.)"
# A publication year: 1600-2099 (normalize owns it).
YEAR = normalize.YEAR
# A span of years, one work ("2008–2023", "2019-present").
YEAR_SPAN = rf"{YEAR}\s*[-–]\s*(?:{YEAR}|(?i:present|today|heute))"
# One year or several ("2020a, 2021"), each maybe with a letter, as a marker lists them.
YEARS = rf"{YEAR}[a-z]?(?![\w])(?:\s*,\s*{YEAR}[a-z]?(?![\w])){{0,10}}"
ANY_YEAR = re.compile(rf"(?<![\w])(?P<y>{YEAR})(?P<s>[a-z])?(?![\w])")
PAGES = r"\d+(?:\s*[-–—]\s*\d+)?(?:\s*ff?\.)?"
# The words that say "page(s)" before a page locator, German and English: the one list
# the markers, the footnotes, the locator check and the LaTeX reader read.
PAGE_PREFIXES: tuple[str, ...] = ("S.", "Seite", "Seiten", "p.", "pp.", "pg.", "page", "pages")
# PAGE_PREFIXES as a regex alternation, longest first.
PAGE_PREFIX = "(?:" + "|".join(
    re.escape(word) for word in sorted(PAGE_PREFIXES, key=len, reverse=True)) + ")"
PREFIXED_LOC = rf"{PAGE_PREFIX}\s*(?P<loc>{PAGES})"

MONTHS = frozenset(
    {"january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december", "januar", "februar", "märz", "juni", "juli",
     "oktober", "dezember"}
)
# Surnames that are also pronouns ("He et al., 2010", "She and Li, 2019"): names only in
# a group, where "et al." or a co-author follows.
PRONOUN_SURNAMES = frozenset({"he", "she"})
# Words that start a sentence with a capital and are then followed by "(2020)".
NOT_SURNAMES = MONTHS | PRONOUN_SURNAMES | frozenset(
    {
        "a", "an", "the", "this", "that", "these", "those", "in", "on", "at", "by", "for",
        "from", "since", "until", "however", "thus", "hence", "also", "and", "or", "but",
        "see", "cf", "vgl", "table", "figure", "fig", "chapter", "section", "appendix",
        "tab", "abb", "kapitel", "abschnitt", "anhang", "der", "die", "das", "im", "seit",
        "bis", "und", "oder", "year", "years", "jahr", "study", "studies", "survey",
        "report", "edition", "version", "summer", "winter", "spring", "autumn", "fall",
        "it", "we", "they",
    }
)

# The first line of an author-year entry: "Smith, J." / "Müller, Hans" / "Smith JK".
ENTRY_LINE_START = re.compile(
    rf"^\s*{SURNAME}(?:\s*,\s*(?:{CAP}\.|{CAP}[a-zäöüßé]+)|\s+[A-Z]{{1,3}}(?:,|\.|\s))"
)
# "Jeffrey Dean and Sanjay Ghemawat. 2004." / "Kyle Lo, Lucy Lu Wang, ..." (ACL, ACM).
GIVEN_FIRST_START = re.compile(
    rf"^\s*{CAP}[\w'’-]*\.?(?:\s+{CAP}[\w'’-]*\.?){{0,2}}\s+{SURNAME}\s*(?:,|\band\b|&|\.\s+{YEAR})"
)
