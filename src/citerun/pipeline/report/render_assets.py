"""The report page's inline stylesheet (light and dark schemes, print, a 375 px
screen) and its one script (the verdict and problem filters), as the strings
:func:`.render.render_html` inlines: the page loads nothing from outside."""

from __future__ import annotations

_CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0;
  --bg: #f6f8fa; --page: #fff; --focus: #0969da; --flag-bg: #ffd33d; --flag-fg: #1f2328; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --bg: #151b23; --page: #0d1117;
    --focus: #4493f8; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--page); }
main { max-width: 60rem; margin: 0 auto; padding: 1.5rem 1rem 4rem; overflow-wrap: break-word; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0 0 .25rem; }
h1 .kicker { display: block; font-size: .9rem; font-weight: 600; color: var(--muted); }
h2 { font-size: 1.2rem; margin: 2rem 0 .75rem; }
h3 { font-size: 1rem; margin: 0; }
.meta { color: var(--muted); margin: 0; }
.summary { display: flex; flex-wrap: wrap; gap: .4rem; margin: .5rem 0; padding: 0;
  list-style: none; }
.summary li { display: flex; align-items: center; gap: .45rem; border: 1px solid var(--line);
  border-radius: .5rem; padding: .2rem .6rem; background: var(--bg); }
.summary .n { font-size: 1.3rem; font-weight: 700; }
.zeros { color: var(--muted); font-size: .9rem; margin: .25rem 0; }
.head-summary h2 { margin-top: 1rem; }
.legend { margin: .5rem 0; }
.run-id { margin-top: 2rem; font-size: .85rem; }
.legend dl { margin: 0; display: grid; grid-template-columns: minmax(7rem, max-content) 1fr;
  gap: .4rem 1rem; align-items: baseline; }
.legend dt { margin: 0; } .legend dd { margin: 0; }
@media (max-width: 34rem) { .legend dl { grid-template-columns: 1fr; }
  .legend dd { margin: 0 0 .5rem; } }
.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .5rem 0 1rem; }
.filters button { font: inherit; font-size: .9rem; cursor: pointer; border-radius: 999px;
  padding: .25rem .8rem; border: 2px solid var(--c, var(--muted)); background: var(--page);
  color: var(--fg); }
.filters button[aria-pressed="true"] { background: var(--c, var(--muted)); color: #fff; }
.filters button.problem[aria-pressed="true"] { color: var(--flag-fg); }
#show-all { --c: #57606a; }
button:focus-visible, summary:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
#shown { color: var(--muted); font-size: .9rem; }
.citation { border: 1px solid var(--line); border-left: 6px solid var(--c); border-radius: .5rem;
  padding: .75rem 1rem; margin: 0 0 1rem; }
.citation:not([data-problems=""]) { border-left-style: double; border-left-width: 8px; }
.citation header { display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center;
  color: var(--muted); font-size: .9rem; }
.citation header h3 { color: var(--fg); font-size: .9rem; }
.badge { display: inline-block; background: var(--c); color: #fff; font-weight: 600;
  border-radius: .3rem; padding: .05rem .5rem; }
.flag { background: var(--flag-bg); color: var(--flag-fg); border-radius: .25rem;
  padding: 0 .35rem; font-weight: 600; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden;
  clip-path: inset(50%); white-space: nowrap; }
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
code { font-size: .85em; overflow-wrap: anywhere; }
[hidden] { display: none !important; }
.evidence-page { margin: .5rem 0 0; overflow-x: auto; }
.crop, .sheet { position: relative; width: 100%; background-color: #fff; background-repeat: no-repeat;
  border: 1px solid var(--line); }
.sheet { background-size: 100% 100%; max-width: 28rem; margin-top: .5rem; }
.hl { position: absolute; background: rgba(255, 200, 0, .45); outline: 2px solid #bf8700;
  mix-blend-mode: multiply; }
.evidence-page figcaption { color: var(--muted); font-size: .85rem; }
@media (prefers-color-scheme: dark) { .crop, .sheet { filter: brightness(.72); } }
details > summary { cursor: pointer; color: var(--muted); font-size: .9rem; }
details.numbers table { font-size: .85rem; margin: .25rem 0; }
.reference, .match { margin: .25rem 0; font-size: .95rem; }
/* A phone: the first citation on the first screen (issue 47), the filters one row that
   scrolls sideways. */
@media (max-width: 34rem) {
  main { padding-top: .75rem; } h1 { font-size: 1.25rem; }
  .zeros { font-size: .85rem; }
  h2 { font-size: 1.1rem; margin: 1rem 0 .4rem; } .head-summary h2 { margin-top: .6rem; }
  .summary { gap: .3rem; }
  .summary li { gap: .3rem; padding: .1rem .45rem; }
  .summary .n { font-size: 1.1rem; } .summary .badge { font-size: .85rem; }
  .filters { flex-wrap: nowrap; overflow-x: auto; padding-bottom: .25rem; }
  .filters button { flex: none; } #shown { flex: none; }
}
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
      var tags = [item.getAttribute("data-verdict")].concat(
        (item.getAttribute("data-problems") || "").split(" ").filter(Boolean)
          .map(function (p) { return "problem:" + p; }));
      var visible = on.length === 0 || tags.some(function (t) { return on.indexOf(t) !== -1; });
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
  // Moments in the reader's own zone and language, to the second, as the service's pages
  // say them (its app.js: one style of time on every page).
  Array.prototype.forEach.call(document.querySelectorAll("time[datetime]"), function (t) {
    var moment = new Date(t.getAttribute("datetime"));
    if (isNaN(moment.getTime())) { return; }
    t.title = t.textContent;
    t.textContent = moment.toLocaleString(undefined, {year: "numeric", month: "short",
      day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit"});
  });
})();
"""
