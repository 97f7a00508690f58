// lwtool inspector: follow a running run. The server sends `changed` when the run
// commits and `end` when it stops; the page's main part is fetched again each time.
(function () {
  "use strict";
  var main = document.getElementById("run");
  if (!main || !main.dataset.live || !window.EventSource) return;
  var pending = false, again = false;
  function refresh() {
    if (pending) { again = true; return; }
    pending = true;
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
    refresh();
  });
})();
