"""Parse one reference entry, best effort: surnames, year, title, DOI and arXiv id.

The styles a thesis lists its sources in differ most in where the authors end: APA
"Smith, J. (2020). Title.", ACL/ACM "Jeffrey Dean and Sanjay Ghemawat. 2004. Title.",
IEEE 'J. Smith, "Title," Venue, 2020.', Vancouver "Smith J, Lee K. Title. BMJ.
2020;12:1-5." and BMC "Smith AB, Lee C: Title. Journal 2010, 158:515-9.". The year
that dates the entry is told from one in a URL's path, an arXiv id, a span of years in
a title or an access date; the surnames from given names and initials in every order,
and an organisation is kept whole ("World Health Organization").
"""

from __future__ import annotations

import re

from citerun.pipeline import normalize
from citerun.pipeline.citations import authors, model, patterns

_PAREN_YEAR = re.compile(rf"\(\s*(?P<y>{patterns.YEAR})(?P<s>[a-z])?\s*\)")
# ACL/ACM: "Authors. 2020a. Title. Venue."
_DOTTED_YEAR = re.compile(rf"\.\s+(?P<y>{patterns.YEAR})(?P<s>[a-z])?\.\s")
_QUOTED = re.compile(r"[\"“„«‘](?P<t>[^\"“”„«»]{5,}?)[\"”“»’]")
_EDITOR = re.compile(r"\((?:Hrsg|Hg|Eds?|ed|eds)\.?\)|\b(?:Hrsg|Hg)\.", re.IGNORECASE)
# "Smith J, Lee KL": surnames each followed by initials (Vancouver, BMC).
_INITIALLED = rf"{patterns.SURNAME}\s+[A-Z]{{1,3}}(?:\s*,\s*{patterns.SURNAME}\s+[A-Z]{{1,3}}){{0,40}}"
_VANCOUVER = re.compile(
    rf"^(?P<a>{_INITIALLED}(?:\s*,?\s*et\s+al)?)"
    r"\.\s+(?P<t>[^.?!]+[.?!]?)"
)
# What follows "Michael J." when it is a given name and an initial, not Vancouver's
# "Smith J.": the surname, then more given-first names joined by "and".
_NAMES_GO_ON = re.compile(
    rf"^{patterns.SURNAME}(?:\s+(?:[IVX]{{1,3}}|Jr\.?))?\s*,\s*{patterns.CAP}[\w'’-]+\s+(?:{patterns.CAP}\.?\s+)*{patterns.CAP}[\w'’-]+"
    rf"[^.]*?\band\s+{patterns.CAP}"
)
# What follows "Edmund K." when the entry names its authors given name first: the
# surname, then "and" and another author, or the full stop that ends a lone author.
_GIVEN_INITIAL_SURNAME = re.compile(
    rf"{patterns.SURNAME}(?:\s+(?:and|&)\s+{patterns.CAP}[\w'’-]+\s+{patterns.CAP}|\.\s+{patterns.CAP}[a-z]"
    rf"|\s*,\s*{patterns.CAP}[\w'’-]+(?:\s+{patterns.CAP}\.)*\s+{patterns.CAP}[\w'’-]+\s*,)")
# BMC/Springer: "Smith AB, Jones C: Title of the article. Journal 2010, 158:515-9."
_COLON_STYLE = re.compile(
    rf"^(?P<a>{_INITIALLED}(?:\s*,?\s*et\s+al\.?)?)"
    r"\s*:\s+(?P<t>[^.?!]+[.?!]?)"
)
_INITIALS = re.compile(rf"^(?:{patterns.CAP}\.\s*(?:-\s*)?)+$|^[A-Z]{{1,3}}$")
_SENTENCE_BREAK = re.compile(r"(?<![\s.][A-Z])(?<!^[A-Z])[.?!](?=\s|$)")
_ARXIV = re.compile(r"(?:arxiv\s*(?:preprint\s*)?:?\s*(?:abs/)?|arxiv\.org/abs/|\babs/)(\d{4}\.\d{4,5})",
                    re.IGNORECASE)


def _given_first_surname(words: list[str]) -> str:
    """"Jeffrey Dean" -> "Dean", "Madeleine van Zuylen" -> "van Zuylen",
    "K. L. van der Berg" -> "van der Berg", "CHARLES BAZERMAN" -> "Bazerman"."""
    words = [w for w in words if not _INITIALS.match(w)] or words
    start = len(words) - 1
    while start > 0 and words[start - 1].casefold() in patterns.PARTICLES:
        start -= 1
    name = " ".join(words[start:])
    return name.title() if name.isupper() and len(name) > 3 else name


def _entry_surnames(written: str) -> tuple[str, ...]:
    """Surnames from an entry's author part, in the common styles.

    "Smith, J., Jones, K. L., & Lee, M." (APA), "J. Smith, K. Jones, and M. Lee"
    (IEEE), "Jeffrey Dean and Sanjay Ghemawat" (ACL, ACM), "Smith J, Jones KL"
    (Vancouver), "Müller, Hans; Schmidt, Petra" (German).
    """
    written = _EDITOR.sub(" ", written)
    written = patterns.ET_AL_RE.sub("", written.strip(" .,:;([")).strip()
    if ";" in written or "/" in written:
        chunks = [c.strip() for c in re.split(r"[;/]", written)]
        names = [authors.written_surname(c) for c in chunks]
        return tuple(_tidy_surname(n) for n in names if _tidy_surname(n))
    head = written.split(",", 1)[0].strip()
    if _organisation(head):  # "National Academies of Sciences and Medicine", kept whole
        rest = written[len(head):].lstrip(" ,")
        return (head, *(_entry_surnames(rest) if rest else ()))
    chunks = [c.strip() for c in re.split(rf"\s*,\s*(?:{patterns.JOIN}\s+)?|\s+{patterns.JOIN}\s+|\s*&\s*", written)]
    chunks = [c for c in chunks if c]
    # "Smith, John" / "Smith, J." (inverted) against "John Smith, Jane Doe" (given first):
    # inverted lists alternate a one-word surname with given names or initials.
    inverted = (
        len(chunks) >= 2
        and len(_strip_particles(chunks[0]).split()) == 1
        and (bool(_INITIALS.match(chunks[1])) or (len(chunks[1].split()) == 1 and len(chunks) == 2))
    )
    names = []
    for position, chunk in enumerate(chunks):
        words = chunk.split()
        if _organisation(chunk):
            names.append(chunk)  # "World Health Organization" is one author, kept whole
            continue
        initials = [bool(_INITIALS.match(w)) for w in words]
        if all(initials):
            continue
        if inverted:
            if position % 2 == 1 and not _INITIALS.match(chunk) and len(words) == 1 and len(chunks) == 2:
                continue  # "Smith, John": "John" is the given name
            name = chunk if len(words) == 1 or not all(initials[1:]) else words[0]
            if len(words) > 1 and all(initials[1:]):
                name = words[0]  # "Smith J" inside an inverted list
        elif initials[0] and not all(initials):  # "J. Smith", "K. L. van der Berg"
            name = _given_first_surname(words)
        elif len(words) > 1 and all(initials[1:]):  # "Smith J", "Smith KL"
            name = words[0]
        elif len(words) > 1:
            name = _given_first_surname(words)
        else:
            name = chunk
        if _tidy_surname(name):
            names.append(_tidy_surname(name))
    return tuple(names)


def _strip_particles(name: str) -> str:
    words = name.split()
    while len(words) > 1 and words[0].casefold() in patterns.PARTICLES:
        words = words[1:]
    return " ".join(words)


def _tidy_surname(name: str) -> str:
    name = name.strip(" .,:;()[]*")
    return name if re.search(r"[^\W\d_]{2,}", name) else ""


def _first_segment(text: str) -> str | None:
    text = text.strip(" .,:;)")
    match = _SENTENCE_BREAK.search(text)
    segment = (text[:match.start()] if match else text).strip(" .,:;")
    return segment or None


def _in_url_or_id(text: str, year: re.Match[str]) -> bool:
    """Whether a year is part of a URL's path (".../2008/...", "/1994-99/"), one end of a
    span of years ("anaemia 1993-2005") or of an id ("1806.04558", "arXiv:2004")."""
    before, after = text[max(0, year.start() - 2):year.start()], text[year.end():year.end() + 2]
    return (before.endswith("/") or after.startswith("/") or re.match(r"[-–]\d|\.\d", after) is not None
            or re.search(r"\d[-–]$|[:.]$", before) is not None)


def _plain_year(text: str) -> re.Match[str] | None:
    """The first year that dates the entry: not one inside a URL's path
    (".../publications/2008/...", "/1994-99/") nor one end of a span of years in a title
    ("anaemia 1993-2005"); the first year at all when there is no other."""
    first = None
    for match in patterns.ANY_YEAR.finditer(text):
        first = first or match
        if not _in_url_or_id(text, match):
            return match
    return first


# A year that is an access date, not the publication's.
_ACCESSED = re.compile(r"(?i:accessed|retrieved|visited|abgerufen|zugegriffen|last\s+checked)\b[^()\[\]]{0,30}$")


def _last_year(text: str, first: re.Match[str]) -> re.Match[str]:
    """The last year of the entry that dates it (by :func:`_plain_year`'s tests), not an
    access date; ``first`` when there is none after it."""
    last = first
    for match in patterns.ANY_YEAR.finditer(text, first.end()):
        if not _in_url_or_id(text, match) and not _ACCESSED.search(
                text, max(0, match.start() - 40), match.start()):
            last = match
    return last


_ORGANISATION_WORD = re.compile(
    r"\b(?:Organi[sz]ation|University|Universit[äy]t|Institute?|Association|Office|Society|"
    r"Council|Committee|Group|Agency|Department|Ministry|Foundation|Consortium|Cent(?:re|er)|"
    r"Bureau|Board|Commission|Collaboration|Corporation|Federation|Union|Authority|"
    r"Administration|Academy|Academies|Institutes|Court|Courts|Clearinghouse|Organizers|"
    r"Organisers|Team|Project|Initiative|Bundesamt|Bundesministerium|Network|Programme|Program|"
    r"Service)\b"
)
# A name with "of" between capitalised words: "Office of Quality Improvement",
# "National Institutes of Health", "Organizers of Queer in AI".
_ORGANISATION_OF = re.compile(rf"^{patterns.CAP}\S*(?:\s+{patterns.CAP}\S*)*\s+(?:of|for|on)\s+{patterns.CAP}")


def _organisation(chunk: str) -> bool:
    words = chunk.split()
    return len(words) >= 2 and words[0][:1].isupper() and bool(
        _ORGANISATION_WORD.search(chunk) or _ORGANISATION_OF.match(chunk))


def parse_entry(text: str, index: int, label: str | None = None) -> model.ReferenceEntry:
    """Parse one reference entry (without its label) into surnames, year, title, ids.

    Styles: APA "Smith, J. (2020). Title.", ACL/ACM "Jeffrey Dean and Sanjay Ghemawat.
    2004. Title.", IEEE 'J. Smith, "Title," Venue, 2020.', Vancouver "Smith J, Lee K.
    Title. BMJ. 2020;12:1-5." and BMC "Smith AB, Lee C: Title. Journal 2010, 158:515-9."
    """
    dotted = _DOTTED_YEAR.search(text)
    paren_year = _PAREN_YEAR.search(text)
    year_match = paren_year or dotted or _plain_year(text)
    if dotted and paren_year and dotted.start() < paren_year.start():
        year_match = dotted
    if year_match is not None and year_match is not paren_year and year_match is not dotted and (
            _SENTENCE_BREAK.search(text, 0, year_match.start())):
        # The year follows the title and venue ("... (PATAT-2002), pages 262-275. Springer,
        # 2003."): a year inside the venue's name is not the publication year, the last is.
        year_match = _last_year(text, year_match)
    year = int(year_match["y"]) if year_match else None
    suffix = (year_match["s"] or "") if year_match else ""
    quoted = _QUOTED.search(text)
    vancouver = _VANCOUVER.match(text)
    if vancouver and (_NAMES_GO_ON.match(vancouver["t"])
                      or _GIVEN_INITIAL_SURNAME.match(text, vancouver.start("t"))):
        # "Michael J. Bommarito II, Daniel Martin Katz, and Eric M. ...", "Edmund K.
        # Burke and Yuri Bykov.", "Jeffrey H. Kingston. Educational timetabling."
        vancouver = None
    colon_style = _COLON_STYLE.match(text)
    if quoted and (year_match is None or quoted.start() < year_match.start()):
        author_text, title = text[:quoted.start()], quoted["t"].strip(" ,.")
    elif dotted and year_match is dotted and dotted.start() > 0:
        author_text, title = text[:dotted.start()], _first_segment(text[dotted.end():])
    elif colon_style:
        author_text, title = colon_style["a"], colon_style["t"].strip(" .")
    elif vancouver:
        author_text, title = vancouver["a"], vancouver["t"].strip(" .")
    elif year_match and year_match.start() > 0 and (
        year_match is paren_year or not _SENTENCE_BREAK.search(text, 0, year_match.start())
    ):
        author_text, title = text[:year_match.start()], _first_segment(text[year_match.end():])
    elif year_match and year_match.start() > 0:
        # "World Health Organization. World prevalence of anaemia 1993-2005. ..." and
        # "Michael Dobson. Title. Journal 2002;6": the authors end at the first full stop.
        author_text = _first_segment(text) or ""
        title = _first_segment(text[len(author_text):].lstrip(" ."))
    elif year_match:  # "2019. CHI '19: Proceedings ..." (no authors)
        author_text, title = "", _first_segment(text[year_match.end():].lstrip(" ."))
    else:
        author_text = _first_segment(text) or ""
        title = _first_segment(text[len(author_text):].lstrip(" ."))
    doi = normalize.DOI.search(text)
    arxiv = _ARXIV.search(text)
    return model.ReferenceEntry(
        index=index,
        text=text,
        label=label,
        authors=_entry_surnames(author_text),
        year=year,
        year_suffix=suffix,
        title=title or None,
        doi=doi.group(1).lower() if doi else None,
        arxiv_id=arxiv.group(1) if arxiv else None,
    )

