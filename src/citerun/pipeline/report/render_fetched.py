"""The HTML of sources nobody gave (issue 51): where a fetched source came from (link,
service, licence) beside a citation, "abstract only" on the badge of a citation judged on
an abstract alone, and the list of the works looked for: found as a PDF, as an abstract
only, or not at all, with the identifiers tried. :mod:`.render` places them."""

from __future__ import annotations

import html

from citerun.pipeline.report.model import CitationEntry, FetchedFrom, Report

__all__ = ["abstract_only", "fetched_section_html", "origin_html"]

_STATUS_WORDS = {"pdf": "open-access PDF found", "abstract": "abstract only",
                 "not_found": "not found"}


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _link(url: str | None, text: str) -> str:
    """``text`` linked to ``url`` where it is a web address (a service's metadata chose it:
    nothing else is made a link)."""
    if url and url.startswith(("https://", "http://")):
        return f'<a href="{_e(url)}" rel="noopener noreferrer nofollow">{_e(text)}</a>'
    return _e(text)


def _origin(fetched: FetchedFrom) -> str:
    what = "open-access PDF" if fetched.kind == "pdf" else "abstract only"
    by = f" from {_e(fetched.service)}" if fetched.service else ""
    licence = f", licence {_e(fetched.licence)}" if fetched.licence else ""
    version = f", {_e(fetched.version)}" if fetched.version else ""
    link = f" ({_link(fetched.url, fetched.url)})" if fetched.url else ""
    return f"{_e(what)}{by}{licence}{version}{link}"


def abstract_only(citation: CitationEntry) -> bool:
    """Whether ``citation`` was judged on a fetched abstract alone."""
    return (citation.source is not None and citation.source.fetched is not None
            and citation.source.fetched.kind == "abstract")


def origin_html(citation: CitationEntry) -> str:
    """Where the citation's source came from when nobody gave it, as a paragraph; ""
    for a source given."""
    if citation.source is None or citation.source.fetched is None:
        return ""
    return (f'<p class="fetched"><span class="label">Fetched:</span> '
            f"{_origin(citation.source.fetched)}</p>")


def fetched_section_html(report: Report) -> str:
    """The works without a PDF the run looked for; "" when it looked for none."""
    if not report.fetched:
        return ""
    rows = []
    for w in report.fetched:
        where = (_origin(w.source) if w.source is not None else
                 "tried: " + _e("; ".join(w.tried) or "nothing to look up"))
        if w.reason:
            where += f" ({_e(w.reason)})"
        rows.append(f"<tr><td><code>{_e(w.key)}</code></td><td>{_e(w.reference)}</td>"
                    f"<td>{_e(_STATUS_WORDS[w.status])}</td><td>{where}</td></tr>")
    counts = {s: sum(w.status == s for w in report.fetched) for s in _STATUS_WORDS}
    return ('<section aria-labelledby="fetched-heading"><h2 id="fetched-heading">Works '
            'without a PDF, looked for</h2>'
            f"<p>{counts['pdf']} found as an open-access PDF, {counts['abstract']} as an "
            f"abstract only, {counts['not_found']} not found. A citation judged on an "
            "abstract only says so; add the full text to check it against the work.</p>"
            '<table><thead><tr><th scope="col">Key</th><th scope="col">Reference</th>'
            '<th scope="col">Found</th><th scope="col">From, or the identifiers tried</th>'
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>")
