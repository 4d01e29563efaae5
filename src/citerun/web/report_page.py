"""The stored report as a page of the service: the bar above it (back, the downloads,
sharing) and the report itself under a Content-Security-Policy without
``'unsafe-inline'``.

The stored report (``citerun.pipeline.report``) keeps its own inline ``<style>``,
``<script>`` and style attributes; :func:`report_page` moves the attributes into its
stylesheet and allows exactly its two blocks by their hashes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Collection, Sequence

from citerun.web import pages

_e = html.escape


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
.citerun-bar .warning{color:#9a3412;font-weight:600}
.citerun-bar form{margin:0;display:inline}
@media (max-width:34rem){.citerun-bar{font-size:14px;line-height:1.35;padding:.35rem .75rem}
.citerun-bar .row{gap:.15rem .9rem}}
@media (prefers-color-scheme:dark){.citerun-bar{color:#e6edf3;background:#161b22;
border-bottom-color:#30363d}.citerun-bar a,.citerun-bar summary{color:#79c0ff}
.citerun-bar .hint{color:#9198a1}
.citerun-bar .warning{color:#fdba74}}
"""


def report_bar(run_id: str, *, csrf: str, owner: bool, owner_name: str,
               readers: Sequence[str], link: str = "",
               unknown: Collection[str] = (), sharing: bool = False) -> str:
    """Navigation back, the three downloads, and (for the owner) sharing and Delete.

    The sharing is one line that opens (its form, who may read, the link to send), open
    only right after a share or its taking back (``sharing``): on a phone the report's
    first citation stays on the first screen (issue 47)."""
    api = f"/api/runs/{_e(run_id)}"
    downloads = (f'<a href="{api}/report.html?download=1" download>Download the report '
                 f'(HTML)</a><a href="{api}/report.json?download=1" download>the data (JSON)'
                 f'</a><a href="{api}/citations.csv" download>the citations to fix (CSV)</a>')
    if owner:
        listed = (f'<p class="hint">Who may read it:</p>'
                  f"<ul>{pages.reader_items(run_id, readers, csrf, unknown=unknown)}</ul>"
                  + (pages.send_link(link) if link else "") if readers
                  else '<p class="hint">Nobody else can see this report.</p>')
        said = (f" (read by {len(readers)})" if readers else "")
        share = (f'<details{" open" if sharing else ""}>'
                 f"<summary>Share with a supervisor{said}</summary>"
                 f"{pages.share_form(run_id, csrf)}{listed}</details>")
        # The report's page runs no script of the service's: Delete asks on a page.
        who = ""
        downloads += (f'<form method="post" action="/runs/{_e(run_id)}/delete">'
                      f'<input type="hidden" name="csrf_token" value="{_e(csrf)}">'
                      '<button type="submit">Delete this run</button></form>')
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
        return document, pages.PAGE_CSP.replace("script-src 'self'", "script-src 'none'")
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
