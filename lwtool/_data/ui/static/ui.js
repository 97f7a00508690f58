// lwtool inspector: follow a running run. The server sends `changed` when the run
// commits and `end` when it stops; the page's main part is fetched again, at most once
// a second (a busy run commits far more often than anyone reads), and once at the end.
(function () {
  "use strict";
  var main = document.getElementById("run");
  if (!main || !main.dataset.live || !window.EventSource) return;
  var MIN_GAP_MS = 1000;
  var pending = false, again = false, last = 0, timer = null;
  function refresh() {
    if (pending) { again = true; return; }
    var wait = last + MIN_GAP_MS - Date.now();
    if (wait > 0) {
      if (!timer) timer = setTimeout(function () { timer = null; refresh(); }, wait);
      return;
    }
    pending = true;
    last = Date.now();
    var url = new URL(window.location.href);
    url.searchParams.set("partial", "1");
    fetch(url, { headers: { "Accept": "text/html" } })
      .then(function (reply) { return reply.ok ? reply.text() : null; })
      .then(function (html) { if (html !== null) main.innerHTML = html; })
      .finally(function () { pending = false; if (again) { again = false; refresh(); } });
  }
  var source = new EventSource(main.dataset.live);
  source.addEventListener("changed", refresh);
  source.addEventListener("end", function () {
    source.close();
    main.removeAttribute("data-live");
    last = 0;  // the final state at once
    if (timer) { clearTimeout(timer); timer = null; }
    refresh();
  });
})();
