// Live updates for the dashboard: on a "status" event from /events, fetch
// this page again and swap in its <main>. Without scripting the page is
// the same, only not live.
"use strict";
(function () {
  if (!window.EventSource || !document.getElementById("live")) return;
  var marker = document.getElementById("live");
  // What the page was rendered from, so nothing that came since is missed.
  var seen = marker.getAttribute("data-seen");
  // A page with a stream of its own (the Logs page's) names it; a page
  // showing one conversation is told of its new turns too.
  var own = marker.getAttribute("data-stream");
  var conversation = marker.getAttribute("data-conversation");
  var query = [];
  if (seen) query.push("seen=" + encodeURIComponent(seen));
  if (conversation) query.push("conversation=" + encodeURIComponent(conversation));
  var source = new EventSource(own || "/events" + (query.length ? "?" + query.join("&") : ""));
  marker.classList.add("on");
  // Closed as the page goes, so that a page kept for the back button holds
  // no connection: a browser opens only a few to one site at once.
  window.addEventListener("pagehide", function () { source.close(); });
  source.addEventListener("status", function () {
    // With its query: the filters, and what a button just did.
    fetch(location.pathname + location.search, { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (fresh && main) main.replaceWith(fresh);
        var again = document.getElementById("live");
        if (again) again.classList.add("on");
      });
  });
})();
