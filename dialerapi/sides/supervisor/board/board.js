// The supervisor board (docs/supervisors/board.md). Plain JavaScript, no build step.
//
// The supervisor token comes from the URL fragment (#token=..., removed from the address bar at
// once) or from the host page: window.DIALERAPI_BOARD = {token: "...", baseUrl: "https://dialer.example"}.
// The socket sends `board.snapshot` on connect and `board.update` per batch of changes; times are
// ISO 8601 UTC, and a timer counts from the service's clock (each frame's `now`), not this machine's.
(function () {
  "use strict";

  var FIRST_RETRY_MS = 1000, LAST_RETRY_MS = 30000, POLICY_VIOLATION = 1008, TRY_AGAIN_LATER = 1013;
  var STATE_NAMES = {free: "free", on_call: "on a call", wrap_up: "wrap-up", paused: "paused",
    outbound_blocked: "blocked", panel_inactive: "panel closed"};
  var MESSAGES = {
    unauthorized: "The service did not accept this board's credential.",
    token_expired: "This board's token has expired: sign in again.",
    invalid_token: "This board's token is not valid: sign in again.",
    origin_not_allowed: "This page's address may not open the board's socket (WS_ALLOWED_ORIGINS).",
    key_in_url: "A service key may not travel in the socket's URL."
  };

  // Refusals the board waits out and retries (close 1013), with what to do meanwhile.
  var WAIT_MESSAGES = {
    too_many_boards: "Too many boards are open with this sign-in: close one; this board tries again shortly.",
    too_slow: "This board fell behind the floor's changes (a slow connection); it reconnects for a fresh view."
  };

  var settings = window.DIALERAPI_BOARD || {};
  var token = settings.token || tokenFromFragment();
  var base = settings.baseUrl || window.location.origin;
  var socket = null, retryDelay = FIRST_RETRY_MS;
  var rows = {};         // agent_id -> row from the service
  var elements = {};     // agent_id -> <tr>
  var offsetMs = 0;      // service clock minus this machine's clock
  var boardSettings = {pause_alert_seconds: 900, amber_points: 0.005};
  var sortKey = "agent_id", sortDir = 1;
  // For the bench and the tests: the script time of each applied frame (milliseconds), when the
  // first snapshot was on screen (ms since navigation), and with settings.trace every row put on
  // screen as [agent_id, state, Date.now()].
  var stats = window.DialerBoard = {frames: 0, scriptMs: [], snapshotMs: null, renderedAt: null, puts: []};

  function $(id) { return document.getElementById(id); }

  function tokenFromFragment() {
    var match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
    if (!match) { return null; }
    window.history.replaceState(null, "", window.location.pathname + window.location.search);
    return decodeURIComponent(match[1]);
  }

  function serviceNow() { return Date.now() + offsetMs; }

  function duration(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    var h = Math.floor(seconds / 3600), m = Math.floor(seconds / 60) % 60, s = seconds % 60;
    return h + ":" + (m < 10 ? "0" : "") + m + ":" + (s < 10 ? "0" : "") + s;
  }

  function percent(rate) { return (rate * 100).toFixed(2) + "%"; }

  function setConnection(state, text) {
    $("connection").dataset.state = state;
    $("connection").textContent = text || state;
  }

  function connect() {
    if (!token) { setConnection("refused", "no token: open the board with #token=..."); return; }
    var url = new URL("/board/ws", base);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("token", token);
    setConnection("connecting", "connecting");
    socket = new WebSocket(url.href);
    var refused = false;
    socket.onmessage = function (message) {
      var frame = JSON.parse(message.data);
      if (frame.event === "server_error") {
        refused = frame.data.reason in MESSAGES;
        $("problem").hidden = false;
        $("problem").textContent = MESSAGES[frame.data.reason] || WAIT_MESSAGES[frame.data.reason] ||
          ("The service refused: " + frame.data.reason);
        return;
      }
      var started = performance.now();
      offsetMs = Date.parse(frame.data.now) - Date.now();
      if (frame.event === "board.snapshot") { applySnapshot(frame.data); }
      if (frame.event === "board.update") { applyUpdate(frame.data); }
      var spent = performance.now() - started;
      if (frame.event === "board.snapshot") {
        stats.snapshotMs = spent;
        stats.renderedAt = stats.renderedAt || performance.now();
      } else {
        stats.scriptMs.push(spent);
      }
      stats.frames += 1;
      retryDelay = FIRST_RETRY_MS;
    };
    socket.onopen = function () { setConnection("live", "live"); $("problem").hidden = true; };
    socket.onclose = function (event) {
      if (refused || event.code === POLICY_VIOLATION) { setConnection("refused", "refused"); return; }
      var wait = event.code === TRY_AGAIN_LATER ? Math.max(retryDelay, 10000) : retryDelay;
      retryDelay = Math.min(retryDelay * 2, LAST_RETRY_MS);
      setConnection("waiting", "reconnecting in " + Math.round(wait / 1000) + " s");
      window.setTimeout(connect, wait * (0.8 + Math.random() * 0.4));
    };
  }

  // --- tiles -----------------------------------------------------------------------------------

  function renderTiles(floor) {
    $("maintenance").hidden = !floor.maintenance;
    var box = $("tiles");
    box.textContent = "";
    floor.form_types.forEach(function (ft) { box.appendChild(tile(ft, floor.leads_due_cap)); });
    setFormTypes(floor.form_types.map(function (ft) { return ft.form_type; }));
    renderPools(floor.caller_id_pools || []);
  }

  // Each caller-ID pool's numbers and the calls they may still present today
  // (docs/operations/caller-ids.md, "Watched"): a pool a campaign uses with no active number
  // refuses its claims; one under the floor's headroom share runs dry before the day ends.
  function renderPools(pools) {
    var box = $("pools");
    box.textContent = "";
    pools.forEach(function (pool) {
      var el = document.createElement("article");
      el.className = "pool";
      el.dataset.pool = pool.pool;
      el.dataset.level = pool.empty ? "red" : (pool.low ? "amber" : "green");
      var h = document.createElement("h2");
      h.textContent = "caller IDs: " + pool.pool;
      el.appendChild(h);
      var line = document.createElement("div");
      line.dataset.figure = "caller_ids";
      line.textContent = pool.active + " active · " + pool.at_cap + " at their cap · " + pool.flagged + " flagged";
      el.appendChild(line);
      var headroom = document.createElement("div");
      headroom.dataset.figure = "headroom_today";
      headroom.textContent = "today " + pool.headroom_today + " of " + pool.capacity_today + " calls left" +
        (pool.empty ? ": NO ACTIVE NUMBER" : (pool.low ? ": LOW" : "")) +
        (pool.used_by.length ? " · " + pool.used_by.join(", ") : "");
      el.appendChild(headroom);
      box.appendChild(el);
    });
  }

  // The campaign filter is rebuilt only when its campaigns change: rebuilt at every tiles frame, it
  // closed a supervisor's open dropdown twice a second. The choice is kept.
  function setFormTypes(names) {
    var select = $("filter-form-type"), chosen = select.value;
    var shown = Array.prototype.slice.call(select.options, 1).map(function (option) { return option.value; });
    if (shown.join("\n") === names.join("\n")) { return; }
    select.length = 1;
    names.forEach(function (name) { select.add(new Option(name, name)); });
    select.value = names.indexOf(chosen) >= 0 ? chosen : "";
  }

  function tile(ft, cap) {
    var el = document.createElement("article");
    el.className = "tile";
    el.dataset.formType = ft.form_type;
    el.dataset.level = ft.abandons.level;
    var h = document.createElement("h2");
    h.textContent = ft.form_type;
    el.appendChild(h);
    var personal = ft.personal_callbacks;
    var figures = [
      ["free", ft.agents.free], ["on_call", ft.agents.on_call], ["wrap_up", ft.agents.wrap_up],
      ["paused", ft.agents.paused], ["outbound_blocked", ft.agents.outbound_blocked],
      ["panel_inactive", ft.agents.panel_inactive],
      ["calls_connected", ft.calls.connected], ["calls_ringing", ft.calls.ringing],
      ["calls_holding", ft.calls.holding],
      ["leads_due", ft.leads_due_capped ? cap + "+" : ft.leads_due],
      ["personal_callbacks", personal.owner_free + personal.owner_busy + personal.past_fallback]
    ];
    var labels = {free: "free", on_call: "on a call", wrap_up: "wrap-up", paused: "paused",
      outbound_blocked: "blocked", panel_inactive: "panel closed", calls_connected: "calls with an agent",
      calls_ringing: "calls ringing", calls_holding: "calls holding for an agent", leads_due: "leads due", personal_callbacks: "personal callbacks due"};
    var dl = document.createElement("dl");
    figures.forEach(function (pair) {
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = labels[pair[0]];
      dd.textContent = pair[1];
      dd.dataset.figure = pair[0];
      dl.appendChild(dt);
      dl.appendChild(dd);
    });
    el.appendChild(dl);
    var a = ft.abandons, w = a.windows;
    var rates = document.createElement("div");
    rates.className = "rates";
    rates.dataset.figure = "abandon_rates";
    rates.textContent = "abandoned 15 min " + percent(w["15m"].rate) + " · today " + percent(w.today.rate) +
      " · " + a.period + " " + percent(w.period.rate) + " (limit " + percent(a.limit) + ")" +
      (a.over_limit ? " OVER THE LIMIT" : "");
    el.appendChild(rates);
    var held = heldText(ft.leads_held);
    if (held) {
      // The leads each rule holds back, as the minute's count left them.
      var line = document.createElement("div");
      line.className = "held";
      line.dataset.figure = "leads_held";
      line.textContent = "held: " + held;
      el.appendChild(line);
    }
    var c = ft.campaign;
    if (c && !c.open) {
      // A paused, ended or closed campaign dials none of its leads; say until when.
      var closed = document.createElement("div");
      closed.className = "campaign-closed";
      closed.dataset.figure = "campaign";
      closed.textContent = "campaign " + (c.state !== "active" ? c.state : "closed: " + c.closed_reason.replace(/_/g, " ") +
        (c.restriction_note ? " (" + c.restriction_note + ")" : "")) + (c.next_open_at ? " until " + c.next_open_at : "");
      el.dataset.campaign = c.closed_reason;
      el.appendChild(closed);
    }
    return el;
  }

  var HELD_NAMES = {do_not_call: "do-not-call", outside_calling_window: "outside calling window",
    emergency: "emergency", state_holiday: "state holiday", state_sunday: "Sunday ban", state_hours: "state hours",
    consent_required: "no consent"};

  function heldText(counts) {
    return Object.keys(HELD_NAMES).filter(function (reason) { return counts && counts[reason] > 0; })
      .map(function (reason) { return counts[reason] + " " + HELD_NAMES[reason]; }).join(" · ");
  }

  // --- agents ----------------------------------------------------------------------------------

  function cells(tr) {
    if (!tr.firstChild) {
      for (var i = 0; i < 8; i += 1) { tr.appendChild(document.createElement("td")); }
      [3, 6, 7].forEach(function (n) { tr.children[n].className = "num"; });
    }
    return tr.children;
  }

  function fill(tr, row) {
    var td = cells(tr);
    tr.dataset.agentId = row.agent_id;
    tr.dataset.state = row.state;
    tr.dataset.since = row.since || "";
    td[0].textContent = row.agent_id;
    td[1].textContent = row.name;
    td[2].textContent = STATE_NAMES[row.state] || row.state;
    td[4].textContent = row.pause_code ? row.pause_code + (row.reason_note ? ": " + row.reason_note : "") : "";
    td[5].textContent = row.form_type || "";
    td[6].textContent = row.calls;
    td[7].textContent = duration(row.talk_seconds);
    tick(tr, row);
  }

  function stateSeconds(row) { return row.since ? (serviceNow() - Date.parse(row.since)) / 1000 : 0; }

  function tick(tr, row) {
    var seconds = stateSeconds(row);
    tr.children[3].textContent = row.since ? duration(seconds) : "";
    var alert = row.state === "paused" && seconds > boardSettings.pause_alert_seconds;
    if (alert !== tr.classList.contains("alert")) { tr.classList.toggle("alert", alert); }
  }

  function visible(row) {
    var ft = $("filter-form-type").value, state = $("filter-state").value;
    return (!ft || row.skills.indexOf(ft) >= 0) && (!state || row.state === state);
  }

  function compare(a, b) {
    var x = a[sortKey], y = b[sortKey];
    if (sortKey === "since") { x = -stateSeconds(a); y = -stateSeconds(b); }
    if (x === y) { return a.agent_id - b.agent_id; }
    if (x === null || x === undefined) { return 1; }
    if (y === null || y === undefined) { return -1; }
    return (x < y ? -1 : 1) * sortDir;
  }

  function layout() {
    var body = $("agents").tBodies[0];
    var shown = Object.keys(rows).map(function (id) { return rows[id]; }).filter(visible).sort(compare);
    var fragment = document.createDocumentFragment();
    shown.forEach(function (row) { fragment.appendChild(elements[row.agent_id]); });
    body.textContent = "";
    body.appendChild(fragment);
    $("agent-count").textContent = shown.length + " of " + Object.keys(rows).length + " agents";
  }

  function put(row) {
    rows[row.agent_id] = row;
    if (settings.trace) { stats.puts.push([row.agent_id, row.state, Date.now()]); }
    var tr = elements[row.agent_id] || (elements[row.agent_id] = document.createElement("tr"));
    fill(tr, row);
  }

  function applySnapshot(data) {
    if (data.settings) { boardSettings = data.settings; }
    rows = {};
    elements = {};
    data.agents.forEach(put);
    renderTiles(data.floor);
    layout();
  }

  function applyUpdate(data) {
    var moved = data.removed.length > 0;
    data.agents.forEach(function (row) {
      var before = rows[row.agent_id];
      moved = moved || !before || before.state !== row.state || before[sortKey] !== row[sortKey] ||
        visible(before) !== visible(row);
      put(row);
    });
    data.removed.forEach(function (id) { delete rows[id]; delete elements[id]; });
    if (data.floor) { renderTiles(data.floor); }
    if (moved) { layout(); }
  }

  function everySecond() {
    $("clock").textContent = new Date(serviceNow()).toISOString().slice(11, 19) + " UTC";
    Object.keys(rows).forEach(function (id) { tick(elements[id], rows[id]); });
  }

  Array.prototype.forEach.call(document.querySelectorAll("th[data-sort]"), function (th) {
    th.addEventListener("click", function () {
      sortDir = sortKey === th.dataset.sort ? -sortDir : 1;
      sortKey = th.dataset.sort;
      Array.prototype.forEach.call(document.querySelectorAll("th[data-sort]"), function (other) {
        other.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      layout();
    });
  });
  $("filter-form-type").addEventListener("change", layout);
  $("filter-state").addEventListener("change", layout);
  window.setInterval(everySecond, 1000);
  connect();
}());
