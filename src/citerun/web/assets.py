"""The service's one stylesheet and one small script, served from the package
(``/static/app.css``, ``/static/app.js``): no bundle and nothing from the network.

The pages allow no inline script or style (the Content-Security-Policy says ``'self'``),
so the script is a file: it shows the upload's progress and polls a running run's status
every 1.5 s (and "My runs" while one of them runs), saying so when the service does not
answer.
"""

from __future__ import annotations

#: How often a running run's page (and "My runs" while one runs) asks, in milliseconds.
POLL_MS = 1500

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
/* A table's cells size themselves by their longest word: "anywhere" would let the
   automatic layout squeeze "Running" into "Runnin|g" (issue 47); only a thesis's title
   (a long file name) may break anywhere. */
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
.state-failed,.error{color:var(--error)}
.state-cancelled{color:var(--muted)}
.state-succeeded{color:var(--done)}
.error{background:var(--error-bg);border-left:4px solid var(--error);padding:.5rem .75rem;
font-weight:600}
.offline{background:var(--box);border-left:4px solid var(--error);padding:.5rem .75rem}
.notice{background:var(--box);border-left:4px solid var(--done);padding:.5rem .75rem}
.warning{color:var(--error);font-weight:600}
table.runs td,table.runs th{overflow-wrap:normal}
table.runs td.title{overflow-wrap:anywhere;min-width:8rem}
table.runs .state,table.runs .when,table.runs .actions,table.runs button{white-space:nowrap}
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

  // Moments in the reader's own zone and language, to the second (the page says UTC).
  Array.prototype.forEach.call(document.querySelectorAll("time[datetime]"), function (t) {
    var moment = new Date(t.getAttribute("datetime"));
    if (isNaN(moment.getTime())) { return; }
    t.title = t.textContent;
    t.textContent = moment.toLocaleString(undefined, {year: "numeric", month: "short",
      day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit"});
  });

  // A form that asks first (Delete): confirmed, it says so; without the script the
  // service asks on a page of its own.
  Array.prototype.forEach.call(document.querySelectorAll("form[data-confirm]"), function (f) {
    f.addEventListener("submit", function (event) {
      if (f.querySelector('input[name="confirm"]')) { return; }
      if (!window.confirm(f.getAttribute("data-confirm"))) { event.preventDefault(); return; }
      var yes = document.createElement("input");
      yes.type = "hidden";
      yes.name = "confirm";
      yes.value = "yes";
      f.appendChild(yes);
    });
  });

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
            row.querySelector(".progress").textContent = r.progressLabel ||
              (r.citations + " citation(s), " + r.judged + " judged");
            if (r.state !== "running") {
              var cancel = row.querySelector("form.cancel");
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
