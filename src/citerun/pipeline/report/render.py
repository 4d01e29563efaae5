"""The report as one self-contained HTML page.

The page is one string with inline CSS and a little inline JavaScript and no external
URL at all, because it is stored in Postgres next to the JSON, served as is, mailed
around, and opened offline. Everything that comes from a thesis, a source or a model is
HTML-escaped; the page works without JavaScript (the filters then do nothing and every
citation stays visible). The page lists the citations riskiest first (:func:`risk`);
the JSON keeps reading order.
"""

from __future__ import annotations

import base64
import collections.abc
import html

from citerun.pipeline import judge
from citerun.pipeline.report.model import CitationEntry, EvidenceEntry, Report, SkippedEntry

__all__ = ["PageImages", "render_html", "risk"]


# What a reader should check first: a contradiction, then a claim the source does not
# make, then part-support, then what could not be judged; within a verdict the less sure
# judgement of a positive verdict (the sure ones of a negative verdict) first.
_RISK_ORDER = {"contradicted": 0, "unsupported": 1, "partially_supported": 2,
               "unresolved_citation": 3, "source_unavailable": 4, "supported": 5}


def risk(citation: CitationEntry) -> tuple[int, float, int]:
    """Sort key of ``citation``: the riskiest first, then reading order."""
    rank = _RISK_ORDER.get(citation.verdict.value, 3)
    sure = citation.confidence if rank >= 2 else -citation.confidence
    return rank, sure, citation.ordinal


# Label, colour: white text on each colour has a contrast ratio of at least 4.5:1.
_STYLE: dict[judge.Verdict, tuple[str, str]] = {
    judge.Verdict.SUPPORTED: ("Supported", "#1a7f37"),
    judge.Verdict.PARTIALLY_SUPPORTED: ("Partially supported", "#9a6700"),
    judge.Verdict.UNSUPPORTED: ("Unsupported", "#57606a"),
    judge.Verdict.CONTRADICTED: ("Contradicted", "#cf222e"),
    judge.Verdict.SOURCE_UNAVAILABLE: ("Source unavailable", "#8250df"),
    judge.Verdict.UNRESOLVED_CITATION: ("Unresolved citation", "#0550ae"),
}

_CSS = """
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: #fff; }
main { max-width: 60rem; margin: 0 auto; padding: 1.5rem 1rem 4rem; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .75rem; }
.meta { color: var(--muted); margin: 0; }
.summary { display: grid; grid-template-columns: repeat(auto-fill, minmax(9rem, 1fr)); gap: .5rem;
  margin: 1rem 0; padding: 0; list-style: none; }
.summary li { border: 1px solid var(--line); border-radius: .5rem; padding: .5rem .75rem;
  background: var(--bg); }
.summary .n { display: block; font-size: 1.6rem; font-weight: 700; }
.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .5rem 0 1rem; }
.filters button { font: inherit; font-size: .9rem; cursor: pointer; border-radius: 999px;
  padding: .25rem .8rem; border: 2px solid var(--c, var(--muted)); background: #fff; color: var(--fg); }
.filters button[aria-pressed="true"] { background: var(--c, var(--muted)); color: #fff; }
.filters button:focus-visible { outline: 3px solid #0969da; outline-offset: 2px; }
#shown { color: var(--muted); font-size: .9rem; }
.citation { border: 1px solid var(--line); border-left: 6px solid var(--c); border-radius: .5rem;
  padding: .75rem 1rem; margin: 0 0 1rem; }
.citation header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center;
  color: var(--muted); font-size: .9rem; }
.badge { display: inline-block; background: var(--c); color: #fff; font-weight: 600;
  border-radius: .3rem; padding: .05rem .5rem; }
.claim { margin: .5rem 0; font-size: 1.05rem; }
.claim::before { content: "“"; } .claim::after { content: "”"; }
.source, .rationale { margin: .25rem 0; }
.label { color: var(--muted); }
.evidence { margin: .5rem 0; padding: 0; list-style: none; }
.evidence li { background: var(--bg); border-radius: .35rem; padding: .4rem .6rem; margin: .25rem 0; }
.evidence q { font-style: italic; }
.page { white-space: nowrap; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: .95rem; }
th, td { text-align: left; border-bottom: 1px solid var(--line); padding: .35rem .5rem; vertical-align: top; }
code { font-size: .85em; }
[hidden] { display: none !important; }
.evidence-page { margin: .5rem 0 0; max-width: 28rem; }
.sheet { position: relative; width: 100%; background-size: 100% 100%; background-color: #fff;
  border: 1px solid var(--line); }
.hl { position: absolute; background: rgba(255, 200, 0, .45); outline: 2px solid #bf8700;
  mix-blend-mode: multiply; }
.evidence-page figcaption { color: var(--muted); font-size: .85rem; }
.reference, .match { margin: .25rem 0; font-size: .95rem; }
"""

_SCRIPT = """
(function () {
  var buttons = Array.prototype.slice.call(document.querySelectorAll("button[data-filter]"));
  var all = document.getElementById("show-all");
  var items = Array.prototype.slice.call(document.querySelectorAll("article.citation"));
  var shown = document.getElementById("shown");
  function apply() {
    var on = buttons.filter(function (b) { return b.getAttribute("aria-pressed") === "true"; })
                    .map(function (b) { return b.getAttribute("data-filter"); });
    var count = 0;
    items.forEach(function (item) {
      var visible = on.length === 0 || on.indexOf(item.getAttribute("data-verdict")) !== -1;
      item.hidden = !visible;
      if (visible) { count += 1; }
    });
    all.setAttribute("aria-pressed", on.length === 0 ? "true" : "false");
    shown.textContent = "Showing " + count + " of " + items.length + " citations";
  }
  buttons.forEach(function (b) {
    b.addEventListener("click", function () {
      b.setAttribute("aria-pressed", b.getAttribute("aria-pressed") === "true" ? "false" : "true");
      apply();
    });
  });
  all.addEventListener("click", function () {
    buttons.forEach(function (b) { b.setAttribute("aria-pressed", "false"); });
    apply();
  });
  apply();
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _pages(start: int, end: int) -> str:
    return f"p. {start}" if start == end else f"pp. {start}–{end}"


def _badge(verdict: judge.Verdict) -> str:
    label, colour = _STYLE[verdict]
    return f'<span class="badge" style="--c:{colour}">{_e(label)}</span>'


PageImages = collections.abc.Mapping[tuple[str, int], bytes]


def _page_class(document_id: str, page: int) -> str:
    return f"pg-{document_id[:16]}-{page}"


def _figure(citation: CitationEntry, item: EvidenceEntry, images: PageImages) -> str:
    """The evidence's page as an image with its lines highlighted (percent offsets, so
    the figure scales with the page); empty without an image or located boxes."""
    if (citation.source is None or item.page is None or not item.boxes
            or not item.page_width or not item.page_height
            or (citation.source.document_id, item.page) not in images):
        return ""
    width, height = item.page_width, item.page_height
    marks = "".join(
        f'<span class="hl" style="left:{100 * b.x0 / width:.2f}%;top:{100 * b.y0 / height:.2f}%;'
        f'width:{100 * (b.x1 - b.x0) / width:.2f}%;height:{100 * (b.y1 - b.y0) / height:.2f}%"></span>'
        for b in item.boxes
    )
    label = f"Page {item.page} of {citation.source.filename} with the quoted passage highlighted"
    return (
        f'<figure class="evidence-page" role="img" aria-label="{_e(label)}">'
        f'<div class="sheet {_page_class(citation.source.document_id, item.page)}" '
        f'style="aspect-ratio:{width:.1f}/{height:.1f}">{marks}</div>'
        f"<figcaption>p. {item.page}</figcaption></figure>"
    )


def _citation_html(citation: CitationEntry, images: PageImages) -> str:
    label, colour = _STYLE[citation.verdict]
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
        f'<p class="match"><span class="label">Mapped by:</span> {_e(match.method)}'
        + (f" (score {match.score:.0f})" if match.score is not None else "")
        + (f" — {_e(match.reason)}" if match.reason else "")
        + "</p>"
        if match is not None and match.method
        else ""
    )
    evidence = "".join(
        f'<li><q>{_e(item.quote)}</q> — <span class="page">{_e(_pages(item.page_start, item.page_end))}</span>'
        f' <span class="label">(match {item.score:.2f})</span>{_figure(citation, item, images)}</li>'
        for item in citation.evidence
    )
    evidence_html = (
        f'<p class="label">Evidence from the source:</p><ul class="evidence">{evidence}</ul>'
        if evidence
        else ""
    )
    return (
        f'<article class="citation" id="citation-{citation.ordinal}" '
        f'data-verdict="{_e(citation.verdict.value)}" style="--c:{colour}" '
        f'aria-label="Citation {citation.ordinal}: {_e(label)}">'
        f"<header>{_badge(citation.verdict)}"
        f"<span>#{citation.ordinal}</span>"
        f'<span>Thesis <span class="page">p. {citation.page}</span></span>'
        f"<span>Marker <code>{_e(citation.marker)}</code></span>"
        f"<span>Confidence {citation.confidence:.0%}</span></header>"
        f'<p class="claim">{_e(citation.claim)}</p>'
        f"{source}{reference}{match_html}{_checks_html(citation)}{evidence_html}"
        f'<p class="rationale"><span class="label">Why:</span> {_e(citation.rationale)}</p>'
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


def render_html(report: Report, page_images: PageImages | None = None) -> str:
    """One self-contained HTML page: summary, verdict filters, every citation, sources.

    ``page_images`` maps (document id, page) to a JPEG of that page: each evidence
    quote located on such a page is shown on it, highlighted; only those pages are
    embedded, once each.
    """
    images = page_images or {}
    counts = report.summary.by_verdict
    summary = "".join(
        f'<li data-summary="{_e(verdict.value)}"><span class="n">{counts.get(verdict)}</span>'
        f"{_badge(verdict)}</li>"
        for verdict in judge.Verdict
    )
    filters = "".join(
        f'<button type="button" data-filter="{_e(verdict.value)}" aria-pressed="false" '
        f'style="--c:{_STYLE[verdict][1]}">{_e(_STYLE[verdict][0])} ({counts.get(verdict)})</button>'
        for verdict in judge.Verdict
        if counts.get(verdict)
    )
    sources = "".join(
        f"<tr><td>{_e(s.title or '—')}</td><td><code>{_e(s.filename)}</code></td>"
        f"<td>{_e(s.status.value)}</td><td>{_e(s.error or '')}</td></tr>"
        for s in report.sources
    )
    thesis = report.thesis
    thesis_name = _e(thesis.title) + f" (<code>{_e(thesis.filename)}</code>)" if thesis.title else (
        f"<code>{_e(thesis.filename)}</code>"
    )
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
<title>Citation report: {_e(report.name)}</title>
<style>{_CSS}{_page_styles(report, images)}</style>
</head>
<body>
<main>
<h1>Citation report: {_e(report.name)}</h1>
<p class="meta">Thesis: {thesis_name}, {thesis.pages} pages · {len(report.sources)} sources ·
created {_e(report.created_at.isoformat(timespec="seconds"))} · run <code>{_e(report.run_id)}</code>{tokens_html}</p>
<section aria-labelledby="summary-heading">
<h2 id="summary-heading">Summary: <span id="total">{report.summary.total}</span> citations</h2>
<ul class="summary">{summary}</ul>
</section>
<section aria-labelledby="citations-heading">
<h2 id="citations-heading">Citations, the most doubtful first</h2>
<div class="filters" role="group" aria-label="Filter citations by verdict">
<button type="button" id="show-all" aria-pressed="true">All ({report.summary.total})</button>
{filters}
<span id="shown" aria-live="polite"></span>
</div>
{citations}
</section>
{skipped_html}
{unused_html}
<section aria-labelledby="sources-heading">
<h2 id="sources-heading">Sources</h2>
<table><thead><tr><th>Title</th><th>File</th><th>Status</th><th>Error</th></tr></thead>
<tbody>{sources}</tbody></table>
</section>
</main>
<script>{_SCRIPT}</script>
</body>
</html>
"""
