"""The service's pages: server-rendered HTML, every value escaped: the upload form, "My
runs", a run without its report (yet), and a message.

The pages allow no inline script or style (:data:`PAGE_CSP`); their stylesheet and
script are files (:mod:`citerun.web.assets`). A run's report is shown by
:mod:`citerun.web.report_page`.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from citerun.pipeline import intake
from citerun.pipeline.report.meaning import VERDICTS
from citerun.web.units import human_bytes

_e = html.escape

#: The policy of every page but the report.
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")

STATE_LABELS = {"running": "Running", "succeeded": "Finished", "failed": "Failed",
                "cancelled": "Cancelled"}
#: Without the script, a page of a running run reloads itself every 5 s.
_NOSCRIPT_RELOAD = '<noscript><meta http-equiv="refresh" content="5"></noscript>'
#: What a run's workers are doing, by the kind of its open tasks (stage order).
STAGE_LABELS = {
    "fetch_document": "Fetching the documents",
    "parse_document": "Reading the documents",
    "extract_citations": "Finding the citations in the thesis",
    "find_source": "Looking for open-access copies of the works without a PDF",
    "judge_citation": "Judging the citations",
    "finalize_run": "Writing the report",
}
SLOW_FIRST_JUDGEMENT_S = 8.0  # after this long, the page says why the first takes long

def _when(value: datetime | None) -> str:
    """A moment in words, to the second, in UTC (the script shows it in the reader's
    own time zone and language: :func:`time_tag`)."""
    if value is None:
        return "—"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_tag(value: datetime | None) -> str:
    """A ``<time>`` of a moment: :func:`_when`'s words, its ISO instant for the script
    (which rewrites it in the browser's locale and zone) and for machines."""
    if value is None:
        return "—"
    instant = value.astimezone(timezone.utc).isoformat(timespec="seconds")
    return f'<time datetime="{_e(instant)}">{_e(_when(value))}</time>'


def verdict_counts(verdicts: Mapping[str, int] | None) -> str:
    """A finished run's verdicts in words, the report's order ("Supported 12 ·
    Unsupported 3"); "" for none."""
    counts = dict(verdicts or {})
    parts = [f"{m.label} {counts.pop(str(v))}" for v, m in VERDICTS.items()
             if counts.get(str(v))]
    parts += [f"{k} {n}" for k, n in sorted(counts.items()) if n]
    return " · ".join(parts)


def retention_note(keep_days: float | None) -> str:
    """Who sees a user's files and how long they are kept (``web.keep_days``)."""
    kept = (f"kept for {keep_days:g} days after the run ends, then deleted"
            if keep_days is not None else "kept until you delete the run")
    return ("Who sees your files: you, the users you share a run with (read-only), and "
            "the administrators of this service. The files' contents are read for the run "
            "and erased from it when it ends; its report (with the passages quoted from "
            f"your sources) and the files' names are {kept}. Delete a run under My runs "
            "at any time: its report and files go at once.")


def run_title(row: Mapping[str, Any]) -> str:
    """What a run is called on the pages: its thesis's title, else its file name, else
    the run's name."""
    for key in ("title", "filename", "name"):
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return "thesis"


def document_label(document: Mapping[str, Any], run_state: str) -> str:
    """A document's state for this run, in words."""
    if document.get("error_reason"):
        return f"could not be read: {document['error_reason']}"
    state = document.get("state")
    if state == "parsed" or document.get("read_for_run"):
        return "read"
    if state == "failed":
        return "could not be read"
    return "waiting to be read" if run_state == "running" else "not read"


def stage_label(stages: Sequence[Mapping[str, Any]], judged: int) -> str | None:
    """What a running run's workers do now, in words (None: nothing is open)."""
    by_kind = {s["kind"]: s for s in stages}
    for kind, label in STAGE_LABELS.items():
        stage = by_kind.get(kind)
        if stage is None:
            continue
        if kind == "parse_document":
            return f"{label}: {stage['running']} being read, {stage['queued']} waiting."
        if kind == "judge_citation" and judged == 0 and stage["running"] and \
                stage["running_s"] >= SLOW_FIRST_JUDGEMENT_S:
            return (f"{label}: the first judgement takes longest while the workers load "
                    "the judge's models and the word lists of the thesis's language (the "
                    "German word lists on a German thesis); this takes up to a minute "
                    "once per worker.")
        return f"{label}."
    return None


def layout(title: str, body: str, *, user: str, csrf: str, reload: bool = False) -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="csrf-token" content="{_e(csrf)}">{_NOSCRIPT_RELOAD if reload else ""}
<title>{_e(title)} · citerun</title>
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script>
</head>
<body>
<header class="top"><strong>citerun</strong>
<nav aria-label="Main"><a href="/">Check a thesis</a><a href="/runs">My runs</a>
<a href="/runs#shared">Shared with me</a></nav>
<span class="user">Signed in as {_e(user)}</span></header>
<main>
{body}
</main>
</body>
</html>
"""


def _alert(message: str | None, *, link: bool = False) -> str:
    if not message:
        return ""
    more = (' <a href="/runs">Open My runs to cancel a run.</a>' if link else "")
    return f'<p class="error" role="alert">{_e(message)}{more}</p>'


#: The form's checkbox that asks for open-access copies of the works without a PDF.
FETCH_FIELD = "fetch_sources"


def _fetch_html(offered: bool) -> str:
    """The checkbox of :data:`FETCH_FIELD` where the operator offers it (issue 51)."""
    if not offered:
        return ""
    return (f'<p class="check"><input id="fetch" name="{FETCH_FIELD}" type="checkbox" value="1" '
            'aria-describedby="fetch-hint"> <label for="fetch">Look for open-access copies of '
            'the works I have no PDF of</label></p>'
            '<p class="hint" id="fetch-hint">Their DOI, arXiv or PubMed id, or title, author '
            "and year (never your thesis's text) are sent to Unpaywall, OpenAlex, arXiv, Europe "
            "PMC, Semantic Scholar and Crossref; a PDF found is checked like an uploaded one, an "
            "abstract alone is marked “abstract only”.</p>")


def upload_page(*, user: str, csrf: str, max_bytes: int, error: str | None = None,
                error_links_runs: bool = False, keep_days: float | None = None,
                fetch_offered: bool = False) -> str:
    body = f"""<h1>Check the citations of a thesis</h1>
{_alert(error, link=error_links_runs)}
<form id="upload" method="post" action="/api/runs" enctype="multipart/form-data">
<input type="hidden" name="csrf_token" value="{_e(csrf)}">
<label for="thesis">The thesis</label>
<p class="hint" id="thesis-hint">A PDF, a Word .docx, a .zip holding a LaTeX thesis, or a
single .tex file.</p>
<input id="thesis" name="thesis" type="file" required accept="{",".join(intake.THESIS_SUFFIXES)}"
aria-describedby="thesis-hint">
<label for="main">Main .tex file (optional)</label>
<p class="hint" id="main-hint">Only for a .zip holding a LaTeX thesis where two files
could be the main one: its path in the zip, as <code>thesis/main.tex</code>, or its file
name. Left empty, the file that loads the document class and begins the document is
read.</p>
<input id="main" name="main" type="text" maxlength="200" autocomplete="off"
spellcheck="false" aria-describedby="main-hint">
<label for="sources">The cited sources</label>
<p class="hint" id="sources-hint">PDFs; a source's file name is how the library's file
fields name it. A Word or LaTeX thesis with its library may come without them: its
report lists the sources to add.</p>
<input id="sources" name="sources" type="file" multiple accept=".pdf,application/pdf"
aria-describedby="sources-hint">
<label for="library">The library (optional)</label>
<p class="hint" id="library-hint">BibTeX/BibLaTeX (.bib) or CSL-JSON (.json) from Zotero,
JabRef or Mendeley.</p>
<input id="library" name="library" type="file" multiple accept="{",".join(intake.LIBRARY_SUFFIXES)}"
aria-describedby="library-hint">
{_fetch_html(fetch_offered)}
<p class="hint">At most {_e(human_bytes(max_bytes))} in all.</p>
<p class="hint" id="retention">{_e(retention_note(keep_days))}</p>
<button type="submit">Upload and check</button>
<progress id="upload-progress" max="100" value="0" hidden aria-label="Upload"></progress>
<p id="upload-status" role="status"></p>
<p id="upload-error" class="error" role="alert" hidden></p>
</form>"""
    return layout("Check a thesis", body, user=user, csrf=csrf)


def _cancel_form(run_id: str, title: str, csrf: str, back: str, when: str = "") -> str:
    """A running run's Cancel: asked first, by the script (``data-confirm``) or, without
    it, by a page (``ask=1``: :func:`cancel_page`)."""
    label = f"Cancel run {title}" + (f" (started {when})" if when else "")
    ask = f"Cancel the run {title}? It stops for good; its report will not be written."
    return (f'<form class="inline cancel" method="post" action="/runs/{_e(run_id)}/cancel" '
            f'data-confirm="{_e(ask)}">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            f'<input type="hidden" name="next" value="{_e(back)}">'
            f'<input type="hidden" name="ask" value="1">'
            f'<button type="submit" aria-label="{_e(label)}">Cancel</button></form>')


def cancel_page(run_id: str, title: str, *, user: str, csrf: str, back: str) -> str:
    """Asks before a running run is cancelled (the Cancel without the script)."""
    body = (f"<h1>Cancel this run?</h1>"
            f"<p>The run <strong>{_e(title)}</strong> stops for good; its report will not "
            "be written. You can check the thesis again later.</p>"
            f'<form method="post" action="/runs/{_e(run_id)}/cancel">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            f'<input type="hidden" name="next" value="{_e(back)}">'
            f'<input type="hidden" name="confirm" value="yes">'
            f'<button type="submit">Cancel the run</button></form>'
            f'<p><a href="{_e(back)}">Let it run</a></p>')
    return layout("Cancel this run?", body, user=user, csrf=csrf)


def delete_form(run_id: str, title: str, csrf: str, when: str = "") -> str:
    """The owner's Delete of an ended run: a form POST with the CSRF token; the script
    asks first (``data-confirm``), and without it the answer is a page that asks
    (:func:`delete_page`)."""
    label = f"Delete run {title}" + (f" (started {when})" if when else "")
    ask = f"Delete the run {title}, its report and its uploaded files? This cannot be undone."
    return (f'<form class="inline delete" method="post" action="/runs/{_e(run_id)}/delete" '
            f'data-confirm="{_e(ask)}">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            f'<button type="submit" aria-label="{_e(label)}">Delete</button></form>')


def delete_page(run_id: str, title: str, *, user: str, csrf: str,
                readers: Sequence[str] = ()) -> str:
    """Asks before an ended run is deleted (the Delete without the script)."""
    shared = (f" {', '.join(readers)} will no longer be able to read it." if readers else "")
    body = (f"<h1>Delete this run?</h1>"
            f"<p>The run <strong>{_e(title)}</strong>, its report and its uploaded files "
            f"will be deleted for good.{_e(shared)}</p>"
            f'<form method="post" action="/runs/{_e(run_id)}/delete">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            f'<input type="hidden" name="confirm" value="yes">'
            f'<button type="submit">Delete the run</button></form>'
            f'<p><a href="/runs/{_e(run_id)}">Keep it</a> · <a href="/runs">My runs</a></p>')
    return layout("Delete this run?", body, user=user, csrf=csrf)


def progress_words(row: Mapping[str, Any]) -> str:
    """A listed run's counts: while it runs, its citations and how many are judged;
    once it has succeeded, its verdicts."""
    citations, judged = int(row.get("citations") or 0), int(row.get("judged") or 0)
    if row["state"] == "succeeded":
        counts = verdict_counts(row.get("verdicts"))
        return f"{citations} citation(s)" + (f": {counts}" if counts else "")
    return f"{citations} citation(s), {judged} judged"


def _rows(rows: Sequence[Mapping[str, Any]], csrf: str, *, owner: bool) -> str:
    out = []
    for r in rows:
        run_id = str(r["id"])
        title = run_title(r)
        when = _when(r["created_at"])
        if not owner:
            action = ""
        elif r["state"] == "running":
            action = _cancel_form(run_id, title, csrf, "/runs", when)
        else:
            action = delete_form(run_id, title, csrf, when)
        who = "" if owner else f'<td>{_e(str(r.get("owner", "")))}</td>'
        filename = r.get("filename") or r.get("name") or ""
        file_line = (f'<br><span class="hint">{_e(str(filename))}</span>'
                     if filename and filename != title else "")
        out.append(
            f'<tr data-run="{_e(run_id)}" data-state="{_e(r["state"])}">'
            f'<td class="title"><a href="/runs/{_e(run_id)}">{_e(title)}</a>{file_line}</td>'
            f'{who}<td class="state state-{_e(r["state"])}">'
            f'{_e(STATE_LABELS.get(r["state"], r["state"]))}</td>'
            f'<td class="progress">{_e(progress_words(r))}</td>'
            f'<td class="when">{time_tag(r["created_at"])}</td>'
            + (f'<td class="actions">{action}</td>' if owner else "") + "</tr>")
    return "".join(out)


def runs_page(rows: Sequence[Mapping[str, Any]], *, user: str, csrf: str,
              shared: Sequence[Mapping[str, Any]] = (), keep_days: float | None = None,
              notice: str | None = None) -> str:
    mine = (f'<table class="runs" data-poll><thead><tr><th scope="col">Thesis</th>'
            f'<th scope="col">State</th><th scope="col">Citations</th>'
            f'<th scope="col">Started</th><th scope="col"><span class="hint">Action</span></th>'
            f"</tr></thead><tbody>{_rows(rows, csrf, owner=True)}</tbody></table>"
            if rows else '<p>No runs yet. <a href="/">Check a thesis.</a></p>')
    theirs = (f'<table class="runs"><thead><tr><th scope="col">Thesis</th>'
              f'<th scope="col">Shared by</th><th scope="col">State</th>'
              f'<th scope="col">Citations</th><th scope="col">Started</th></tr></thead>'
              f"<tbody>{_rows(shared, csrf, owner=False)}</tbody></table>"
              if shared else "<p>Nobody has shared a run with you.</p>")
    said = f'<p class="notice" role="status">{_e(notice)}</p>\n' if notice else ""
    body = (f'<h1>My runs</h1>\n{said}<p id="offline" class="offline" role="status" hidden>'
            f'</p>\n{mine}\n<p class="hint" id="retention">{_e(retention_note(keep_days))}</p>'
            f'\n<h2 id="shared">Shared with me</h2>\n'
            f'<p class="hint">Runs other users let you read (read-only).</p>\n{theirs}')
    return layout("My runs", body, user=user, csrf=csrf,
                  reload=any(r["state"] == "running" for r in rows))


def share_form(run_id: str, csrf: str) -> str:
    """The owner's form that lets a named user read the run (no script needed)."""
    return (f'<form method="post" action="/runs/{_e(run_id)}/shares">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            f'<label for="reader">Their user name (as they sign in)</label>'
            f'<p class="hint" id="reader-hint">A name nobody has signed in as yet is marked '
            f'(a typo?).</p>'
            f'<input id="reader" name="reader" type="text" required maxlength="256" '
            f'autocomplete="off" aria-describedby="reader-hint"> '
            '<button type="submit">Share read-only</button></form>')


def _unknown_note(reader: str, unknown: Collection[str]) -> str:
    if reader not in unknown:
        return ""
    return (f' <span class="warning">(nobody has signed in as {_e(reader)} yet: check the '
            "spelling; they can read it once they sign in with this name)</span>")


def reader_items(run_id: str, readers: Sequence[str], csrf: str, *,
                 form_class: str = "", unknown: Collection[str] = ()) -> str:
    """Those who may read the run, each with a button that takes it back; a name nobody
    has signed in as (``unknown``: a typo?) says so."""
    attribute = f'class="{form_class}" ' if form_class else ""
    return "".join(
        f'<li>{_e(reader)}{_unknown_note(reader, unknown)} <form {attribute}method="post" '
        f'action="/runs/{_e(run_id)}/shares/remove">'
        f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
        f'<input type="hidden" name="reader" value="{_e(reader)}">'
        f'<button type="submit" aria-label="Stop sharing with {_e(reader)}">Stop sharing'
        "</button></form></li>" for reader in readers)


def send_link(link: str) -> str:
    """What to send a reader: the run's address (they find it under Shared with me
    too)."""
    return (f'<p class="hint send">Send them this link: <a href="{_e(link)}">{_e(link)}</a> '
            "(they sign in as themselves; it is under their Shared with me too).</p>")


def sharing_html(run_id: str, readers: Sequence[str], csrf: str, link: str = "",
                 unknown: Collection[str] = (), *, open_to_more: bool = True) -> str:
    """The run page's sharing: :func:`share_form` (while ``open_to_more``: a failed or
    cancelled run is shared with nobody new), :func:`reader_items` and the link to send
    them."""
    items = reader_items(run_id, readers, csrf, form_class="inline", unknown=unknown)
    listed = (f"<p>Who may read this run:</p><ul>{items}</ul>"
              + (send_link(link) if link else "")
              if readers else '<p class="hint">Nobody else can see this run.</p>')
    return (f'<section class="share" aria-labelledby="share-heading">'
            f'<h2 id="share-heading">Share with a supervisor</h2>'
            f"{share_form(run_id, csrf) if open_to_more else ''}{listed}</section>")


def run_page(run: Mapping[str, Any], status: Mapping[str, Any], *, user: str,
             csrf: str, owner: bool = True, readers: Sequence[str] = (),
             link: str = "", unknown: Collection[str] = ()) -> str:
    """A run that has no report (yet): its state and progress, polled while it runs; a
    finished one (failed, cancelled) stops: counts, no bar."""
    progress = status["progress"]
    state = run["state"]
    running = state == "running"
    title = status.get("title") or run_title(run)

    def bar(name: str, label: str, done: int, total: int) -> str:
        text = f"{done} of {total}" if total else ("not started yet" if running else "none")
        if not running:
            return f'<p><strong>{label}:</strong> <span id="{name}-text">{text}</span></p>'
        value = f' value="{done}" max="{total}"' if total else ""
        return (f'<label for="{name}">{label}</label><progress id="{name}"{value}></progress>'
                f'<p id="{name}-text" class="hint count">{text}</p>')

    # A run its owner cancelled is no error: said plainly, not as an alert (issue 47).
    error = _alert(run["error"]) if run["error"] and state != "cancelled" else ""
    docs = "".join(f'<li data-digest="{_e(d["digest"])}"><code>{_e(d["filename"])}</code> '
                   f'({"thesis" if d["role"] == "thesis" else "source"}: '
                   f'<span class="doc-state">{_e(d["stateLabel"])}</span>)</li>'
                   for d in status["documents"])
    stage = (f'<p id="stage" class="stage" role="status">{_e(status.get("stage") or "")}</p>'
             if running else "")
    who = ("" if owner else
           f'<p class="hint">Shared with you by {_e(str(run.get("owner", "")))}: '
           "read-only.</p>")
    cancel = (_cancel_form(str(run["id"]), title, csrf, f"/runs/{run['id']}")
              if running and owner else "")
    how = {"failed": ": it failed", "cancelled": ": it was cancelled"}.get(state, "")
    ended = ("" if running else
             f'<p class="ended">This run has stopped{how} at '
             f"{time_tag(run.get('finished_at'))}. It will not continue; "
             '<a href="/">check the thesis again</a> to start a new run.</p>')
    delete = (f'<p>{delete_form(str(run["id"]), title, csrf)}</p>'
              if owner and not running else "")
    body = f"""<h1>{_e(title)}</h1>
{who}
<section data-run-id="{_e(str(run["id"]))}" data-state="{_e(state)}">
<p>State: <span id="state" class="state state-{_e(state)}">{_e(STATE_LABELS.get(state, state))}</span>
{cancel}</p>
{error}
<p id="offline" class="offline" role="alert" hidden></p>
{stage}
{bar("documents", "Documents read", progress["documentsDone"], progress["documents"])}
{bar("judged", "Citations judged", progress["judged"], progress["citations"])}
{ended}
<h2>Documents</h2><ul>{docs}</ul>
<p class="hint">Started {time_tag(run["created_at"])}.{" The report opens here when the run has finished." if running else ""}</p>
{delete}
</section>
{sharing_html(str(run["id"]), readers, csrf, link, unknown, open_to_more=running) if owner and (running or readers) else ""}"""
    return layout(title, body, user=user, csrf=csrf, reload=running)


def message_page(title: str, text: str, *, user: str, csrf: str) -> str:
    return layout(title, f'<h1>{_e(title)}</h1><p class="error" role="alert">{_e(text)}</p>'
                  '<p><a href="/runs">My runs</a> · <a href="/">Check a thesis</a></p>',
                  user=user, csrf=csrf)


