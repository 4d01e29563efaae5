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
from datetime import datetime
from typing import Any

_e = html.escape

#: The policy of every page but the report.
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")

#: How often a running run's page asks for its status, in milliseconds.
POLL_MS = 1500

STATE_LABELS = {"running": "Running", "succeeded": "Finished", "failed": "Failed",
                "cancelled": "Cancelled"}

APP_CSS = """
:root{color-scheme:light dark;font-family:system-ui,sans-serif;line-height:1.45}
body{max-width:60rem;margin:0 auto;padding:1rem 1.5rem}
header.top{display:flex;gap:1.5rem;align-items:baseline;border-bottom:1px solid #8884;margin-bottom:1rem}
header.top nav a{margin-right:1rem}
.user{margin-left:auto;color:#666}
label{display:block;margin:.8rem 0 .2rem;font-weight:600}
.hint{color:#666;font-size:.9rem;margin:.1rem 0}
button{margin-top:1rem;padding:.4rem 1rem}
progress{width:100%;height:1rem}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #8883}
.state{font-weight:600}
.state-failed,.error{color:#b00020}
.state-succeeded{color:#1b6e20}
form.inline{display:inline;margin:0}
form.inline button{margin:0;padding:.1rem .6rem}
"""

APP_JS = """
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  var token = meta ? meta.getAttribute("content") : "";

  var form = document.getElementById("upload");
  if (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var bar = document.getElementById("upload-progress");
      var status = document.getElementById("upload-status");
      var button = form.querySelector("button");
      var xhr = new XMLHttpRequest();
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
        status.textContent = body.error || ("The upload failed (HTTP " + xhr.status + ").");
        bar.hidden = true;
        button.disabled = false;
      });
      xhr.addEventListener("error", function () {
        status.textContent = "The upload failed: the service did not answer.";
        bar.hidden = true;
        button.disabled = false;
      });
      xhr.open("POST", form.getAttribute("action"));
      xhr.setRequestHeader("X-CSRF-Token", token);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.send(new FormData(form));
    });
  }

  var run = document.querySelector("[data-run-id]");
  if (run && run.getAttribute("data-state") === "running") {
    var url = "/api/runs/" + encodeURIComponent(run.getAttribute("data-run-id"));
    var show = function (id, done, total) {
      var bar = document.getElementById(id);
      var text = document.getElementById(id + "-text");
      if (total > 0) { bar.max = total; bar.value = done; } else { bar.removeAttribute("value"); }
      text.textContent = total > 0 ? done + " of " + total : "waiting";
    };
    var poll = function () {
      fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (body) {
          if (body) {
            show("documents", body.progress.documentsDone, body.progress.documents);
            show("judged", body.progress.judged, body.progress.citations);
            document.getElementById("state").textContent = body.stateLabel;
            if (body.state !== "running") { window.location.reload(); return; }
          }
          window.setTimeout(poll, __POLL_MS__);
        })
        .catch(function () { window.setTimeout(poll, __POLL_MS__); });
    };
    window.setTimeout(poll, __POLL_MS__);
  }
})();
""".replace("__POLL_MS__", str(POLL_MS))


def _when(value: datetime | None) -> str:
    return value.isoformat(timespec="seconds") if value is not None else "—"


def layout(title: str, body: str, *, user: str, csrf: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{_e(csrf)}">
<title>{_e(title)} · citerun</title>
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script>
</head>
<body>
<header class="top"><strong>citerun</strong>
<nav><a href="/">Check a thesis</a><a href="/runs">My runs</a></nav>
<span class="user">{_e(user)}</span></header>
<main>
{body}
</main>
</body>
</html>
"""


def upload_page(*, user: str, csrf: str, max_bytes: int) -> str:
    body = f"""<h1>Check the citations of a thesis</h1>
<form id="upload" method="post" action="/api/runs" enctype="multipart/form-data">
<input type="hidden" name="csrf_token" value="{_e(csrf)}">
<label for="thesis">The thesis</label>
<p class="hint">A PDF, a Word .docx, a .zip holding a LaTeX thesis, or a single .tex file.</p>
<input id="thesis" name="thesis" type="file" required accept=".pdf,.docx,.zip,.tex">
<label for="sources">The cited sources</label>
<p class="hint">PDFs; a source's file name is how the library's file fields name it.</p>
<input id="sources" name="sources" type="file" multiple accept=".pdf,application/pdf">
<label for="library">The library (optional)</label>
<p class="hint">BibTeX/BibLaTeX (.bib) or CSL-JSON (.json) from Zotero, JabRef or Mendeley.</p>
<input id="library" name="library" type="file" multiple accept=".bib,.json">
<p class="hint">At most {max_bytes // 1_000_000} MB in all.</p>
<button type="submit">Upload and check</button>
<progress id="upload-progress" max="100" value="0" hidden></progress>
<p id="upload-status" aria-live="polite"></p>
</form>"""
    return layout("Check a thesis", body, user=user, csrf=csrf)


def _cancel_form(run_id: str, csrf: str) -> str:
    return (f'<form class="inline" method="post" action="/runs/{_e(run_id)}/cancel">'
            f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
            '<button type="submit">Cancel</button></form>')


def runs_page(rows: Sequence[Mapping[str, Any]], *, user: str, csrf: str) -> str:
    items = "".join(
        f'<tr data-run="{_e(str(r["id"]))}"><td><a href="/runs/{_e(str(r["id"]))}">'
        f'{_e(r["name"])}</a></td>'
        f'<td class="state state-{_e(r["state"])}">{_e(STATE_LABELS.get(r["state"], r["state"]))}</td>'
        f'<td>{r["citations"]} citation(s), {r["judged"]} judged</td>'
        f'<td>{_e(_when(r["created_at"]))}</td>'
        f'<td>{_cancel_form(str(r["id"]), csrf) if r["state"] == "running" else ""}</td></tr>'
        for r in rows)
    table = (f"<table><thead><tr><th>Thesis</th><th>State</th><th>Progress</th>"
             f"<th>Started</th><th></th></tr></thead><tbody>{items}</tbody></table>"
             if rows else '<p>No runs yet. <a href="/">Check a thesis.</a></p>')
    return layout("My runs", f"<h1>My runs</h1>\n{table}", user=user, csrf=csrf)


def run_page(run: Mapping[str, Any], status: Mapping[str, Any], *, user: str,
             csrf: str) -> str:
    """A run that has no report (yet): its state and progress, polled while it runs."""
    progress = status["progress"]
    state = run["state"]

    def bar(name: str, label: str, done: int, total: int) -> str:
        value = f' value="{done}" max="{total}"' if total else ""
        text = f"{done} of {total}" if total else "waiting"
        return (f'<label for="{name}">{label}</label><progress id="{name}"{value}></progress>'
                f'<p id="{name}-text" class="hint">{text}</p>')

    error = (f'<p class="error">{_e(run["error"])}</p>' if run["error"] else "")
    docs = "".join(f"<li><code>{_e(d['filename'])}</code> ({_e(d['role'])}, {_e(d['state'])}"
                   f"{', ' + _e(d['error_reason']) if d['error_reason'] else ''})</li>"
                   for d in status["documents"])
    body = f"""<h1>{_e(run["name"])}</h1>
<section data-run-id="{_e(str(run["id"]))}" data-state="{_e(state)}">
<p>State: <span id="state" class="state state-{_e(state)}">{_e(STATE_LABELS.get(state, state))}</span>
{_cancel_form(str(run["id"]), csrf) if state == "running" else ""}</p>
{error}
{bar("documents", "Documents read", progress["documentsDone"], progress["documents"])}
{bar("judged", "Citations judged", progress["judged"], progress["citations"])}
<h2>Documents</h2><ul>{docs}</ul>
<p class="hint">Started {_e(_when(run["created_at"]))}. The report opens here when the run
has finished.</p>
</section>"""
    return layout(str(run["name"]), body, user=user, csrf=csrf)


def message_page(title: str, text: str, *, user: str, csrf: str) -> str:
    return layout(title, f"<h1>{_e(title)}</h1><p>{_e(text)}</p>", user=user, csrf=csrf)


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


def report_page(document: str) -> tuple[str, str]:
    """The stored report's HTML and the Content-Security-Policy it is served with.

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
    style = _HEAD_STYLE.search(head)
    if style is None:
        head += f"<style>{rules}</style>"
        css = rules
    else:
        css = style.group(1) + rules
        head = head[:style.start()] + f"<style>{css}</style>" + head[style.end():]
    script = _LAST_SCRIPT.search(body)
    script_src = _hash(script.group(1)) if script is not None else "'none'"
    csp = (f"default-src 'none'; style-src {_hash(css)}; script-src {script_src}; "
           "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    return head + body, csp
