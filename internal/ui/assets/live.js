// Live updates: the server sends an event when anything changes; the page
// swaps in a fresh copy of its <main>. Works without it: pages are plain HTML.
(function () {
  if (!window.EventSource) return;
  var es = new EventSource("/ui/live");
  var busy = false;
  es.onmessage = function () {
    if (busy || document.activeElement && document.activeElement.tagName === "INPUT") return;
    busy = true;
    fetch(location.href, { headers: { "X-Reach-Fragment": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html !== null) document.querySelector("main").innerHTML = html;
      })
      .finally(function () { busy = false; });
  };
})();
