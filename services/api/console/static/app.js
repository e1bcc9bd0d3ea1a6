// Facho console: a little progressive enhancement, no build step.
// - "select all" checkboxes of a list;
// - confirmation of destructive batch actions;
// - live updates: pages with data-live-topic follow /events (server-sent
//   events) and, on a change, re-fetch themselves and swap their
//   [data-live] parts.
(function () {
  "use strict";
  document.addEventListener("change", function (e) {
    if (e.target.classList && e.target.classList.contains("select-all")) {
      var form = e.target.closest("form");
      form.querySelectorAll('input[name="id"]').forEach(function (cb) { cb.checked = e.target.checked; });
    }
  });
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("button.act-delete, button.danger");
    if (b && !window.confirm("Really " + b.textContent.trim().toLowerCase() + " the selection?")) { e.preventDefault(); }
  });
  var topic = document.body.getAttribute("data-live-topic");
  if (!topic || !window.EventSource) { return; }
  // A change that arrives while a refresh is in flight is not lost: one
  // more refresh follows.
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    again = false;
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Live": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          if (fresh && fresh.innerHTML !== el.innerHTML) {
            el.innerHTML = fresh.innerHTML;
            el.classList.remove("live-flash"); void el.offsetWidth; el.classList.add("live-flash");
          }
        });
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { refresh(); } });
  }
  var es = new EventSource("/events?topic=" + encodeURIComponent(topic));
  es.addEventListener("change", refresh);
  // What moved between the page's render and the stream's first look
  // (its baseline) would never be a change: refresh once when the stream
  // opens (and re-opens).
  es.addEventListener("open", refresh);
})();
