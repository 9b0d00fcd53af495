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

  // Waits in Permit: "52 s left" counts down and "waiting for 8 s" up between refreshes (data-seconds as rendered,
  // data-step up|down), printed as app/web/formatting.py's duration_text prints them.
  function durationText(seconds) {
    var total = Math.max(0, Math.floor(seconds));
    if (total === 0 && seconds > 0) return "<1 s";
    if (total < 120) return total + " s";
    if (total < 3600) {
      var secs = total % 60;
      return Math.floor(total / 60) + " min" + (secs ? " " + secs + " s" : "");
    }
    var minutes = Math.floor((total % 3600) / 60);
    return Math.floor(total / 3600) + " h" + (minutes ? " " + minutes + " min" : "");
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll(".ticking[data-seconds]").forEach(function (el) {
      if (el.kssSince === undefined) el.kssSince = now; // a swapped-in element starts from what it says
      var elapsed = (now - el.kssSince) / 1000;
      var value = parseFloat(el.dataset.seconds) + (el.dataset.step === "up" ? elapsed : -elapsed);
      el.textContent = durationText(value);
    });
  }
  window.setInterval(tick, 1000);

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
