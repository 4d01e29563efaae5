"""Find the citation markers of the body, each with what it names and its locator.

Numeric (``[3, 7]``, ``[4-6]``, superscript numbers), alpha (``[AB12]``), author-year
in parentheses or square brackets (``(Smith & Jones, 2019; Lee et al., 2021)``,
``[Knight and Marcu, 2004]``, German ``(vgl. Müller 2018: 12)``), narrative (``Smith
et al. (2020)``, ``Qu et al. [2009]``, not ``Dokshitzer(1977)`` in an equation),
``ebd.``/``ibid.``, and, where the paper's own list names them, author-year citations
without brackets (:func:`bare_markers`). Every pattern is linear in the text; a position
taken by one marker is not read again by a later pattern, so the order of the passes
in :func:`find_markers` is part of the rules. Whether a kind of marker counts in a given
paper (superscripts, author-year groups in a numbered paper) is
:mod:`~citerun.pipeline.citations.extraction`'s decision, not this module's.
"""

from __future__ import annotations

import re

from citerun.pipeline import layout, normalize
from citerun.pipeline.citations import authors, model, patterns

_NUMERIC = re.compile(
    r"\[\s*(?P<body>\d{1,4}(?:\s*[-–—]\s*\d{1,4})?(?:\s*[,;]\s*\d{1,4}(?:\s*[-–—]\s*\d{1,4})?)*)"
    rf"(?:\s*,\s*{patterns.PREFIXED_LOC})?\s*\]"
)
# A bracket or parenthesis holding author-year parts: "(Smith, 2020; Lee et al., 2021)",
# "[Knight and Marcu, 2004]". The body is bounded and holds no nested group.
_GROUP = re.compile(r"(?P<open>[(\[])(?P<body>[^()\[\]\n]{1,300}(?:\n[^()\[\]\n]{1,300}){0,3})[)\]]")
# Alpha-style labels: "[AB12]", "[Knu84]", "[GHJV95, ABC+12]".
_ALPHA_KEY = r"[A-Z][A-Za-z+]{0,7}\d{2,4}[a-z]?"
_ALPHA_GROUP = re.compile(rf"\[(?P<body>{_ALPHA_KEY}(?:\s*[,;]\s*{_ALPHA_KEY}){{0,20}})\]")
# "(2020)", "(2020a, 2021)", "(2020, p. 12)" right after a narrative author group.
_YEAR_PAREN = re.compile(
    rf"\(\s*(?P<years>{patterns.YEARS})"
    rf"(?:\s*(?:,\s*|:\s*)(?:{patterns.PREFIXED_LOC}|(?P<loc2>{patterns.PAGES})))?\s*\)"
)
# ACM/Springer narrative style, the year alone in square brackets after the names:
# "Qu et al. [2009]", "Lopes and Smith-Miles [2010, 2013]", "Bagger et al. [2019a,
# Table 6]", "Lewis et al. [2007, §3]". Whatever follows the years is the locator.
_YEAR_BRACKET = re.compile(
    rf"\[\s*(?P<years>{patterns.YEARS})"
    r"(?:\s*[,;:]\s*(?P<loc>[^\[\]\n]{1,40}?))?\s*\]"
)
# The years of a part followed by words: "see Qu et al., 2009, for a discussion",
# "see Müller et al., 2018, §3.5" (the part then ends with its locator or a remark).
_PART_YEARS_THEN = re.compile(
    rf"(?:^|(?<=[\s,(]))(?P<years>{patterns.YEARS})"
    rf"\s*,\s*(?P<tail>(?!{patterns.YEAR})[^,]\S*(?:\s+\S+){{0,8}})\s*$"
)
# The year list (and locator) that ends an author-year part: "Smith & Lee, 2019a, S. 3".
_PART_YEARS = re.compile(
    rf"(?:^|(?<=[\s,(]))(?P<years>{patterns.YEARS}"
    rf"|{patterns.YEAR_SPAN})"
    rf"(?:\s*(?:,\s*|:\s*)(?:{patterns.PREFIXED_LOC}|(?P<loc2>{patterns.PAGES})))?\s*$"
)
_IBID_WORD = r"(?:ebd\.|ebenda|ibid\.?|ibidem|ib\.)"
_IBID_PART = re.compile(
    rf"^\s*(?:(?:vgl\.|cf\.|see)\s*)?{_IBID_WORD}"
    rf"\s*(?:,?\s*{patterns.PREFIXED_LOC}|:\s*(?P<loc2>{patterns.PAGES}))?\s*$",
    re.IGNORECASE,
)
_IBID_BARE = re.compile(
    rf"(?<![\w.])(?:(?i:vgl\.)\s*)?(?i:{_IBID_WORD})(?:,?\s*{patterns.PREFIXED_LOC})?"
)
_RAISED = layout.SUPERSCRIPT_DIGITS
# Superscript citation numbers as the layout writes them: "bias¹⁴ ¹⁵", "Jadad,¹¹⁻¹³".
_SUPERSCRIPT = re.compile(
    rf"(?<=[^\s{_RAISED}])(?P<body>[{_RAISED}]{{1,3}}(?:\s?[,–⁻-]?\s?[{_RAISED}]{{1,3}}){{0,20}})")
_FROM_SUPERSCRIPT = str.maketrans(f"{_RAISED}⁻", "0123456789-")


def _clean_locator(raw: str | None) -> str | None:
    if not raw:
        return None
    text = re.sub(r"\s*[-–—]\s*", "-", raw.strip())
    return re.sub(r"\s*(ff?\.)$", r" \1", text)


def _expand_numbers(body: str) -> list[str]:
    keys: list[str] = []
    for part in re.split(r"\s*[,;]\s*", body.strip()):
        bounds = re.split(r"\s*[-–—]\s*", part)
        if len(bounds) == 2:
            low, high = int(bounds[0]), int(bounds[1])
            # "[4-6]" is a range; "[9-2]" or "[1-5000]" is not, so keep only its ends.
            numbers = range(low, high + 1) if 0 < high - low <= 100 else (low, high)
            keys.extend(str(n) for n in numbers)
        elif part.isdigit():
            keys.append(str(int(part)))
    return list(dict.fromkeys(keys))


_NAME_BEFORE = re.compile(rf"{patterns.SURNAME_WORD}\s$")


def _is_power(text: str, start: int, body: str) -> bool:
    """A square or cube of a one-letter symbol ("the I² value", "(y²)", "χ²"), not a
    citation; "Lin Y²⁷" (an initial after a surname) and "Egger’s²⁴" still cite."""
    if body not in ("²", "³") or start < 1 or not text[start - 1].isalpha():
        return False
    before = text[max(0, start - 40):start - 1]
    if before[-1:].isalpha() or before[-1:] in ("'", "’"):
        return False  # part of a longer word
    return not (text[start - 1].isupper() and _NAME_BEFORE.search(before))


def find_markers(text: str) -> list[model.Marker]:
    """Every citation marker of ``text``, in order; linear in the text's length."""
    markers: list[model.Marker] = []
    taken = bytearray(len(text) + 1)

    def free(start: int, end: int) -> bool:
        return not any(taken[start:end])

    def add(marker: model.Marker) -> None:
        markers.append(marker)
        taken[marker.start:marker.end] = b"\x01" * (marker.end - marker.start)

    def narrative(match: re.Match[str], *, year_bracket: bool) -> None:
        """Names right before a bracketed or parenthesised year make one citation; with
        no space before the bracket ("Dokshitzer(1977)" in an equation) there is none."""
        if match.start() == 0 or not text[match.start() - 1].isspace():
            return
        before = text[:match.start()].rstrip()
        found = authors.authors_before(text, len(before), comma_list=False)
        if found is None:
            return
        start, group = found
        refs = tuple(authors.author_year_refs(group, match["years"]))
        if refs and free(start, match.end()):
            locator = match["loc"] or match.groupdict().get("loc2")
            add(model.Marker(start, match.end(), match.start(), match.end(), text[start:match.end()],
                             refs, _clean_locator(locator), year_bracket=year_bracket))

    for match in _YEAR_BRACKET.finditer(text):
        # "Singh and Agarwal [1989]": names right before the bracket make the number a
        # year, not entry 1989 of a numbered list.
        narrative(match, year_bracket=True)
    for match in _NUMERIC.finditer(text):
        if not free(match.start(), match.end()):
            continue
        refs = tuple(model.Ref(key) for key in _expand_numbers(match["body"]))
        add(model.Marker(match.start(), match.end(), match.start(), match.end(), match[0], refs,
                         _clean_locator(match["loc"])))
    for match in _SUPERSCRIPT.finditer(text):
        if _is_power(text, match.start(), match["body"]):
            continue
        body = re.sub(r"\s+", ",", match["body"].translate(_FROM_SUPERSCRIPT).replace("–", "-"))
        body = re.sub(r",+", ",", body)
        refs = tuple(model.Ref(key, superscript=True) for key in _expand_numbers(body))
        if refs:
            add(model.Marker(match.start(), match.end(), match.start(), match.end(), match[0], refs, None))
    for match in _ALPHA_GROUP.finditer(text):
        if free(match.start(), match.end()):
            refs = tuple(model.Ref(key.strip()) for key in re.split(r"\s*[,;]\s*", match["body"]))
            add(model.Marker(match.start(), match.end(), match.start(), match.end(), match[0], refs, None))
    for match in _YEAR_PAREN.finditer(text):
        narrative(match, year_bracket=False)
    for match in _GROUP.finditer(text):
        if not free(match.start(), match.end()):
            continue
        refs_list: list[model.Ref] = []
        locator: str | None = None
        for part in match["body"].split(";"):
            ibid = _IBID_PART.match(part)
            if ibid:
                refs_list.append(model.Ref("ibid", ibid=True))
                locator = locator or _clean_locator(ibid["loc"] or ibid["loc2"])
                continue
            part = " ".join(part.split())
            years = _PART_YEARS.search(part)
            trailing = None if years else _PART_YEARS_THEN.search(part)
            if trailing is not None:
                head = part[:trailing.start()].rstrip(" ,")
                found = authors.authors_before(head, len(head), comma_list=True)
                if found is not None:
                    refs_list.extend(authors.author_year_refs(found[1], trailing["years"]))
                    tail = trailing["tail"].strip()
                    # A locator ("§3.5", "p. 4", "Table 6"), not a remark ("for a discussion").
                    if re.match(r"^(?:§|(?:p|pp|S|ch|chap|sec|Section|Table|Tab|Fig|Figure|"
                                r"Chapter|Theorem|Lemma|Eq)\b\.?\s*)?\s*[\dIVX]", tail):
                        locator = locator or _clean_locator(tail)
                continue
            if not years:
                continue
            head = part[:years.start()].rstrip(" ,")
            found = authors.authors_before(head, len(head), comma_list=True)
            if found is not None:
                refs_list.extend(authors.author_year_refs(found[1], years["years"]))
                locator = locator or _clean_locator(years["loc"] or years["loc2"])
        if refs_list:
            add(model.Marker(match.start(), match.end(), match.start(), match.end(), match[0],
                             tuple(refs_list), locator))
    for match in _IBID_BARE.finditer(text):
        if free(match.start(), match.end()):
            add(model.Marker(match.start(), match.end(), match.start(), match.end(), match[0],
                             (model.Ref("ibid", ibid=True),), _clean_locator(match["loc"])))
    return sorted(markers, key=lambda m: m.start)


# Citations printed without brackets ("found by Nagata 2018", a table header whose
# names stand over their years) are only taken when the first surname and the year
# name an entry of the paper's own list: a bare year after a name is too common else.
_BARE_YEAR = re.compile(rf"(?<=\s)(?P<y>{patterns.YEAR})(?P<s>[a-z])?(?![\w\])])")
_YEAR_LINE = re.compile(rf"[ \t]*{patterns.YEAR}[a-z]?(?:[ \t]+{patterns.YEAR}[a-z]?)*[ \t]*")
_NAME_GROUP = re.compile(rf"{patterns.SURNAME}(?:\s+(?:and|&)\s+{patterns.SURNAME}|\s+et\s+al\.?)?")
_NAME_GROUPS_LINE = re.compile(rf"[ \t]*{_NAME_GROUP.pattern}(?:[ \t]+{_NAME_GROUP.pattern})*[ \t]*")


def bare_markers(
    text: str, found: list[model.Marker], references: tuple[model.ReferenceEntry, ...]
) -> list[model.Marker]:
    """Author-year citations without brackets whose first surname and year are those
    of an entry of the list: "Lewis and Thompson 2015" in running text, and table
    headers of name lines over a row of years (paired in reading order, all or none)."""
    entries = {(normalize.fold(e.authors[0]), e.year) for e in references if e.authors and e.year}
    if not entries:
        return []
    taken = bytearray(len(text) + 1)
    for marker in found:
        taken[marker.start:marker.end] = b"\x01" * (marker.end - marker.start)
    added: list[model.Marker] = []

    def cites(refs: list[model.Ref]) -> bool:
        return bool(refs) and all(
            r.authors and (normalize.fold(r.authors[0]), r.year) in entries for r in refs)

    # Table headers: a run of lines of author groups, then a run of lines of years only.
    lines: list[tuple[int, str]] = []
    offset = 0
    for line in text.split("\n"):
        lines.append((offset, line))
        offset += len(line) + 1
    index = 0
    while index < len(lines):
        if not _YEAR_LINE.fullmatch(lines[index][1]) or index == 0:
            index += 1
            continue
        first_year = index
        while index < len(lines) and _YEAR_LINE.fullmatch(lines[index][1]):
            index += 1
        years = [(lines[i][0] + m.start(), m) for i in range(first_year, index)
                 for m in patterns.ANY_YEAR.finditer(lines[i][1])]
        names_end = first_year
        while names_end > 0 and not lines[names_end - 1][1].strip():
            names_end -= 1  # a paragraph break between the names and the years
        start = names_end
        while start > 0 and lines[start - 1][1].strip() and _NAME_GROUPS_LINE.fullmatch(lines[start - 1][1]):
            start -= 1
        groups = [(lines[i][0] + m.start(), m[0]) for i in range(start, names_end)
                  for m in _NAME_GROUP.finditer(lines[i][1])]
        if not groups or len(groups) != len(years):
            continue
        pairs = []
        for (at, group), (year_at, year) in zip(groups, years):
            refs = authors.author_year_refs(group, year[0])
            if not cites(refs) or any(taken[at:at + len(group)]):
                break
            pairs.append(model.Marker(at, at + len(group), at, at + len(group), f"{group} {year[0]}",
                                      tuple(refs), None))
        else:
            added.extend(pairs)
            for marker in pairs:
                taken[marker.start:marker.end] = b"\x01" * (marker.end - marker.start)
    # Running text: "found by Nagata 2018", "Lewis and Thompson 2015".
    for match in _BARE_YEAR.finditer(text):
        if any(taken[match.start():match.end()]) or text[match.start() - 1] == "\n":
            continue
        before = text[:match.start()].rstrip()
        if before.endswith((",", ".", ";", ":")) and not before.endswith("al."):
            continue
        got = authors.authors_before(text, len(before), comma_list=False)
        if got is None or "\n" in got[1]:
            continue
        refs = authors.author_year_refs(got[1], match[0])
        if cites(refs) and not any(taken[got[0]:match.end()]):
            added.append(model.Marker(got[0], match.end(), match.start(), match.end(),
                                      text[got[0]:match.end()], tuple(refs), None))
            taken[got[0]:match.end()] = b"\x01" * (match.end() - got[0])
    return added

