// loopwright serve: the one script of the web view. It follows a running session (the server
// sends the new records as HTML it has escaped, and they are appended in place) and the sessions
// list (the server sends the list's rows again, escaped, whenever one changes).
"use strict";
(function () {
  function follow() {
    var live = document.getElementById("live");
    var target = document.getElementById("records");
    if (!live || !target || !window.EventSource) return;
    var source = new EventSource(live.getAttribute("data-src"));
    source.addEventListener("records", function (event) {
      target.insertAdjacentHTML("beforeend", event.data);
      live.textContent = "running: updated " + new Date().toLocaleTimeString();
    });
    source.addEventListener("done", function () {
      source.close();
      live.textContent = "the session has ended; reload for its final summary";
      live.className = "live ended";
    });
  }
  function followList() {
    var list = document.getElementById("list");
    if (!list || !window.EventSource) return;
    var source = new EventSource(list.getAttribute("data-src"));
    source.addEventListener("rows", function (event) {
      list.innerHTML = event.data;
    });
  }
  function start() {
    follow();
    followList();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
