// Live pages: the server sends, over server-sent events, the page's live
// part rendered anew whenever it changed; it replaces #live. EventSource
// reconnects by itself when the server restarts.
(function () {
  var url = document.body.getAttribute("data-live");
  var live = document.getElementById("live");
  var conn = document.getElementById("conn");
  if (!url || !live || !window.EventSource) return;
  var es = new EventSource(url);
  es.onopen = function () { if (conn) { conn.textContent = "live"; conn.className = "conn up"; } };
  es.onmessage = function (e) { live.innerHTML = e.data; };
  es.addEventListener("end", function () {
    es.close();
    if (conn) { conn.textContent = "finished"; conn.className = "conn"; }
  });
  es.onerror = function () { if (conn) { conn.textContent = "reconnecting"; conn.className = "conn"; } };
})();
