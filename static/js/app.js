// kss web UI: the little glue htmx does not do by itself.
(function () {
  "use strict";

  // Does an SSE message (data: {"keys": [...], "nodes": [...], "truncated": bool}) concern `key`?
  // Used in hx-trigger filters: sse:pod[kssTouches(detail, 'default/web')].
  window.kssTouches = function (message, key) {
    try {
      var data = JSON.parse(message.data);
      return data.truncated || data.keys.indexOf(key) >= 0 || (data.nodes || []).indexOf(key) >= 0;
    } catch (e) {
      return true;
    }
  };

  function setLive(on, title) {
    var el = document.getElementById("live");
    if (!el) return;
    el.classList.toggle("on", on);
    el.classList.toggle("off", !on);
    el.title = title;
  }

  // The stream said our resourceVersion is too old (the server restarted or the gap is too long): the lists
  // on this page may have missed changes, so load it afresh.
  document.addEventListener("htmx:sseOpen", function (evt) {
    var source = evt.detail.source;
    setLive(true, "Live updates: connected");
    if (source && !source.kssExpired) {
      source.kssExpired = true;
      source.addEventListener("expired", function () {
        source.close();
        window.location.reload();
      });
    }
  });
  document.addEventListener("htmx:sseError", function () {
    setLive(false, "Live updates: reconnecting");
  });

  // Scheduler presets fill the editor (nothing is applied until "Apply").
  document.addEventListener("click", function (evt) {
    var link = evt.target.closest("[data-preset]");
    if (!link) return;
    evt.preventDefault();
    var tpl = document.getElementById("preset-" + link.dataset.preset);
    var area = document.getElementById("config-text");
    if (tpl && area) area.value = tpl.content.textContent;
  });
})();
