"""The hand-made truth of the real-PDF benches, and how what the extractor found is
compared with it: reference entries aligned by their opening text, surnames and years
compared as ``citations.fold`` gives them, marker groups matched one to one.

The truth is the only owner of the true counts: :func:`true_entries` is derived from it.
``truth`` is a folder of ``<stem>.refs.tsv`` and ``<stem>.markers.tsv`` (see
``bench/realpdf_truth/README.md``): :data:`TRUTH` by default, its ``heldout/`` folder for
:mod:`bench.quality.heldout`.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib
import re
import typing

from bench.common import REPO
from citerun.pipeline import citations

TRUTH = REPO / "bench" / "realpdf_truth"
# How many letters and digits of an entry's opening are compared (alignment, list check).
OPENING = 24


@dataclasses.dataclass(frozen=True)
class TrueEntry:
    n: str
    surname: str
    year: str
    start: str


@dataclasses.dataclass(frozen=True)
class TrueMarker:
    page: int
    marker: str
    keys: tuple[str, ...]
    where: str


def _rows(path: pathlib.Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader((line for line in handle if not line.startswith("#")),
                              delimiter="\t", quoting=csv.QUOTE_NONE)
        return [{k: (v or "").strip() for k, v in row.items() if k} for row in rows
                if any((v or "").strip() for v in row.values() if isinstance(v, str))]


def true_refs(stem: str, truth: pathlib.Path = TRUTH) -> list[TrueEntry] | None:
    path = truth / f"{stem}.refs.tsv"
    if not path.exists():
        return None
    return [TrueEntry(r.get("n", ""), r.get("first_surname", ""), r.get("year", ""), r.get("start", ""))
            for r in _rows(path)]


def true_markers(stem: str, truth: pathlib.Path = TRUTH) -> list[TrueMarker] | None:
    path = truth / f"{stem}.markers.tsv"
    if not path.exists():
        return None
    return [TrueMarker(int(r["page"]), r.get("marker", ""),
                       tuple(k.strip() for k in r.get("keys", "").split(";") if k.strip()),
                       r.get("where", ""))
            for r in _rows(path)]


def true_entries(truth: pathlib.Path = TRUTH) -> dict[str, int]:
    """True entry count per PDF name: the rows of its ``refs.tsv`` (one owner)."""
    return {path.name.removesuffix(".refs.tsv") + ".pdf":
            len(true_refs(path.name.removesuffix(".refs.tsv"), truth) or [])
            for path in sorted(truth.glob("*.refs.tsv"))}


_PARTICLE_PREFIX = re.compile(r"^(?:van|von|der|den|de|del|della|di|da|du|le|la|ten|ter|zu|dos|das|do)+(?=[a-z]{3})")


def same_surname(a: str, b: str) -> bool:
    """Case-, accent- and particle-insensitive ("van Zuylen" = "Zuylen" = "VAN ZUYLEN")."""
    fa, fb = citations.fold(a), citations.fold(b)
    if not fa or not fb:
        return False
    return fa == fb or _PARTICLE_PREFIX.sub("", fa) == _PARTICLE_PREFIX.sub("", fb)


_YEAR_TEXT = re.compile(r"(?P<y>\d{4})(?P<s>[a-z]?)")


def same_year(true: str, year: int | None, suffix: str) -> bool:
    """The year equal; a letter suffix must also be equal when both sides have one."""
    match = _YEAR_TEXT.search(true.casefold())
    if match is None:  # "n.d.": right when the parser found no year either
        return year is None
    return year == int(match["y"]) and (not match["s"] or not suffix or match["s"] == suffix)


# "lo2023a"; "grobid2008–2023" (a span of years, keyed by its first).
_KEY = re.compile(r"^(?P<name>.*?)(?P<y>\d{4})(?P<s>[a-z]?)(?:\d{4})?$")


def same_key(true: str, found: str) -> bool:
    t, f = citations.fold(true), citations.fold(found)
    if t.isdigit() or f.isdigit():
        return t.lstrip("0") == f.lstrip("0")
    tm, fm = _KEY.match(t), _KEY.match(f)
    if tm is None or fm is None:
        return t == f
    return (same_surname(tm["name"], fm["name"]) and tm["y"] == fm["y"]
            and (not tm["s"] or not fm["s"] or tm["s"] == fm["s"]))


def opening(text: str) -> str:
    """An entry's first letters and digits, without a leading label ("[12]", "12.")."""
    text = re.sub(r"^\s*(?:\[[^\]]{1,12}\]|\d{1,4}[.)]?)\s+", "", text)
    return citations.fold(text)[:OPENING]


def align_entries(parsed: list[citations.ReferenceEntry],
                  truth: list[TrueEntry]) -> list[citations.ReferenceEntry | None]:
    """For each true entry, the parsed entry that opens with the same text, in order.

    A true entry's opening (its ``start``, up to 24 letters and digits) must be a prefix
    of a parsed entry's opening (or the other way round when the parsed one is shorter);
    the search moves forward only, so the alignment keeps reading order and a parsed
    entry is used once. A split entry's second half and a merged entry's second true
    entry stay unaligned: they count as wrong.
    """
    openings = [opening(e.text) for e in parsed]
    aligned: list[citations.ReferenceEntry | None] = []
    cursor = 0
    for entry in truth:
        want = opening(entry.start)
        hit = None
        if want:
            for index in range(cursor, len(parsed)):
                have = openings[index]
                size = min(len(want), len(have))
                if size >= min(8, len(want)) and have[:size] == want[:size]:
                    hit = index
                    break
        if hit is None:
            aligned.append(None)
        else:
            aligned.append(parsed[hit])
            cursor = hit + 1
    return aligned


@dataclasses.dataclass(frozen=True)
class FoundMarker:
    page: int
    marker: str
    claim: str
    keys: tuple[str, ...]


def found_markers(extraction: citations.Extraction) -> list[FoundMarker]:
    """Marker groups as found, in reading order: the citations of one marker are
    consecutive with the same page, marker text and claim; a key seen again starts the
    next group (a table that prints "Kim et al. (2003)" twice in one cell run)."""
    found: list[FoundMarker] = []
    for c in extraction.citations:
        last = found[-1] if found else None
        if (last is not None and (last.page, last.marker, last.claim) == (c.page, c.marker, c.claim)
                and c.key not in last.keys):
            found[-1] = dataclasses.replace(last, keys=(*last.keys, c.key))
        else:
            found.append(FoundMarker(c.page, c.marker, c.claim, (c.key,)))
        # The same marker again in the sentence is one citation (judged once), and still a
        # marker group that was found.
        found.extend(FoundMarker(c.page, c.marker, c.claim, (c.key,)) for _ in range(c.markers - 1))
    return found


def match_markers(found: list[FoundMarker],
                  truth: list[TrueMarker]) -> tuple[list[int | None], list[int | None]]:
    """One-to-one matching of found groups to true rows of the same page, in reading
    order, in three passes: a shared key and the same printed marker; a shared key; the
    same printed marker with other keys (found, but keyed differently: "PubMed (2018)"
    in a table, which the truth keys by the work's first author, cohan2018, while the
    text gives only "PubMed"; counted apart as *key differs*). Returns, per true row, the
    found group's index (or None), and per found group the true row's."""
    of_truth: list[int | None] = [None] * len(truth)
    of_found: list[int | None] = [None] * len(found)

    def shares_key(row: TrueMarker, group: FoundMarker) -> bool:
        return any(same_key(t, f) for t in row.keys for f in group.keys)

    def same_print(row: TrueMarker, group: FoundMarker) -> bool:
        return printed(row.marker) == printed(group.marker)

    tests: list[typing.Callable[[TrueMarker, FoundMarker], bool]] = [
        lambda row, group: shares_key(row, group) and same_print(row, group),
        shares_key,
        same_print,
    ]
    for test in tests:
        for index, group in enumerate(found):
            if of_found[index] is not None:
                continue
            for row_index, row in enumerate(truth):
                if of_truth[row_index] is None and row.page == group.page and test(row, group):
                    of_truth[row_index] = index
                    of_found[index] = row_index
                    break
    return of_truth, of_found


def printed(marker: str) -> str:
    """A marker as printed, for comparison: whitespace, dashes and case ignored."""
    return re.sub(r"[\s\-–—]+", "", marker).casefold()
