/**
 * The page's only style sheet and script, served by checkout itself (`/assets/*`): the
 * Content-Security-Policy allows nothing else, no inline code and no third party. The
 * pages work without the script (plain forms, a meta refresh while waiting); the script
 * adds copy buttons, the countdown, live following and the upload's progress.
 */

export const PAGE_CSS = `
*,*::before,*::after{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:17px;line-height:1.45;color:#1b1b1f;background:#f2f3f5}
body{margin:0}
a{color:#0b57d0}
.wrap{max-width:34rem;margin:0 auto;padding:1rem}
header.top{display:flex;justify-content:space-between;align-items:center;gap:1rem;margin-bottom:.75rem}
header.top .brand{font-weight:700;font-size:1.05rem}
.card{background:#fff;border-radius:12px;padding:1.25rem;margin-bottom:1rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.4rem;margin:0 0 .5rem}
h2{font-size:1.1rem;margin:0 0 .75rem}
.amount{font-size:2.1rem;font-weight:700;margin:.25rem 0;letter-spacing:.01em}
.muted{color:#4a4d55}
.shop{margin:0 0 .5rem;color:#3d4048}
.back{margin:1rem 0;text-align:center}
.back a{display:inline-block;padding:.6rem 1rem;min-height:44px;font-weight:600}
dl.req{margin:0}
dl.req div{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:.5rem;padding:.6rem 0;border-top:1px solid #e3e4e8}
dl.req div:first-child{border-top:0}
dl.req dt{flex:1 0 100%;color:#4a4d55;font-size:.9rem}
dl.req dd{margin:0;font-size:1.15rem;font-weight:600;overflow-wrap:anywhere;flex:1 1 12rem;min-width:0}
button,.button{font:inherit;border-radius:8px;border:2px solid #0b57d0;background:#0b57d0;color:#fff;padding:.55rem 1rem;cursor:pointer;min-height:44px}
button.secondary{background:#fff;color:#0b57d0}
button:disabled{opacity:.6;cursor:default}
:focus-visible{outline:3px solid #b3261e;outline-offset:2px}
.timer{font-size:1.3rem;font-weight:700;font-variant-numeric:tabular-nums}
ol.steps{padding-left:1.3rem;margin:0}
ol.steps li{margin:.3rem 0}
label{display:block;font-weight:600;margin-bottom:.35rem}
input[type=file],input[type=text]{font:inherit;width:100%;padding:.55rem;border:2px solid #6b6f78;border-radius:8px;background:#fff;min-height:44px}
.hint{font-size:.9rem;color:#4a4d55;margin:.35rem 0 .75rem}
progress{width:100%;height:1rem;margin:.5rem 0}
.alert{border-left:5px solid #b3261e;background:#fdecea;color:#5f1412;padding:.75rem;border-radius:6px;margin:.75rem 0}
.notice{border-left:5px solid #0b57d0;background:#e8f0fe;color:#0a2a66;padding:.75rem;border-radius:6px;margin:.75rem 0}
.outcome{text-align:center}
.outcome .icon{font-size:2.5rem;line-height:1}
.outcome.paid .icon{color:#146c2e}
.outcome.declined .icon,.outcome.expired .icon{color:#b3261e}
.outcome.under_review .icon{color:#8a5a00}
fieldset{border:0;margin:0;padding:0}
legend{font-weight:600;margin-bottom:.5rem}
.range{display:flex;align-items:center;gap:.6rem;padding:.55rem;border:2px solid #c9cbd1;border-radius:8px;margin:.4rem 0}
.range input{width:1.3rem;height:1.3rem}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
[hidden]{display:none!important}
@media (min-width:900px){.wrap{max-width:46rem;padding:2rem}.grid{display:grid;grid-template-columns:1fr 1fr;gap:1rem;margin-bottom:1rem}.grid .card{margin:0}}
`;

export const PAGE_JS = `"use strict";
(function () {
  var main = document.querySelector("main[data-page]");
  if (!main) return;
  var live = document.getElementById("live");
  function say(text) { if (live) live.textContent = text; }

  document.querySelectorAll("button[data-copy]").forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function () {
      var value = b.getAttribute("data-copy") || "";
      var done = function () { b.textContent = main.dataset.msgCopied; say(main.dataset.msgCopied); setTimeout(function () { b.textContent = main.dataset.msgCopy; }, 2000); };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(value).then(done, function () {});
    });
  });

  var timer = document.querySelector("[data-expires]");
  if (timer) {
    var end = Date.parse(timer.getAttribute("data-expires"));
    var out = timer.querySelector(".timer");
    var tick = function () {
      var left = Math.max(0, Math.floor((end - Date.now()) / 1000));
      var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      out.textContent = (h > 0 ? h + ":" + String(m).padStart(2, "0") : String(m)) + ":" + String(s).padStart(2, "0");
      if (left === 0) { var up = document.getElementById("time-up"); if (up) up.hidden = false; return; }
      setTimeout(tick, 1000);
    };
    tick();
  }

  var stateUrl = main.dataset.stateUrl;
  if (stateUrl) {
    var outcome = main.dataset.outcome;
    var busy = false;
    var poll = function () {
      if (busy) return setTimeout(poll, 3000);
      fetch(stateUrl, { headers: { accept: "application/json" }, cache: "no-store", credentials: "omit" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (s) { if (s && s.outcome !== outcome) location.reload(); else setTimeout(poll, 3000); },
              function () { setTimeout(poll, 5000); });
    };
    setTimeout(poll, 3000);
    document.addEventListener("gw-busy", function (e) { busy = e.detail; });
  }

  var form = document.querySelector("form[data-upload]");
  if (form) {
    var input = form.querySelector("input[type=file]");
    var error = document.getElementById("upload-error");
    var progress = form.querySelector("progress");
    var status = document.getElementById("upload-status");
    var button = form.querySelector("button[type=submit]");
    var max = Number(form.dataset.maxBytes);
    var fail = function (text) {
      error.textContent = text; error.hidden = false; progress.hidden = true; status.textContent = "";
      button.disabled = false; input.setAttribute("aria-invalid", "true"); input.focus();
      document.dispatchEvent(new CustomEvent("gw-busy", { detail: false }));
    };
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      error.hidden = true; input.removeAttribute("aria-invalid");
      var file = input.files && input.files[0];
      if (!file) return fail(form.dataset.msgNoFile);
      if (file.size === 0) return fail(form.dataset.msgEmpty);
      if (file.size > max) return fail(form.dataset.msgTooLarge);
      file.slice(0, 5).arrayBuffer().then(function (buf) {
        var head = String.fromCharCode.apply(null, new Uint8Array(buf));
        if (head !== "%PDF-") return fail(form.dataset.msgNotPdf);
        var data = new FormData(form);
        var xhr = new XMLHttpRequest();
        xhr.open("POST", form.action);
        xhr.setRequestHeader("accept", "application/json");
        xhr.upload.onprogress = function (ev) {
          if (!ev.lengthComputable) return;
          progress.value = Math.round((ev.loaded / ev.total) * 100);
          if (ev.loaded === ev.total) status.textContent = form.dataset.msgChecking;
        };
        xhr.onerror = function () { fail(form.dataset.msgNetwork); };
        xhr.onload = function () {
          var body = null;
          try { body = JSON.parse(xhr.responseText); } catch (x) { body = null; }
          if (xhr.status >= 200 && xhr.status < 300) { status.textContent = form.dataset.msgChecking; location.reload(); return; }
          fail((body && body.message) || form.dataset.msgUnavailable);
        };
        button.disabled = true; progress.hidden = false; progress.value = 0; status.textContent = form.dataset.msgUploading;
        document.dispatchEvent(new CustomEvent("gw-busy", { detail: true }));
        xhr.send(data);
      }, function () { fail(form.dataset.msgNetwork); });
    });
  }
})();
`;
