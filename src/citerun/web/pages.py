"""The service's pages: server-rendered HTML (every value escaped), one stylesheet and one
small script served from the package, no bundle and nothing from the network.

The pages allow no inline script or style (the Content-Security-Policy says
``'self'``), so the script is a file: it shows the upload's progress and polls a
running run's status every 1.5 s. The stored report (``citerun.pipeline.report``) keeps
its own inline ``<style>``, ``<script>`` and style attributes; :func:`report_page` moves
the attributes into its stylesheet and allows exactly its two blocks by their hashes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from citerun.core import pdfmagic
from citerun.web.units import human_bytes

_e = html.escape

#: The policy of every page but the report.
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")

#: How often a running run's page (and "My runs" while one runs) asks, in milliseconds.
POLL_MS = 1500

STATE_LABELS = {"running": "Running", "succeeded": "Finished", "failed": "Failed",
                "cancelled": "Cancelled"}
#: Without the script, a page of a running run reloads itself every 5 s.
_NOSCRIPT_RELOAD = '<noscript><meta http-equiv="refresh" content="5"></noscript>'
#: What a run's workers are doing, by the kind of its open tasks (stage order).
STAGE_LABELS = {
    "fetch_document": "Fetching the documents",
    "parse_document": "Reading the documents",
    "extract_citations": "Finding the citations in the thesis",
    "judge_citation": "Judging the citations",
    "finalize_run": "Writing the report",
}
SLOW_FIRST_JUDGEMENT_S = 8.0  # after this long, the page says why the first takes long

# Colours: every text colour has a contrast of at least 4.5:1 (WCAG AA) on its scheme's
# background: light #1a1a1a/#fff (17:1), hint #555 (7.5:1), error #b00020 (6.9:1), done
# #1b6e20 (6.4:1), link #0b57d0 (6.3:1); dark #e8e8e8/#121212 (15:1), hint #b4b4b4
# (9:1), error #ff8a80 (8.6:1), done #81c784 (9.3:1), link #8ab4f8 (8.9:1).
APP_CSS = """
:root{color-scheme:light dark;font-family:system-ui,sans-serif;line-height:1.45;
--fg:#1a1a1a;--bg:#fff;--muted:#555;--line:#8886;--error:#b00020;--error-bg:#fdecee;
--done:#1b6e20;--link:#0b57d0;--box:#f3f4f6}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8e8;--bg:#121212;--muted:#b4b4b4;
--line:#fff3;--error:#ff8a80;--error-bg:#3a1d1d;--done:#81c784;--link:#8ab4f8;--box:#1e1e1e}}
*{box-sizing:border-box}
html{background:var(--bg);color:var(--fg)}
body{max-width:60rem;margin:0 auto;padding:1rem 1.5rem;overflow-wrap:anywhere}
a{color:var(--link)}
header.top{display:flex;flex-wrap:wrap;gap:.3rem 1.5rem;align-items:baseline;
border-bottom:1px solid var(--line);margin-bottom:1rem;padding-bottom:.3rem}
header.top nav{display:flex;flex-wrap:wrap;gap:.2rem 1rem}
.user{margin-left:auto;color:var(--muted)}
label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input[type=file],input[type=text]{max-width:100%}
.hint{color:var(--muted);font-size:.9rem;margin:.1rem 0}
button{margin-top:1rem;padding:.4rem 1rem;font:inherit}
progress{width:100%;height:1rem}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
.state{font-weight:600}
.state-failed,.state-cancelled,.error{color:var(--error)}
.state-succeeded{color:var(--done)}
.error{background:var(--error-bg);border-left:4px solid var(--error);padding:.5rem .75rem;
font-weight:600}
.offline{background:var(--box);border-left:4px solid var(--error);padding:.5rem .75rem}
.stale .count{opacity:.6}
.stage{font-style:italic}
form.inline{display:inline;margin:0}
form.inline button{margin:0;padding:.1rem .6rem}
.bar{display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center;margin:.5rem 0 1rem}
.share input{padding:.3rem}
@media (max-width:40rem){
body{padding:.75rem}
table.runs,table.runs tbody,table.runs tr,table.runs td{display:block;width:100%}
table.runs thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
table.runs tr{border-bottom:1px solid var(--line);padding:.4rem 0}
table.runs td{border:0;padding:.1rem 0}
}
"""

APP_JS = """
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  var token = meta ? meta.getAttribute("content") : "";
  var clock = function () { return new Date().toLocaleTimeString(); };

  var form = document.getElementById("upload");
  if (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var bar = document.getElementById("upload-progress");
      var status = document.getElementById("upload-status");
      var failure = document.getElementById("upload-error");
      var button = form.querySelector("button");
      var fail = function (text) {
        failure.textContent = text;
        if (text.indexOf("cancel one") >= 0) {
          var link = document.createElement("a");
          link.href = "/runs";
          link.textContent = "Open My runs to cancel a run.";
          failure.appendChild(document.createTextNode(" "));
          failure.appendChild(link);
        }
        failure.hidden = false;
        status.textContent = "";
        bar.hidden = true;
        button.disabled = false;
      };
      var xhr = new XMLHttpRequest();
      failure.hidden = true;
      bar.hidden = false;
      bar.value = 0;
      button.disabled = true;
      status.textContent = "Uploading\\u2026";
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable) {
          bar.value = Math.round(100 * e.loaded / e.total);
          status.textContent = "Uploading\\u2026 " + bar.value + " %";
        }
      });
      xhr.addEventListener("load", function () {
        var body = {};
        try { body = JSON.parse(xhr.responseText); } catch (ignored) { body = {}; }
        if (xhr.status === 202 && body.runId) {
          status.textContent = "Uploaded; the run has started.";
          window.location.assign("/runs/" + encodeURIComponent(body.runId));
          return;
        }
        fail(body.error || ("The upload failed (HTTP " + xhr.status + ")."));
      });
      xhr.addEventListener("error", function () {
        fail("The upload failed: the service did not answer. Check your connection and try again.");
      });
      xhr.open("POST", form.getAttribute("action"));
      xhr.setRequestHeader("X-CSRF-Token", token);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.send(new FormData(form));
    });
  }

  var offline = function (section, since) {
    var note = document.getElementById("offline");
    if (!note) { return; }
    if (since) {
      note.textContent = "The service is not answering (since " + since + "). What this " +
        "page shows is from then; it tries again every few seconds.";
      note.hidden = false;
      section.classList.add("stale");
    } else {
      note.hidden = true;
      section.classList.remove("stale");
    }
  };

  var run = document.querySelector("section[data-run-id]");
  if (run && run.getAttribute("data-state") === "running") {
    var url = "/api/runs/" + encodeURIComponent(run.getAttribute("data-run-id"));
    var down = null;
    var show = function (id, done, total) {
      var bar = document.getElementById(id);
      var text = document.getElementById(id + "-text");
      if (total > 0) { bar.max = total; bar.value = done; } else { bar.removeAttribute("value"); }
      text.textContent = total > 0 ? done + " of " + total : "not started yet";
    };
    var poll = function () {
      fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (response) {
          if (response.status === 404) { window.location.reload(); return null; }
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.json();
        })
        .then(function (body) {
          if (!body) { return; }
          down = null;
          offline(run, null);
          show("documents", body.progress.documentsDone, body.progress.documents);
          show("judged", body.progress.judged, body.progress.citations);
          document.getElementById("state").textContent = body.stateLabel;
          var stage = document.getElementById("stage");
          if (stage) { stage.textContent = body.stage || ""; }
          (body.documents || []).forEach(function (doc) {
            var cell = document.querySelector('[data-digest="' + doc.digest + '"] .doc-state');
            if (cell) { cell.textContent = doc.stateLabel; }
          });
          if (body.state !== "running") { window.location.reload(); return; }
          window.setTimeout(poll, __POLL_MS__);
        })
        .catch(function () {
          if (!down) { down = clock(); }
          offline(run, down);
          window.setTimeout(poll, 2 * __POLL_MS__);
        });
    };
    window.setTimeout(poll, __POLL_MS__);
  }

  var list = document.querySelector("table.runs[data-poll]");
  if (list && list.querySelector('tr[data-state="running"]')) {
    var listDown = null;
    var labels = {running: "Running", succeeded: "Finished", failed: "Failed",
                  cancelled: "Cancelled"};
    var refresh = function () {
      fetch("/api/runs", {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (response) {
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.json();
        })
        .then(function (body) {
          listDown = null;
          offline(list, null);
          var running = 0;
          body.runs.forEach(function (r) {
            var row = list.querySelector('tr[data-run="' + r.runId + '"]');
            if (!row) { return; }
            var state = row.querySelector(".state");
            state.textContent = labels[r.state] || r.state;
            state.className = "state state-" + r.state;
            row.setAttribute("data-state", r.state);
            row.querySelector(".progress").textContent =
              r.citations + " citation(s), " + r.judged + " judged";
            if (r.state !== "running") {
              var cancel = row.querySelector("form");
              if (cancel) { cancel.remove(); }
            } else { running += 1; }
          });
          if (running > 0) { window.setTimeout(refresh, 2 * __POLL_MS__); }
        })
        .catch(function () {
          if (!listDown) { listDown = clock(); }
          offline(list, listDown);
          window.setTimeout(refresh, 4 * __POLL_MS__);
        });
    };
    window.setTimeout(refresh, 2 * __POLL_MS__);
  }
})();
""".replace("__POLL_MS__", str(POLL_MS))


def _when(value: datetime | None) -> str:
    if value is None:
        return "—"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


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


def upload_page(*, user: str, csrf: str, max_bytes: int, error: str | None = None,
                error_links_runs: bool = False) -> str:
    body = f"""<h1>Check the citations of a thesis</h1>
{_alert(error, link=error_links_runs)}
<form id="upload" method="post" action="/api/runs" enctype="multipart/form-data">
<input type="hidden" name="csrf_token" value="{_e(csrf)}">
<label for="thesis">The thesis</label>
<p class="hint" id="thesis-hint">A PDF, a Word .docx, a .zip holding a LaTeX thesis, or a
single .tex file.</p>
<input id="thesis" name="thesis" type="file" required accept="{",".join(pdfmagic.THESIS_SUFFIXES)}"
aria-describedby="thesis-hint">
<label for="sources">The cited sources</label>
<p class="hint" id="sources-hint">PDFs; a source's file name is how the library's file
fields name it.</p>
<input id="sources" name="sources" type="file" multiple accept=".pdf,application/pdf"
aria-describedby="sources-hint">
<label for="library">The library (optional)</label>
<p class="hint" id="library-hint">BibTeX/BibLaTeX (.bib) or CSL-JSON (.json) from Zotero,
JabRef or Mendeley.</p>
<input id="library" name="library" type="file" multiple accept="{",".join(pdfmagic.LIBRARY_SUFFIXES)}"
aria-describedby="library-hint">
<p class="hint">At most {_e(human_bytes(max_bytes))} in all.</p>
<button type="submit">Upload and check</button>
<progress id="upload-progress" max="100" value="0" hidden aria-label="Upload"></progress>
<p id="upload-status" role="status"></p>
<p id="upload-error" class="error" role="alert" hidden></p>
</form>"""
    return layout("Check a thesis", body, user=user, csrf=csrf)


def _cancel_form(run_id: str, title: str, csrf: str, back: str, when: str = "") -> str:
    label = f"Cancel run {title}" + (f" (started {when})" if when else "")
    return (f'<form class="inline" method="post" action="/runs/{_e(run_id)}/cancel">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            f'<input type="hidden" name="next" value="{_e(back)}">'
            f'<button type="submit" aria-label="{_e(label)}">Cancel</button></form>')


def _rows(rows: Sequence[Mapping[str, Any]], csrf: str, *, owner: bool) -> str:
    out = []
    for r in rows:
        run_id = str(r["id"])
        title = run_title(r)
        when = _when(r["created_at"])
        cancel = (_cancel_form(run_id, title, csrf, "/runs", when)
                  if owner and r["state"] == "running" else "")
        who = "" if owner else f'<td>{_e(str(r.get("owner", "")))}</td>'
        out.append(
            f'<tr data-run="{_e(run_id)}" data-state="{_e(r["state"])}">'
            f'<td><a href="/runs/{_e(run_id)}">{_e(title)}</a></td>{who}'
            f'<td class="state state-{_e(r["state"])}">'
            f'{_e(STATE_LABELS.get(r["state"], r["state"]))}</td>'
            f'<td class="progress">{r["citations"]} citation(s), {r["judged"]} judged</td>'
            f'<td>{_e(when)}</td>'
            + (f"<td>{cancel}</td>" if owner else "") + "</tr>")
    return "".join(out)


def runs_page(rows: Sequence[Mapping[str, Any]], *, user: str, csrf: str,
              shared: Sequence[Mapping[str, Any]] = ()) -> str:
    mine = (f'<table class="runs" data-poll><thead><tr><th scope="col">Thesis</th>'
            f'<th scope="col">State</th><th scope="col">Progress</th>'
            f'<th scope="col">Started</th><th scope="col"><span class="hint">Action</span></th>'
            f"</tr></thead><tbody>{_rows(rows, csrf, owner=True)}</tbody></table>"
            if rows else '<p>No runs yet. <a href="/">Check a thesis.</a></p>')
    theirs = (f'<table class="runs"><thead><tr><th scope="col">Thesis</th>'
              f'<th scope="col">Shared by</th><th scope="col">State</th>'
              f'<th scope="col">Progress</th><th scope="col">Started</th></tr></thead>'
              f"<tbody>{_rows(shared, csrf, owner=False)}</tbody></table>"
              if shared else "<p>Nobody has shared a run with you.</p>")
    body = (f'<h1>My runs</h1>\n<p id="offline" class="offline" role="status" hidden></p>\n'
            f'{mine}\n<h2 id="shared">Shared with me</h2>\n'
            f'<p class="hint">Runs other users let you read (read-only).</p>\n{theirs}')
    return layout("My runs", body, user=user, csrf=csrf,
                  reload=any(r["state"] == "running" for r in rows))


def sharing_html(run_id: str, readers: Sequence[str], csrf: str) -> str:
    """The owner's form that lets a named user read the run, and the list of those who
    may, each with a button that takes it back. Works without the script."""
    items = "".join(
        f'<li>{_e(reader)} <form class="inline" method="post" '
        f'action="/runs/{_e(run_id)}/shares/remove">'
        f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
        f'<input type="hidden" name="reader" value="{_e(reader)}">'
        f'<button type="submit" aria-label="Stop sharing with {_e(reader)}">Stop sharing'
        "</button></form></li>" for reader in readers)
    listed = (f"<p>Who may read this run:</p><ul>{items}</ul>" if readers
              else '<p class="hint">Nobody else can see this run.</p>')
    return (f'<section class="share" aria-labelledby="share-heading">'
            f'<h2 id="share-heading">Share with a supervisor</h2>'
            f'<form method="post" action="/runs/{_e(run_id)}/shares">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            f'<label for="reader">Their user name (as they sign in)</label>'
            f'<input id="reader" name="reader" type="text" required maxlength="256" '
            f'autocomplete="off"> <button type="submit">Share read-only</button></form>'
            f"{listed}</section>")


def run_page(run: Mapping[str, Any], status: Mapping[str, Any], *, user: str,
             csrf: str, owner: bool = True, readers: Sequence[str] = ()) -> str:
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

    error = _alert(run["error"]) if run["error"] else ""
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
    ended = ("" if running else
             f"<p>This run has stopped{': it ' + _e(STATE_LABELS.get(state, state)).lower() if state in ('failed', 'cancelled') else ''}"
             f" at {_e(_when(run.get('finished_at')))}. It will not continue; "
             '<a href="/">check the thesis again</a> to start a new run.</p>')
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
<p class="hint">Started {_e(_when(run["created_at"]))}.{" The report opens here when the run has finished." if running else ""}</p>
</section>
{sharing_html(str(run["id"]), readers, csrf) if owner else ""}"""
    return layout(title, body, user=user, csrf=csrf, reload=running)


def message_page(title: str, text: str, *, user: str, csrf: str) -> str:
    return layout(title, f'<h1>{_e(title)}</h1><p class="error" role="alert">{_e(text)}</p>'
                  '<p><a href="/runs">My runs</a> · <a href="/">Check a thesis</a></p>',
                  user=user, csrf=csrf)


# -- the bar above a report: back, downloads, sharing -----------------------------------

REPORT_BAR_CSS = """
.citerun-bar{font:15px/1.5 system-ui,sans-serif;color:#1f2328;background:#f6f8fa;
border-bottom:1px solid #d1d9e0;padding:.5rem 1rem}
.citerun-bar .row{max-width:60rem;margin:0 auto;display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;
align-items:center}
.citerun-bar a{color:#0550ae}
.citerun-bar details{max-width:60rem;margin:.3rem auto 0}
.citerun-bar summary{cursor:pointer;color:#0550ae}
.citerun-bar label{display:block;font-weight:600;margin:.4rem 0 .2rem}
.citerun-bar input{font:inherit;padding:.2rem .4rem;max-width:100%}
.citerun-bar button{font:inherit;padding:.15rem .6rem}
.citerun-bar ul{margin:.3rem 0;padding-left:1.2rem}
.citerun-bar .hint{color:#59636e;margin:.2rem 0}
.citerun-bar form{margin:0;display:inline}
@media (prefers-color-scheme:dark){.citerun-bar{color:#e6edf3;background:#161b22;
border-bottom-color:#30363d}.citerun-bar a,.citerun-bar summary{color:#79c0ff}
.citerun-bar .hint{color:#9198a1}}
"""


def report_bar(run_id: str, *, csrf: str, owner: bool, owner_name: str,
               readers: Sequence[str]) -> str:
    """Navigation back, the three downloads, and (for the owner) sharing."""
    api = f"/api/runs/{_e(run_id)}"
    downloads = (f'<a href="{api}/report.html?download=1" download>Download the report '
                 f'(HTML)</a><a href="{api}/report.json?download=1" download>the data (JSON)'
                 f'</a><a href="{api}/citations.csv" download>the citations to fix (CSV)</a>')
    if owner:
        items = "".join(
            f'<li>{_e(r)} <form method="post" action="/runs/{_e(run_id)}/shares/remove">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            f'<input type="hidden" name="reader" value="{_e(r)}">'
            f'<button type="submit" aria-label="Stop sharing with {_e(r)}">Stop sharing'
            "</button></form></li>" for r in readers)
        listed = (f"<p class=\"hint\">Who may read it:</p><ul>{items}</ul>" if readers
                  else '<p class="hint">Nobody else can see this report.</p>')
        share = (f'<details{" open" if readers else ""}>'
                 f'<summary>Share with a supervisor</summary>'
                 f'<form method="post" action="/runs/{_e(run_id)}/shares">'
                 f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
                 f'<label for="reader">Their user name (as they sign in)</label>'
                 f'<input id="reader" name="reader" type="text" required maxlength="256" '
                 f'autocomplete="off"> <button type="submit">Share read-only</button>'
                 f"</form>{listed}</details>")
        who = ""
    else:
        share = ""
        who = f'<span>Shared with you by {_e(owner_name)} (read-only)</span>'
    return (f'<nav class="citerun-bar" aria-label="Run"><div class="row">'
            f'<a href="/runs">&larr; My runs</a>{who}{downloads}</div>{share}</nav>')


# -- the stored report under a policy without 'unsafe-inline' -----------------------------

_STYLE_ATTRIBUTE = re.compile(r'\sstyle="([^"]*)"')
_HEAD_STYLE = re.compile(r"<style>(.*?)</style>", re.DOTALL)
_LAST_SCRIPT = re.compile(r"<script>(.*?)</script>\s*</body>\s*</html>\s*$", re.DOTALL)
_CSS_UNSAFE = re.compile(r"[{}<>\\@]|/\*")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def _rule(index: int, declarations: str) -> str:
    parts = [d.strip() for d in declarations.split(";") if d.strip()]
    return (f'[data-citerun-style="{index}"]{{'
            + ";".join(f"{p} !important" for p in parts) + "}")


_BODY_OPEN = re.compile(r"<body[^>]*>")


def report_page(document: str, bar: str = "") -> tuple[str, str]:
    """The stored report's HTML and the Content-Security-Policy it is served with;
    ``bar`` (:func:`report_bar`, already escaped) goes first in its body, its styles into
    the report's stylesheet, and its forms are allowed to post to this service.

    The renderer escapes every value of the thesis and its sources (a ``"`` is
    ``&quot;``), so a literal ``style="`` is one of its own attributes: each distinct one
    becomes a rule of the report's stylesheet (``!important``, as an inline style beats
    the stylesheet), the element keeps a ``data-citerun-style`` pointing to it. The head's
    stylesheet and the closing script are then allowed by their sha256, nothing else.
    """
    head_end = document.find("</head>")
    if head_end < 0:
        return document, PAGE_CSP.replace("script-src 'self'", "script-src 'none'")
    head, body = document[:head_end], document[head_end:]
    indexes: dict[str, int] = {}

    def move(match: re.Match[str]) -> str:
        declarations = html.unescape(match.group(1))
        if _CSS_UNSAFE.search(declarations):
            return ""  # never from the renderer; dropped rather than let into CSS
        index = indexes.setdefault(declarations, len(indexes))
        return f' data-citerun-style="{index}"'

    body = _STYLE_ATTRIBUTE.sub(move, body)
    rules = "".join(_rule(i, d) for d, i in indexes.items())
    if bar:
        opening = _BODY_OPEN.search(body)
        at = opening.end() if opening is not None else len("</head>")
        body = body[:at] + bar + body[at:]
        rules += REPORT_BAR_CSS
    style = _HEAD_STYLE.search(head)
    if style is None:
        head += f"<style>{rules}</style>"
        css = rules
    else:
        css = style.group(1) + rules
        head = head[:style.start()] + f"<style>{css}</style>" + head[style.end():]
    script = _LAST_SCRIPT.search(body)
    script_src = _hash(script.group(1)) if script is not None else "'none'"
    form_action = "'self'" if bar else "'none'"
    csp = (f"default-src 'none'; style-src {_hash(css)}; script-src {script_src}; "
           f"img-src data:; base-uri 'none'; form-action {form_action}; "
           "frame-ancestors 'none'")
    return head + body, csp
