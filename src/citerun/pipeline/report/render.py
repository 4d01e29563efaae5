"""The report as one self-contained HTML page.

The page is one string with inline CSS and a little inline JavaScript and no external
URL at all, because it is stored in Postgres next to the JSON, served as is, mailed
around, and opened offline. Everything that comes from a thesis, a source or a model is
HTML-escaped; the page works without JavaScript (the filters then do nothing and every
citation stays visible). The page lists the citations most doubtful first
(:func:`.meaning.risk`); the JSON keeps reading order. Its words (verdicts, problems,
confidence, the legend) come from :mod:`.meaning`, the judge's reasons in plain words
from :mod:`.reasons`. It follows the reader's colour scheme (light or dark, contrast AA
in both) and fits a 375 px wide screen. Its stylesheet and its filter script are
:mod:`.render_assets`.
"""

from __future__ import annotations

import base64
import collections.abc
import datetime
import html

from citerun.pipeline import judge
from citerun.pipeline.report.meaning import (
    CONFIDENCE,
    PROBLEMS,
    TERMS,
    VERDICTS,
    confidence_text,
    risk,
)
from citerun.pipeline.report.model import (
    CitationEntry,
    EvidenceEntry,
    Problem,
    Report,
    SkippedEntry,
    SourceEntry,
    ThesisInfo,
)
from citerun.pipeline.report.reasons import explain
from citerun.pipeline.report.render_assets import _CSS, _SCRIPT
from citerun.pipeline.report.render_fetched import abstract_only, fetched_section_html, origin_html

__all__ = ["PageImages", "render_html"]


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _source_note(source: SourceEntry) -> str:
    """Why a source could not be read, or that it was read by OCR (its words may be misread)."""
    if source.error:
        return source.error
    if source.ocr_pages:
        return (f"read by OCR ({_plural(source.ocr_pages, 'page', 'pages')} without a usable "
                "text layer): its words may be misread")
    return ""


def _pages(start: int, end: int) -> str:
    return f"p. {start}" if start == end else f"pp. {start}–{end}"


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _thesis_extent(thesis: ThesisInfo) -> str:
    """"42 pages", "1 page"; a writer's file has no pages of its own: say what it is."""
    if thesis.format == "latex":
        return "LaTeX source"
    if thesis.format == "docx":
        return "Word document"
    return _plural(thesis.pages, "page", "pages")


def _badge(verdict: judge.Verdict, problems: collections.abc.Sequence[Problem] = ()) -> str:
    """The verdict's badge; a problem is added to it in its own colour ("Supported · wrong
    page"), so a citation with a wrong page never shows a plain "Supported"."""
    meaning = VERDICTS[verdict]
    flags = "".join(f' · <span class="flag">{_e(PROBLEMS[p].label)}</span>' for p in problems)
    return f'<span class="badge" style="--c:{meaning.colour}">{_e(meaning.label)}{flags}</span>'


PageImages = collections.abc.Mapping[tuple[str, int], bytes]


def _thesis_place(citation: CitationEntry) -> str:
    """Where the citation stands in the thesis: "chapter2.tex:118" or "paragraph 34" for
    a writer's file (issue 40), else its page."""
    if citation.location:
        return f'<span>Thesis <span class="page location">{_e(citation.location)}</span></span>'
    return f'<span>Thesis <span class="page">p. {citation.page}</span></span>'


def _page_class(document_id: str, page: int) -> str:
    return f"pg-{document_id[:16]}-{page}"


# Around the passage's lines the crop shows this many line heights above and below, and
# at least this share of the page's width (the passage's lines in their column).
_CROP_LINES = 2.0
_CROP_MIN_WIDTH = 0.6
# The crop is shown at most this many CSS pixels per point, and at least as many as the
# page images have (pdf.render.RENDER_ZOOM: its words legible on a 375 px phone, where
# the crop then scrolls sideways rather than shrink).
_CROP_SCALE = 1.5
_CROP_MIN_SCALE = 1.25


def _crop(item: EvidenceEntry) -> tuple[float, float, float, float]:
    """The region of the page (points) around the passage that the report shows."""
    assert item.page_width and item.page_height and item.boxes
    width, height = item.page_width, item.page_height
    line = max(b.y1 - b.y0 for b in item.boxes)
    x0, x1 = min(b.x0 for b in item.boxes) - line, max(b.x1 for b in item.boxes) + line
    wide = _CROP_MIN_WIDTH * width
    if x1 - x0 < wide:
        middle = (x0 + x1) / 2
        x0, x1 = middle - wide / 2, middle + wide / 2
    if x0 < 0:
        x0, x1 = 0.0, x1 - x0
    if x1 > width:
        x0, x1 = max(0.0, x0 - (x1 - width)), width
    y0 = max(0.0, min(b.y0 for b in item.boxes) - _CROP_LINES * line)
    y1 = min(height, max(b.y1 for b in item.boxes) + _CROP_LINES * line)
    return x0, y0, x1, y1


def _marks(item: EvidenceEntry, region: tuple[float, float, float, float]) -> str:
    """The passage's boxes as percent offsets within ``region``, so they scale with it."""
    x0, y0, x1, y1 = region
    w, h = x1 - x0, y1 - y0
    return "".join(
        f'<span class="hl" style="left:{100 * (b.x0 - x0) / w:.2f}%;top:{100 * (b.y0 - y0) / h:.2f}%;'
        f'width:{100 * (b.x1 - b.x0) / w:.2f}%;height:{100 * (b.y1 - b.y0) / h:.2f}%"></span>'
        for b in item.boxes)


def _figure(citation: CitationEntry, item: EvidenceEntry, images: PageImages) -> str:
    """The region of the evidence's page around it, its lines highlighted, and the whole
    page a click away (one image per page in the file: both show it through its CSS
    class); empty without an image or located boxes."""
    if (citation.source is None or item.page is None or not item.boxes
            or not item.page_width or not item.page_height
            or (citation.source.document_id, item.page) not in images):
        return ""
    width, height = item.page_width, item.page_height
    region = _crop(item)
    x0, y0, x1, y1 = region
    w, h = x1 - x0, y1 - y0
    page_class = _page_class(citation.source.document_id, item.page)
    position_x = 100 * x0 / (width - w) if width - w > 0.5 else 0.0
    position_y = 100 * y0 / (height - h) if height - h > 0.5 else 0.0
    label = f"Page {item.page} of {citation.source.filename} with the quoted passage highlighted"
    return (
        # tabindex: on a phone the crop scrolls sideways, by the keys too.
        f'<figure class="evidence-page" role="img" aria-label="{_e(label)}" tabindex="0">'
        f'<div class="crop {page_class}" style="aspect-ratio:{w:.1f}/{h:.1f};'
        f"min-width:{_CROP_MIN_SCALE * w:.0f}px;max-width:{_CROP_SCALE * w:.0f}px;"
        f"background-size:{100 * width / w:.2f}% {100 * height / h:.2f}%;"
        f'background-position:{position_x:.2f}% {position_y:.2f}%">{_marks(item, region)}</div>'
        f"<figcaption>p. {item.page}, the passage marked</figcaption></figure>"
        f'<details class="whole-page"><summary>Show the whole page {item.page}</summary>'
        f'<div class="sheet {page_class}" role="img" aria-label="{_e(label)}, the whole page" '
        f'style="aspect-ratio:{width:.1f}/{height:.1f}">'
        f"{_marks(item, (0.0, 0.0, width, height))}</div></details>"
    )


# A citation judged on a fetched abstract alone (issue 51), beside its badge.
_ABSTRACT_ONLY = ' <span class="abstract-only">· abstract only</span>'

_METHOD_WORDS = {"explicit": "its citation key, which your library or list of sources gives its file",
                 "reference": "its entry in the reference list",
                 "marker": "the author and year in the marker",
                 "fetched": "an open-access copy found by its identifiers"}
# The mapping's reason for a key ("explicit key alvarez2019"): the key alone is said.
_EXPLICIT_REASON = "explicit key "


def _numbers_html(citation: CitationEntry) -> str:
    """The numbers behind the verdict and the judge's own words, on demand."""
    reasons = explain(citation)
    rows = list(reasons.numbers)
    rows += [(f"Closeness of evidence {n} to the sentence (0-1)", f"{item.score:.2f}")
             for n, item in enumerate(citation.evidence, 1)]
    match = citation.match
    if match is not None and match.score is not None:
        rows.append(("Match of the source to the citation (0-100)", f"{match.score:.0f}"))
    table = ("<table><tbody>" + "".join(f"<tr><th scope=\"row\">{_e(k)}</th><td>{_e(v)}</td></tr>"
                                        for k, v in rows) + "</tbody></table>") if rows else ""
    return (f'<details class="numbers"><summary>The numbers behind this</summary>{table}'
            f'<p><span class="label">The judge’s own words:</span> {_e(reasons.words)}</p></details>')


def _citation_html(citation: CitationEntry, images: PageImages) -> str:
    meaning = VERDICTS[citation.verdict]
    problems = citation.problems()
    if citation.source is None:
        source = '<p class="source"><span class="label">Source:</span> not found among the sources</p>'
    else:
        name = citation.source.title or citation.source.filename
        file_note = (
            f' <span class="label">({_e(citation.source.filename)})</span>'
            if citation.source.title
            else ""
        )
        locator = (
            f' <span class="label">· cited at p. {_e(citation.locator)}</span>' if citation.locator else ""
        )
        source = f'<p class="source"><span class="label">Source:</span> {_e(name)}{file_note}{locator}</p>'
    reference = (
        f'<p class="reference"><span class="label">Reference entry:</span> {_e(citation.reference)}</p>'
        if citation.reference
        else ""
    )
    match = citation.match
    match_html = (
        f'<p class="match"><span class="label">Matched to the source by</span> '
        f"{_e(_METHOD_WORDS.get(match.method, match.method))}"
        + (f" ({_e(match.reason.removeprefix(_EXPLICIT_REASON))})" if match.reason else "")
        + "</p>"
        if match is not None and match.method
        else ""
    )
    evidence = "".join(
        f'<li><q>{_e(item.quote)}</q> — <span class="page">{_e(_pages(item.page_start, item.page_end))}</span>'
        f"{_figure(citation, item, images)}</li>"
        for item in citation.evidence
    )
    evidence_html = (
        f'<p class="label">Evidence from the source:</p><ul class="evidence">{evidence}</ul>'
        if evidence
        else ""
    )
    confidence = confidence_text(citation)
    return (
        f'<article class="citation" id="citation-{citation.ordinal}" '
        f'data-verdict="{_e(citation.verdict.value)}" '
        f'data-problems="{_e(" ".join(p.value for p in problems))}" style="--c:{meaning.colour}" '
        f'aria-labelledby="citation-{citation.ordinal}-title">'
        f'<header><h3 id="citation-{citation.ordinal}-title">'
        f'<span class="visually-hidden">Citation {citation.ordinal}: </span>'
        f"{_badge(citation.verdict, problems)}{_ABSTRACT_ONLY if abstract_only(citation) else ''}</h3>"
        f"<span>#{citation.ordinal}</span>"
        + _thesis_place(citation) +
        f"<span>Marker <code>{_e(citation.marker)}</code></span>"
        + (f'<span title="{_e(CONFIDENCE)}">{_e(confidence)}</span>' if confidence else "")
        + "</header>"
        f'<p class="claim">{_e(citation.claim)}</p>'
        f'<p class="rationale"><span class="label">Why:</span> {_e(explain(citation).plain)}</p>'
        f"{_checks_html(citation)}{source}{origin_html(citation)}{reference}{match_html}"
        f"{evidence_html}"
        f"{_numbers_html(citation)}"
        f"</article>"
    )


_QUOTE_WORDS = {"exact": "quoted exactly", "altered": "quoted with changes",
                "not_found": "not found in the source"}
_PAGE_WORDS = {"ok": "the cited page is right", "mismatch": "the cited page is wrong",
               "not_checkable": "the cited page could not be checked"}


def _checks_html(citation: CitationEntry) -> str:
    """The quotations and the cited page, as checked against the source's printed pages."""
    parts = []
    for q in citation.quotations:
        where = f" (p. {_e(', '.join(q.pages))})" if q.pages else ""
        change = f": {_e(q.difference)}" if q.difference else ""
        parts.append(f'<p class="quotation" data-quotation="{_e(q.status)}"><span class="label">'
                     f"Quotation:</span> <q>{_e(q.quote)}</q> — {_e(_QUOTE_WORDS[q.status])}"
                     f"{where}{change}</p>")
    check = citation.page_check
    if check is not None and check.status != "not_checkable":
        found = f", found on p. {_e(', '.join(check.found))}" if check.found else ""
        parts.append(f'<p class="page-check" data-page-check="{_e(check.status)}">'
                     f'<span class="label">Cited page:</span> {_e(_PAGE_WORDS[check.status])} '
                     f"(cited p. {_e(citation.locator or '')}{found})</p>")
    return "".join(parts)


def _page_styles(report: Report, images: PageImages) -> str:
    """One CSS rule per page image that a figure shows: each image is in the file once."""
    used = {
        (c.source.document_id, item.page)
        for c in report.citations
        for item in c.evidence
        if c.source is not None and item.page is not None and item.boxes
    }
    return "".join(
        f".{_page_class(document_id, page)}{{background-image:url(data:image/jpeg;base64,"
        f"{base64.b64encode(images[(document_id, page)]).decode('ascii')})}}"
        for document_id, page in sorted(used)
        if (document_id, page) in images
    )


def _skipped_html(skipped: list[SkippedEntry]) -> str:
    """What was not taken as a citation, grouped by reason (nothing dropped silently)."""
    if not skipped:
        return ""
    by_reason: dict[str, list[SkippedEntry]] = {}
    for entry in skipped:
        by_reason.setdefault(entry.reason, []).append(entry)
    items = "".join(
        f"<li><strong>{len(entries)}</strong> × {_e(reason)}: "
        + ", ".join(f"<code>{_e(e.text)}</code> ({_e(e.where)})" for e in entries[:10])
        + (f", and {len(entries) - 10} more" if len(entries) > 10 else "") + "</li>"
        for reason, entries in by_reason.items())
    return ('<section aria-labelledby="skipped-heading"><h2 id="skipped-heading">Not taken as '
            f'citations ({len(skipped)})</h2><ul class="skipped">{items}</ul></section>')


def _legend_html() -> str:
    """Every verdict, every problem and the report's other words, in plain words."""
    verdicts = "".join(f"<dt>{_badge(v)}</dt><dd>{_e(m.means)} <span class=\"label\">What to do:"
                       f"</span> {_e(m.do)}</dd>" for v, m in VERDICTS.items())
    problems = "".join(f'<dt><span class="flag">{_e(m.label)}</span></dt><dd>{_e(m.means)} '
                       f'<span class="label">What to do:</span> {_e(m.do)}</dd>'
                       for m in PROBLEMS.values())
    terms = "".join(f"<dt><strong>{_e(term)}</strong></dt><dd>{_e(text)}</dd>" for term, text in TERMS)
    return ('<section class="legend" aria-label="What the report says">'
            f'<details><summary>What the verdicts and problems mean</summary>'
            f'<dl data-legend="verdicts">{verdicts}</dl>'
            f'<p>A problem is added to the verdict’s badge:</p><dl data-legend="problems">{problems}</dl>'
            f'<dl data-legend="terms">{terms}</dl></details></section>')


def report_title(report: Report) -> str:
    """What the report is called: the thesis's own title (its PDF's, LaTeX's \\title,
    Word's document title), else the run's name."""
    title = " ".join((report.thesis.title or "").split())
    return title or report.name


def _time_html(moment: datetime.datetime) -> str:
    """A moment as the service's pages say it ("2026-12-06 09:45:12 UTC", no offset, no
    "T"), its instant for the script, which says it in the reader's own zone and language
    ("Dec 6, 2026, 10:45:12 AM") as the pages' script does."""
    utc = moment.astimezone(datetime.timezone.utc)
    words = f"{utc:%Y-%m-%d %H:%M:%S} UTC"
    return f'<time datetime="{_e(utc.isoformat(timespec="seconds"))}">{_e(words)}</time>'


def _summary_html(report: Report) -> str:
    """The counts that are not zero as boxes, the verdicts and problems no citation has in
    one line after them."""
    counts = report.summary.by_verdict
    problem_counts = report.summary.by_problem
    boxes: list[str] = []
    zeros: list[str] = []
    for verdict in judge.Verdict:
        n = counts.get(verdict)
        if n:
            boxes.append(f'<li data-summary="{_e(verdict.value)}"><span class="n">{n}</span>'
                         f"{_badge(verdict)}</li>")
        else:
            zeros.append(f'<span data-summary-zero="{_e(verdict.value)}">'
                         f"{_e(VERDICTS[verdict].label)}</span>")
    for problem in Problem:
        n = problem_counts.get(problem) if problem_counts else 0
        label = PROBLEMS[problem].label.capitalize()
        if n:
            boxes.append(f'<li data-summary-problem="{_e(problem.value)}"><span class="n">{n}</span>'
                         f'<span class="badge" style="--c:var(--flag-bg);color:var(--flag-fg)">'
                         f"{_e(label)}</span></li>")
        else:
            zeros.append(f'<span data-summary-zero="problem:{_e(problem.value)}">{_e(label)}</span>')
    listed = f'<ul class="summary">{"".join(boxes)}</ul>' if boxes else ""
    return listed + (f'<p class="zeros">None: {", ".join(zeros)}.</p>' if zeros else "")


def render_html(report: Report, page_images: PageImages | None = None) -> str:
    """One self-contained HTML page: summary, legend, filters, every citation, sources.

    ``page_images`` maps (document id, page) to a JPEG of that page: each evidence
    quote located on such a page is shown on the region of it around the quote,
    highlighted, with the whole page a click away; only those pages are embedded, once
    each.
    """
    images = page_images or {}
    counts = report.summary.by_verdict
    problem_counts = report.summary.by_problem
    summary = _summary_html(report)
    filters = "".join(
        f'<button type="button" data-filter="{_e(verdict.value)}" aria-pressed="false" '
        f'style="--c:{VERDICTS[verdict].colour}">{_e(VERDICTS[verdict].label)} ({counts.get(verdict)})</button>'
        for verdict in judge.Verdict
        if counts.get(verdict)
    ) + "".join(
        f'<button type="button" class="problem" data-filter="problem:{_e(problem.value)}" '
        f'aria-pressed="false" style="--c:var(--flag-bg)">'
        f"{_e(PROBLEMS[problem].label.capitalize())} ({problem_counts.get(problem)})</button>"
        for problem in Problem
        if problem_counts is not None and problem_counts.get(problem)
    )
    sources = "".join(
        f"<tr><td>{_e(s.title or '—')}</td><td><code>{_e(s.filename)}</code></td>"
        f"<td>{_e(s.status.value)}</td><td>{_e(_source_note(s))}</td></tr>"
        for s in report.sources
    )
    thesis = report.thesis
    name = report_title(report)
    tokens_html = f" · LLM judge: {report.judge_tokens:,} tokens" if report.judge_tokens else ""
    citations = "".join(_citation_html(c, images) for c in sorted(report.citations, key=risk)) or (
        "<p>No citations were found.</p>")
    unused_html = (
        '<section aria-labelledby="unused-heading"><h2 id="unused-heading">Sources no citation '
        'maps to</h2><ul class="unused">'
        + "".join(f"<li><code>{_e(name)}</code></li>" for name in report.unused_sources)
        + "</ul></section>"
        if report.unused_sources
        else ""
    )
    skipped_html = _skipped_html(thesis.skipped)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Citation report: {_e(name)}</title>
<style>{_CSS}{_page_styles(report, images)}</style>
</head>
<body>
<main>
<h1><span class="kicker">Citation report: </span>{_e(name)}</h1>
<p class="meta"><code>{_e(thesis.filename)}</code>, {_e(_thesis_extent(thesis))} · {_e(_plural(len(report.sources), "source", "sources"))} ·
checked {_time_html(report.created_at)}</p>
<section aria-labelledby="summary-heading" class="head-summary">
<h2 id="summary-heading">Summary: <span id="total">{report.summary.total}</span> citations</h2>
{summary}
</section>
{_legend_html()}
<section aria-labelledby="citations-heading">
<h2 id="citations-heading">Citations, the most doubtful first</h2>
<div class="filters" role="group" aria-label="Filter citations by verdict or problem">
<button type="button" id="show-all" aria-pressed="true">All ({report.summary.total})</button>
{filters}
<span id="shown" aria-live="polite"></span>
</div>
{citations}
</section>
{skipped_html}
{unused_html}
{fetched_section_html(report)}
<section aria-labelledby="sources-heading">
<h2 id="sources-heading">Sources</h2>
<table><thead><tr><th scope="col">Title</th><th scope="col">File</th><th scope="col">Status</th><th scope="col">Error</th></tr></thead>
<tbody>{sources}</tbody></table>
</section>
<p class="meta run-id">Run <code>{_e(report.run_id)}</code>{tokens_html}</p>
</main>
<script>{_SCRIPT}</script>
</body>
</html>
"""
