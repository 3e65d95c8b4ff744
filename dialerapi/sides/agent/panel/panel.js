// The reference agent panel (docs/agents/panel.md "The reference agent panel"). Plain JavaScript, no
// build step: copy it into an agent desktop and keep the wire protocol of decisions.md D9.
//
// The token comes from the URL fragment (#token=..., which the panel then removes from the address
// bar so it stays out of history and bookmarks) or from the host page:
//   window.DIALERAPI_PANEL = {token: "...", baseUrl: "https://dialer.example"};  // before panel.js
//   DialerPanel.setToken("...");  // a fresh token later, e.g. after `token_expired`
(function () {
  "use strict";

  // The spec's 15 picker codes (lead-intake-api.md, "Pause reason"): the picker when
  // GET /api/pause-reasons fails (spec, "GET /api/pause-reasons").
  var FALLBACK_CODES = ["bio", "tea", "lunch", "meeting", "training", "backoffice", "acw", "escalation",
    "process_query", "system", "logout", "personal", "poa", "ondemand", "other"];
  var limits = {words: 12, chars: 80};
  var FIRST_RETRY_MS = 1000, LAST_RETRY_MS = 30000, POLICY_VIOLATION = 1008, TRY_AGAIN_LATER = 1013;
  // A refusal the panel cannot mend by trying again: a new token or a configuration change is needed.
  var MESSAGES = {
    unauthorized: "The service did not accept this panel's credential.",
    token_expired: "This panel's token has expired: sign in to the desktop again.",
    invalid_token: "This panel's token is not valid: sign in to the desktop again.",
    unknown_agent: "No agent matches this token.",
    agent_mismatch: "The token belongs to another agent.",
    origin_not_allowed: "This page's address may not open the agent socket (WS_ALLOWED_ORIGINS).",
    key_in_url: "A service key may not travel in the socket's URL.",
    at_capacity: "The dialer is full for now; trying again shortly.",
    too_slow: "This panel fell behind the dialer's updates (a slow connection); reconnecting.",
    invalid_pause_reason: "That pause reason is not available.",
    invalid_pause_note: "The note must have 1 to 12 words and at most 80 characters.",
    invalid_message: "The service could not read the last message.",
    unknown_event: "The service does not know the last message."
  };

  var settings = window.DIALERAPI_PANEL || {};
  var token = settings.token || tokenFromFragment();
  var base = settings.baseUrl || window.location.origin;
  var socket = null;
  var retryDelay = FIRST_RETRY_MS;
  var retryTimer = null;
  var pickerCodes = {};

  function $(id) { return document.getElementById(id); }

  function tokenFromFragment() {
    var match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
    if (!match) { return null; }
    window.history.replaceState(null, "", window.location.pathname + window.location.search);
    return decodeURIComponent(match[1]);
  }

  function socketUrl() {
    var url = new URL("/ws", base);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("token", token);
    return url.href;
  }

  function setConnection(state, text) {
    $("connection").dataset.state = state;
    $("connection").textContent = text || state;
  }

  function showError(reason) {
    $("error").dataset.reason = reason || "";
    $("error").textContent = reason ? (MESSAGES[reason] || "Error") + " (" + reason + ")" : "";
  }

  function jitterMs() { return Math.floor(Math.random() * 3000); }

  function retryIn(ms) {
    var at = Date.now() + ms;
    $("retry").dataset.retryAt = String(at);
    $("retry").textContent = "retrying in " + Math.ceil(ms / 1000) + " s";
    retryTimer = window.setTimeout(function () { retryTimer = null; connect(); }, ms);
  }

  function connect() {
    if (socket || retryTimer) { return; }
    $("retry").textContent = "";
    if (!token) {
      setConnection("refused", "no token");
      showError("unauthorized");
      return;
    }
    setConnection("connecting");
    var refusal = {};
    socket = new WebSocket(socketUrl());
    socket.onopen = function () { setConnection("open"); };
    socket.onmessage = function (message) {
      var frame;
      try { frame = JSON.parse(message.data); } catch (err) { return; }
      if (frame.event === "server_error") { refusal = frame.data || {}; }
      handle(frame.event, frame.data || {});
    };
    socket.onclose = function (closed) {
      socket = null;
      if (closed.code === TRY_AGAIN_LATER) {
        // The host is full: wait what it asked, plus a few seconds so a refused floor spreads out.
        setConnection("closed", "full");
        retryIn((refusal.retry_after || 10) * 1000 + jitterMs());
      } else if (closed.code === POLICY_VIOLATION) {
        setConnection("refused");
      } else {
        setConnection("closed");
        retryIn(retryDelay + jitterMs());
        retryDelay = Math.min(retryDelay * 2, LAST_RETRY_MS);
      }
    };
  }

  function handle(event, data) {
    if (data.agent_id !== undefined) { $("agent").textContent = data.agent_id; }
    if (event === "dialer.outbound_blocked") {
      retryDelay = FIRST_RETRY_MS;
      showBlocked(data.blocked);
    } else if (event === "dialer.missed_activities") {
      showBlocked(data.blocked);
      showActivities(data);
    } else if (event === "dialer.callbacks") {
      showCallbacks(data);
    } else if (event === "agent.paused") {
      $("paused").textContent = "paused: " + data.code + (data.note ? " (" + data.note + ")" : "");
      $("paused").dataset.code = data.code;
      showError("");
    } else if (event === "agent.resumed") {
      $("paused").textContent = "working";
      $("paused").dataset.code = "";
      showError("");
    } else if (event === "server_error") {
      showError(data.reason);
    }
  }

  function showBlocked(blocked) {
    $("blocked").dataset.blocked = String(blocked);
    $("blocked").textContent = blocked
      ? "Outbound paused: file the outcome of the overdue calls below."
      : "Outbound open.";
  }

  function timeText(iso) {
    return iso ? new Date(iso).toLocaleString() : "-";
  }

  function showActivities(data) {
    $("grace").textContent = data.grace_minutes;
    var body = $("activities").querySelector("tbody");
    body.textContent = "";
    data.items.forEach(function (item) {
      var row = document.createElement("tr");
      row.dataset.oliId = item.oli_id;
      row.dataset.dueAt = item.due_at || "";
      if (item.overdue) { row.className = "overdue"; }
      [item.oli_id, item.call_type, timeText(item.connected_at), timeText(item.ended_at),
        item.due_at ? timeText(item.due_at) + (item.overdue ? " (overdue)" : "") : "after the call"]
        .forEach(function (text) {
          var cell = document.createElement("td");
          cell.textContent = text;
          row.appendChild(cell);
        });
      body.appendChild(row);
    });
    $("activities").hidden = data.items.length === 0;
    $("no-activities").hidden = data.items.length !== 0;
  }

  // Personal callbacks: times are the service's wall clock (DB_TIMEZONE), shown as sent.
  function fallbackText(item) {
    if (item.fallback_at === null) { return "never"; }
    return item.minutes_until_fallback > 0
      ? "in " + item.minutes_until_fallback + " min (" + item.fallback_at + ")"
      : "now";
  }

  // The list as last sent, and when (this browser's clock, used for elapsed time only): a callback
  // that falls due is marked when it does, without a word from the service.
  var callbacks = { items: [] };
  var callbacksAt = 0;

  function showCallbacks(data) {
    callbacks = data;
    callbacksAt = Date.now();
    drawCallbacks();
  }

  function drawCallbacks() {
    var elapsed = (Date.now() - callbacksAt) / 1000;
    var body = $("callbacks").querySelector("tbody");
    body.textContent = "";
    callbacks.items.forEach(function (item) {
      var due = item.due || item.seconds_until_due <= elapsed;
      var row = document.createElement("tr");
      row.dataset.oliId = item.oli_id;
      row.dataset.due = String(due);
      if (due) { row.className = "due"; }
      [item.oli_id, item.client_name, item.form_type,
        item.callback_scheduled_at + (due ? " (due)" : ""), fallbackText(item)]
        .forEach(function (text) {
          var cell = document.createElement("td");
          cell.textContent = text;
          row.appendChild(cell);
        });
      body.appendChild(row);
    });
    $("callbacks").hidden = callbacks.items.length === 0;
    $("no-callbacks").hidden = callbacks.items.length !== 0;
  }

  window.setInterval(drawCallbacks, 5000);

  function fillPicker(reasons, source) {
    var select = $("pause-code");
    select.textContent = "";
    pickerCodes = {};
    reasons.forEach(function (reason) {
      var option = document.createElement("option");
      option.value = reason.code;
      option.textContent = reason.label;
      select.appendChild(option);
      pickerCodes[reason.code] = reason;
    });
    $("picker-source").dataset.source = source;
    $("picker-source").textContent = source === "service" ? "" : "Pause reasons: the standard list (the service's list could not be read).";
    noteVisibility();
  }

  function loadPicker() {
    fetch(new URL("/api/pause-reasons", base).href, {credentials: "omit"})
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (catalog) {
        limits = {words: catalog.note_max_words, chars: catalog.note_max_chars};
        fillPicker(catalog.reasons, "service");
      })
      .catch(function () {
        fillPicker(FALLBACK_CODES.map(function (code) {
          var reason = {code: code, label: code.replace(/_/g, " ")};
          if (code === "other") { reason.note = true; }
          return reason;
        }), "fallback");
      });
  }

  function noteVisibility() {
    var reason = pickerCodes[$("pause-code").value];
    $("pause-note-label").hidden = !(reason && reason.note);
    noteCount();
  }

  // Words and characters (code points, as the service counts them) of a note, trimmed.
  function noteSize(note) {
    var trimmed = note.trim();
    return {words: trimmed ? trimmed.split(/\s+/).length : 0, chars: Array.from(trimmed).length};
  }

  function noteProblem(note) {
    var size = noteSize(note);
    return size.words === 0 || size.words > limits.words || size.chars > limits.chars;
  }

  function noteCount() {
    var size = noteSize($("pause-note").value);
    $("note-count").textContent = $("pause-note-label").hidden ? ""
      : size.words + "/" + limits.words + " words, " + size.chars + "/" + limits.chars + " characters";
  }

  function send(event, data) {
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      showError("");
      $("error").textContent = "Not connected: try again when the connection is open.";
      return;
    }
    socket.send(JSON.stringify({event: event, data: data}));
  }

  $("pause-code").addEventListener("change", noteVisibility);
  $("pause-note").addEventListener("input", noteCount);
  $("pause-form").addEventListener("submit", function (submitted) {
    submitted.preventDefault();
    var code = $("pause-code").value;
    var data = {code: code};
    if (pickerCodes[code] && pickerCodes[code].note) {
      var note = $("pause-note").value.trim();
      if (noteProblem(note)) {
        showError("invalid_pause_note");
        return;
      }
      data.note = note;
    }
    send("agent.pause", data);
  });
  $("resume-button").addEventListener("click", function () { send("agent.resume", {}); });

  window.DialerPanel = {
    setToken: function (fresh) {
      token = fresh;
      if (retryTimer) { window.clearTimeout(retryTimer); retryTimer = null; }
      if (socket) { socket.onclose = null; socket.close(); socket = null; }
      retryDelay = FIRST_RETRY_MS;
      showError("");
      connect();
    }
  };

  // Leaving the page closes the socket at once, so the agent stops being panel-active (and
  // claimable) now, not when the server next misses a pong; a page the browser keeps in its
  // back-forward cache would otherwise keep its socket open. Coming back reconnects.
  window.addEventListener("pagehide", function () {
    if (retryTimer) { window.clearTimeout(retryTimer); retryTimer = null; }
    if (socket) { socket.onclose = null; socket.close(1000, "page closed"); socket = null; }
  });
  window.addEventListener("pageshow", function (shown) {
    if (shown.persisted) { connect(); }
  });

  loadPicker();
  connect();
}());
