"""The extraction policy: which markers of a paper count, and the claim of each.

:mod:`~citerun.pipeline.citations.markers` finds every marker that could cite; whether
it does depends on the paper as a whole, decided here: superscript numbers cite only
in a paper that numbers its list and has no bracketed numbers (elsewhere they are
footnote marks); a bracketed number the numbered list does not hold is an equation or
a range; and a paper that numbers its list and cites by number makes no author-year
citations of its own (what looks like one is quoted material). Markers are found in the
body and in what follows the list (an appendix cites too), never in the list.
"""

from __future__ import annotations

import bisect
import collections
import collections.abc
import dataclasses

from citerun.pipeline import pdf
from citerun.pipeline.citations import (
    attribution,
    claims,
    footnotes,
    markers,
    model,
    references,
)


def extract(pages: collections.abc.Iterable[tuple[int, str]]) -> model.Extraction:
    """Find the reference list, the markers of the body and the claim of each marker.

    ``pages`` are ``(page_number, text)`` in reading order. A marker citing three
    sources gives three citations; ``ebd.``/``ibid.`` repeats the source cited just
    before it (or stays unresolved with key "ibid" if there is none).
    """
    body_pages, reference_text, reference_page = references.find_reference_section(list(pages))
    listed = references.parse_reference_list(reference_text) if reference_text else ()

    labels = {e.label for e in listed if e.label}
    skipped: list[tuple[model.Marker, str]] = []

    # A paper citing in footnotes: its notes cut out of the body, its marks citing.
    note_scan = footnotes.scan(body_pages, listed)
    read = _read_body(note_scan.pages) if note_scan.citing else None
    by_notes = _footnote_policy(read, note_scan, labels) if read is not None else None
    if by_notes is None:
        read = _read_body(body_pages)
    assert read is not None
    joined, body, offsets, found = read
    if not joined.text:
        return model.Extraction((), listed, reference_page)
    noted: dict[int, tuple[footnotes.Cited, ...]] = {}  # id(marker) -> what its notes cite
    note_skips: list[model.Skipped] = []
    if by_notes is not None:
        found, noted, note_skips = by_notes

    def skip(marker: model.Marker, reason: str) -> bool:
        skipped.append((marker, reason))
        return False

    # Raised numbers cite only in a paper that numbers its list and has no bracketed
    # numbers; elsewhere they are footnote marks (in a paper citing in footnotes, those
    # of notes that cite a work were taken above).
    bracketed = any(not r.superscript and r.key.isdigit() for m in found for r in m.refs)
    if bracketed or not labels:
        found = [m for m in found if not any(r.superscript for r in m.refs) or skip(
            m, "a raised number in a paper that cites in brackets or has no numbered "
               "reference list: read as a footnote mark")]
    numeric = [m for m in found if m.refs and all(r.key.isdigit() for r in m.refs)]
    # "[0, 1]" is an interval; in a paper whose list is author-year, or whose numbered
    # list holds none of the numbers, a bracketed number is an equation or a range. A
    # number within the list's labels that the list lacks cites an entry not read: kept.
    last = max((int(label) for label in labels if label.isdigit()), default=0)
    drop = {
        id(m)
        for m in numeric
        if any(r.key == "0" for r in m.refs)
        or (len(listed) >= 5 and not any(r.key in labels or int(r.key) <= last for r in m.refs))
    }
    found = [m for m in found if id(m) not in drop or skip(
        m, "a bracketed number the reference list does not hold: read as an equation, "
           "an interval or a range" if labels else
           "a bracketed number, but no numbered reference list was found")]
    if labels and all(label.isdigit() for label in labels) and any(
            r.key in labels for m in numeric if id(m) not in drop for r in m.refs):
        # A paper that numbers its list and cites by number makes no author-year
        # citations of its own: "(Brown et al., 2020)" there is quoted material (a
        # figure reproducing another paper's text), and "Smith et al. (2020) [5]" is
        # cited by its "[5]". "Singh and Agarwal [1989]" is the paper's own narrative
        # citation (its year in brackets where a number would stand), so it stays.
        found = [m for m in found if m.year_bracket or not any(r.authors for r in m.refs)
                 or skip(m, "an author-year marker in a paper that cites by number: read "
                            "as quoted material")]
    found = sorted(found + markers.bare_markers(body, found, listed), key=lambda m: m.start)
    spans = claims.claim_spans(body, found)
    starts = [s for s, _ in spans]
    cut_starts = [m.cut_start for m in found]
    cut_ends = [m.cut_end for m in found]
    # Each marker's claim: its sentence, or the clause of it that it cites.
    by_sentence: dict[int, list[int]] = collections.defaultdict(list)
    for number, marker in enumerate(found):
        by_sentence[claims.sentence_of(marker, spans, starts, body)].append(number)
    claim_of: dict[int, str] = {}
    sentence_of: dict[int, int] = {}
    for index, numbers in by_sentence.items():
        start, end = spans[index]
        inside = found[bisect.bisect_right(cut_ends, start):bisect.bisect_left(cut_starts, end)]
        in_sentence = [found[n] for n in numbers]
        parts = claims.clause_parts(body, start, end, in_sentence)
        taken = 0
        for part_start, part_end, count in parts:
            claim = claims.claim_text(body, part_start, part_end, inside)
            if len(parts) > 1:
                claim = claims.as_sentence(claim)
            for number in numbers[taken:taken + count]:
                claim_of[number] = claim
                sentence_of[number] = index
            taken += count

    citations: list[model.ExtractedCitation] = []
    previous: model.Ref | None = None
    # One judgement per (sentence, source, locator), however often the marker repeats.
    judged: dict[tuple[int, str, str | None], int] = {}  # -> index in citations
    for number, marker in enumerate(found):
        page = joined.page_at(claims.old_offset(offsets, marker.start))
        cited = noted.get(id(marker))
        pairs = ([(c.ref, c.locator, c.text) for c in cited] if cited
                 else [(r, marker.locator, marker.text) for r in marker.refs])
        for ref, locator, written in pairs:
            if ref.ibid:
                ref = previous if previous is not None else ref
            else:
                previous = ref
            seen = (sentence_of[number], ref.key, locator)
            if seen in judged:
                first = judged[seen]
                citations[first] = dataclasses.replace(citations[first],
                                                       markers=citations[first].markers + 1)
                continue
            judged[seen] = len(citations)
            citations.append(
                model.ExtractedCitation(
                    ordinal=len(citations) + 1,
                    key=ref.key,
                    claim=claim_of[number],
                    page=page,
                    marker=" ".join(written.split()),
                    locator=locator,
                    authors=ref.authors,
                    year=ref.year,
                    names_work=attribution.named_work(body, marker, spans[sentence_of[number]]),
                )
            )
    notes = [model.Skipped(f"page {joined.page_at(claims.old_offset(offsets, m.start))}",
                           " ".join(m.text.split()), reason) for m, reason in skipped]
    return model.Extraction(tuple(citations), listed, reference_page,
                            tuple(_short_list(listed, reference_page) + notes + note_skips))


Read = tuple[pdf.JoinedPages, str, list[tuple[int, int]], list[model.Marker]]


def _read_body(body_pages: list[tuple[int, str]] | tuple[tuple[int, str], ...]) -> Read:
    """The body joined, in reading order (``claims.reading_order``), and its markers."""
    joined = pdf.join_pages(body_pages)
    if not joined.text:
        return joined, "", [(0, 0)], []
    # Sentences a caption, footnotes or a figure interrupt are made whole first, so
    # that markers and claims are read as the reader reads them.
    body, offsets = claims.reading_order(joined.text, joined.starts)
    return joined, body, offsets, markers.find_markers(body)


def _footnote_policy(
    read: Read, scan: footnotes.Scan, labels: set[str],
) -> tuple[list[model.Marker], dict[int, tuple[footnotes.Cited, ...]], list[model.Skipped]] | None:
    """The body's markers with each raised mark of a citing note taking its works, or
    None when the paper does not cite in footnotes: its raised numbers cite a numbered
    list (no bracketed numbers), or its notes cite fewer works than its body's own
    markers do (an English paper's "³ See Smith (2020)." is a remark with its claim)."""
    joined, _, offsets, found = read
    bracketed = any(not r.superscript and r.key.isdigit() for m in found for r in m.refs)
    if labels and not bracketed:
        return None
    raised = [(index, m) for index, m in enumerate(found)
              if m.refs and all(r.superscript for r in m.refs)]
    marks = [(index, int(r.key), joined.page_at(claims.old_offset(offsets, m.start)))
             for index, m in raised for r in m.refs]
    paired = footnotes.pair(scan.notes, [(n, page) for _, n, page in marks])
    by_marker: dict[int, list[footnotes.Footnote]] = collections.defaultdict(list)
    for position, note in paired.items():
        by_marker[marks[position][0]].append(note)
    in_notes = sum(len(note.cited) for note in paired.values())
    in_body = sum(1 for m in found if not any(r.superscript for r in m.refs))
    if not in_notes or in_notes < in_body:
        return None
    taken: list[model.Marker] = []
    noted: dict[int, tuple[footnotes.Cited, ...]] = {}
    for index, marker in enumerate(found):
        cited = tuple(c for note in by_marker.get(index, ()) for c in note.cited)
        if cited:
            marker = dataclasses.replace(marker, refs=tuple(c.ref for c in cited))
            noted[id(marker)] = tuple(
                dataclasses.replace(c, text=f"{marker.text} {c.text}") for c in cited)
        taken.append(marker)
    pointed = {id(note) for note in paired.values()}
    skips = [model.Skipped(f"page {note.page}", f"{note.number} {note.text}",
                           "a footnote citing a work, but no raised mark in the text points at "
                           "it: its citations have no claim")
             for note in scan.citing if id(note) not in pointed]
    skips += [model.Skipped(f"page {note.page}, footnote {note.number}", part,
                            "a footnote's citation whose work could not be told (\"Ebd.\", "
                            "\"a.a.O.\" or \"Ders.\" with no work before it, or an unknown "
                            "short title)")
              for note in scan.notes for part in note.unresolved]
    return taken, noted, skips


def _short_list(listed: tuple[model.ReferenceEntry, ...],
                reference_page: int | None) -> list[model.Skipped]:
    """A numbered list whose parsed entries fall short of its labels (1-200 with 36
    entries): the numbers missing, so a reader knows the list was not read whole."""
    numbers = sorted(int(e.label) for e in listed if e.label and e.label.isdigit())
    if not numbers:
        return []
    missing = sorted(set(range(1, numbers[-1] + 1)) - set(numbers))
    if not missing:
        return []
    shown = ", ".join(str(n) for n in missing[:20]) + (" ..." if len(missing) > 20 else "")
    return [model.Skipped(
        f"reference list (page {reference_page})" if reference_page else "reference list",
        f"entries {shown} ({len(missing)} of {numbers[-1]})",
        "the numbered list's entries were not all read: citations of the missing "
        "numbers are kept as unresolved")]

