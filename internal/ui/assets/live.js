// Live updates: the server sends an event when anything changes; the page
// swaps in a fresh copy of its <main>. Relative times ("3 min ago") are kept
// fresh, and the graph can be zoomed. Works without it: pages are plain HTML.
(function () {
  var zoom = null; // null: fit the width; else a scale of the drawing's own size

  function applyZoom() {
    var box = document.getElementById("graph");
    if (!box) return;
    var svg = box.querySelector("svg");
    if (!svg) return;
    if (zoom === null) {
      box.classList.add("fit");
      svg.style.width = "";
      svg.style.height = "";
      return;
    }
    box.classList.remove("fit");
    var w = parseFloat(svg.getAttribute("width")), h = parseFloat(svg.getAttribute("height"));
    svg.style.width = Math.round(w * zoom) + "px";
    svg.style.height = Math.round(h * zoom) + "px";
  }

  function currentScale() {
    var box = document.getElementById("graph");
    var svg = box && box.querySelector("svg");
    if (!svg) return 1;
    return svg.getBoundingClientRect().width / parseFloat(svg.getAttribute("width"));
  }

  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-zoom]");
    if (!b) return;
    var z = b.getAttribute("data-zoom");
    if (z === "fit") zoom = null;
    else if (z === "in") zoom = Math.min(4, (zoom === null ? currentScale() : zoom) * 1.25);
    else if (z === "out") zoom = Math.max(0.1, (zoom === null ? currentScale() : zoom) / 1.25);
    else zoom = parseFloat(z);
    applyZoom();
  });

  function rel(t) {
    var d = (Date.now() - t) / 1000, future = d < 0, s;
    if (future) d = -d;
    if (d < 5) return "just now";
    if (d < 60) s = Math.floor(d) + " s";
    else if (d < 3600) s = Math.floor(d / 60) + " min";
    else if (d < 172800) s = Math.floor(d / 3600) + " h";
    else return null; // a date: the server's text stands
    return future ? "in " + s : s + " ago";
  }
  function freshTimes() {
    document.querySelectorAll("time[datetime]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("datetime"));
      var r = isNaN(t) ? null : rel(t);
      if (r !== null && el.textContent !== r) el.textContent = r;
    });
  }
  setInterval(freshTimes, 15000);

  // typed returns the text typed into main's forms and not yet sent (a
  // reason for an approval), by form action and field name, and which
  // field had the focus; restore puts it back into the fresh copy. A live
  // update that was already on its way when typing began swapped the
  // fields out, and the reason was lost: the approval went without it.
  function typed() {
    var kept = [];
    document.querySelectorAll("main form").forEach(function (f) {
      f.querySelectorAll("input, textarea").forEach(function (el) {
        if (el.type === "hidden" || el.type === "checkbox" || el.type === "radio") return;
        if (el.value !== el.defaultValue || el === document.activeElement) {
          kept.push({ action: f.getAttribute("action"), name: el.name, value: el.value, focus: el === document.activeElement });
        }
      });
    });
    return kept;
  }
  function restore(kept) {
    kept.forEach(function (k) {
      document.querySelectorAll("main form").forEach(function (f) {
        if (f.getAttribute("action") !== k.action) return;
        var el = f.elements.namedItem(k.name);
        if (!el || el.value === undefined) return;
        el.value = k.value;
        if (k.focus) el.focus();
      });
    });
  }

  var busy = false;
  // refresh swaps in a fresh copy of <main>, keeping what was typed.
  function refresh() {
    if (busy) return Promise.resolve();
    busy = true;
    return fetch(location.href, { headers: { "X-Reach-Fragment": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html !== null) {
          var box = document.getElementById("graph");
          var sx = box ? box.scrollLeft : 0, sy = box ? box.scrollTop : 0;
          var kept = typed();
          document.querySelector("main").innerHTML = html;
          restore(kept);
          applyZoom();
          box = document.getElementById("graph");
          if (box) { box.scrollLeft = sx; box.scrollTop = sy; }
        }
      })
      .finally(function () { busy = false; });
  }
  window.reachRefresh = refresh; // for the browser tests

  if (!window.EventSource) return;
  var es = new EventSource("/ui/live");
  es.onmessage = function () {
    if (document.activeElement && document.activeElement.tagName === "INPUT") return;
    refresh();
  };
})();
