// The bcn-bridge operator's dashboard. Plain script, no build step, nothing from elsewhere;
// see bridge/dashboard/API.md for the HTTP contract and docs/dashboard.md for what it shows.
// Everything that comes from the bridge (names, chat text, errors) goes into the DOM with
// textContent or attributes only, never as HTML.
"use strict";

(() => {
  const ROOT = "/dashboard";
  const API = `${ROOT}/api`;
  const PAGE_SIZE = 50;
  const DEBOUNCE_MS = 300; // conversation events are coalesced into one re-fetch…
  const MAX_WAIT_MS = 1000; // …which a steady flood of events cannot postpone for longer
  const FILTER_TYPING_MS = 300;
  const RECONNECT_START_MS = 1000;
  const RECONNECT_MAX_MS = 15000;
  const SVG_NS = "http://www.w3.org/2000/svg";
  const NUMBER = new Intl.NumberFormat("en-US");

  // The list's states (API.md) and the tracker's statuses they stand for.
  const STATES = [
    { key: "open", label: "open", statuses: ["open"] },
    { key: "clarifying", label: "clarifying", statuses: ["clarifying"] },
    { key: "answered", label: "answered", statuses: ["done", "partial"] },
    { key: "failed", label: "failed", statuses: ["failed"] },
    { key: "timeout", label: "timed out", statuses: ["timeout"] },
    { key: "expired", label: "expired", statuses: ["expired"] },
  ];
  const STATE_OF_STATUS = {
    open: "open", clarifying: "clarifying", done: "answered", partial: "answered",
    answered: "answered", failed: "failed", timeout: "timeout", expired: "expired",
  };
  const WAITING = new Set(["open", "clarifying"]);
  const BOT_STATES = new Set(["idle", "replying", "offline", "dropped"]);

  const byId = (id) => document.getElementById(id);
  const ui = {
    instance: byId("instance"),
    ready: byId("ready"),
    live: byId("live"),
    operator: byId("operator-name"),
    signOut: byId("sign-out"),
    signedOut: byId("signed-out"),
    signedOutText: byId("signed-out-text"),
    healthParts: byId("health-parts"),
    healthEmpty: byId("health-empty"),
    botsAlert: byId("bots-alert"),
    botGroups: byId("bot-groups"),
    botsEmpty: byId("bots-empty"),
    bindingRows: byId("binding-rows"),
    heldLanes: byId("held-lanes"),
    lanesEmpty: byId("lanes-empty"),
    bindingsResult: byId("bindings-result"),
    chips: byId("state-chips"),
    filters: byId("filters"),
    filterState: byId("filter-state"),
    filterChat: byId("filter-chat"),
    filterBot: byId("filter-bot"),
    area: byId("conversation-area"),
    rows: byId("conversation-rows"),
    listError: byId("list-error"),
    newer: byId("newer"),
    older: byId("older"),
    pageInfo: byId("page-info"),
    detail: byId("detail"),
    detailId: byId("detail-id"),
    detailSummary: byId("detail-summary"),
    detailHistory: byId("detail-history"),
    detailQuestion: byId("detail-question"),
    detailError: byId("detail-error"),
    closeDetail: byId("close-detail"),
    cancelButton: byId("cancel-request"),
    cancelForm: byId("cancel-form"),
    cancelReason: byId("cancel-reason"),
    keepRequest: byId("keep-request"),
    cancelResult: byId("cancel-result"),
    trafficWindow: byId("traffic-window"),
    charts: byId("charts"),
    counterMessages: document.querySelector("#counter-messages tbody"),
    counterHeld: document.querySelector("#counter-held tbody"),
    counterDropped: document.querySelector("#counter-dropped tbody"),
  };

  const app = {
    csrf: "",
    operator: "",
    signedOut: false,
    overview: null,
    clockOffset: 0, // server clock minus this browser's, from the overview's `now`
    filters: { state: "", chat: "", bot: "" },
    cursor: null, // the cursor the visible page was fetched with (null: the newest page)
    cursorStack: [], // the cursors of the pages before it, for "Newer"
    nextCursor: null,
    listCounts: null,
    listSeq: 0,
    listAbort: null,
    listRendered: false,
    openId: null,
    openItem: null,
    detailSeq: 0,
    source: null,
    streamFailed: false,
    reconnectMs: RECONNECT_START_MS,
    pending: null, // {ids: Set, timer, first} while conversation events wait to be applied
    botTyping: 0,
    chatKeys: "",
  };

  // ---- small helpers ----------------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      node.setAttribute(name, String(value));
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function str(value) {
    return value === undefined || value === null ? "" : String(value);
  }

  function token(value) {
    return str(value).toLowerCase().replace(/[^a-z0-9_-]/g, "");
  }

  function count(value) {
    const number = Number(value);
    return Number.isFinite(number) ? NUMBER.format(number) : "0";
  }

  function asList(value) {
    return Array.isArray(value) ? value.filter((v) => v && typeof v === "object") : [];
  }

  function serverNow() {
    return Date.now() + app.clockOffset;
  }

  function duration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return s % 60 && m < 10 ? `${m} min ${s % 60} s` : `${m} min`;
    const h = Math.floor(m / 60);
    if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
    return `${Math.floor(h / 24)} d`;
  }

  function ago(iso) {
    const at = Date.parse(iso);
    if (Number.isNaN(at)) return "";
    const seconds = (serverNow() - at) / 1000;
    return seconds < 2 ? "just now" : `${duration(seconds)} ago`;
  }

  function left(iso) {
    const at = Date.parse(iso);
    if (Number.isNaN(at)) return "—";
    const seconds = (at - serverNow()) / 1000;
    return seconds <= 0 ? "due now" : duration(seconds);
  }

  function clockTime(iso) {
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return "";
    return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function lasted(iso) {
    const at = Date.parse(iso);
    return Number.isNaN(at) ? "" : duration((serverNow() - at) / 1000);
  }

  function relative(node) {
    const iso = node.dataset.since;
    return `${node.dataset.prefix || ""}${node.dataset.mode === "for" ? lasted(iso) : ago(iso)}`;
  }

  // An element whose text is "3 min ago" (or, with mode "for", "3 min"), kept current by the
  // one-second tick.
  function since(tag, className, iso, prefix, mode) {
    const node = el(tag, className);
    if (!iso) {
      node.textContent = "—";
      return node;
    }
    node.dataset.since = iso;
    if (prefix) node.dataset.prefix = prefix;
    if (mode) node.dataset.mode = mode;
    node.title = str(iso);
    node.textContent = relative(node);
    return node;
  }

  function countdown(tag, className, iso) {
    const node = el(tag, className);
    if (iso) {
      node.dataset.until = iso;
      node.title = str(iso);
    }
    node.textContent = iso ? left(iso) : "—";
    return node;
  }

  function tick() {
    for (const node of document.querySelectorAll("[data-since]")) {
      node.textContent = relative(node);
    }
    for (const node of document.querySelectorAll("[data-until]")) {
      node.textContent = left(node.dataset.until);
    }
  }

  function depthText(depth) {
    if (Array.isArray(depth) && depth.length === 2) return `${depth[0]}/${depth[1]}`;
    if (depth && typeof depth === "object") return `${depth.current ?? "?"}/${depth.max ?? "?"}`;
    return "—";
  }

  function stateOf(item) {
    return STATE_OF_STATUS[str(item.status)] || token(item.status) || "unknown";
  }

  function stateBadge(item) {
    const state = stateOf(item);
    const label = str(item.state_label) || (STATES.find((s) => s.key === state) || {}).label || state;
    const badge = el("span", `badge state state-${state}`, label);
    badge.dataset.status = str(item.status);
    return badge;
  }

  function chatLabel(key) {
    const parts = str(key).split("|");
    if (parts.length < 2) return str(key);
    const [channel, chat, thread] = parts;
    return thread ? `${channel} · ${chat} · ${thread}` : `${channel} · ${chat}`;
  }

  function chain(items) {
    const node = el("span", "chain");
    const steps = Array.isArray(items) ? items : [];
    steps.forEach((step, index) => {
      if (index) node.append(document.createTextNode(" → "));
      node.append(el("span", `step type-${token(step)}`, str(step).toUpperCase()));
    });
    if (!steps.length) node.textContent = "—";
    return node;
  }

  function route(from, to) {
    return `${str(from) || "?"} → ${str(to) || "?"}`;
  }

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(path, { body, signal } = {}) {
    const init = { credentials: "same-origin", headers: { Accept: "application/json" }, signal };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["Content-Type"] = "application/json";
      init.headers["X-CSRF-Token"] = app.csrf;
      init.body = JSON.stringify(body);
    }
    const response = await fetch(`${API}${path}`, init);
    let data = null;
    try { data = await response.json(); } catch { data = null; }
    const error = data && typeof data === "object" && typeof data.error === "string" ? data.error : "";
    if (response.status === 401) {
      showSignedOut(error);
      throw new ApiError(401, error || "not signed in");
    }
    if (!response.ok) throw new ApiError(response.status, error || `HTTP ${response.status}`);
    return data;
  }

  function setLive(text, kind) {
    ui.live.textContent = text;
    ui.live.dataset.kind = kind;
  }

  function showSignedOut(reason) {
    if (app.signedOut) return;
    app.signedOut = true;
    ui.signedOutText.textContent = reason === "session expired"
      ? "Your session has expired."
      : "You are not signed in.";
    ui.signedOut.hidden = false;
    if (app.source) app.source.close();
    app.source = null;
    setLive("signed out", "offline");
  }

  // ---- header and health --------------------------------------------------------------------

  function renderHeader(data) {
    ui.instance.textContent = str(data.instance);
    const ready = Boolean(data.health && data.health.ready);
    ui.ready.textContent = ready ? "ready" : "not ready";
    ui.ready.className = `badge readiness ${ready ? "up" : "down"}`;
    document.title = `${ready ? "" : "(not ready) "}${str(data.instance) || "bcn-bridge"} · dashboard`;
  }

  function renderHealth(health) {
    const parts = asList(health && health.parts);
    ui.healthEmpty.hidden = parts.length > 0;
    ui.healthParts.replaceChildren(...parts.map((part) => {
      const up = Boolean(part.up);
      const item = el("li", `part ${up ? "up" : "down"}`);
      item.dataset.part = str(part.name);
      const head = el("div", "part-head");
      head.append(el("span", "part-name", part.name));
      head.append(el("span", `badge ${up ? "up" : "down"}`, up ? "up" : "down"));
      head.append(since("span", "muted since", part.since, "for ", "for"));
      item.append(head);
      if (part.last_error) item.append(el("p", "last-error", `Last error: ${str(part.last_error)}`));
      return item;
    }));
  }

  // ---- bots -----------------------------------------------------------------------------------

  function renderBots(bots) {
    const list = asList(bots);
    ui.botsEmpty.hidden = list.length > 0;
    const groups = new Map();
    for (const bot of list) {
      const group = str(bot.group) || "(no group)";
      if (!groups.has(group)) groups.set(group, []);
      groups.get(group).push(bot);
    }
    const dropped = [];
    const sections = [];
    for (const group of [...groups.keys()].sort()) {
      const section = el("section", "bot-group");
      section.dataset.group = group;
      section.append(el("h3", "", group));
      const ul = el("ul", "bot-list");
      ul.setAttribute("aria-label", `Bots in ${group}`);
      const members = groups.get(group).sort((a, b) => str(a.name).localeCompare(str(b.name)));
      for (const bot of members) {
        let state = token(bot.state);
        if (!BOT_STATES.has(state)) state = bot.online ? "idle" : "offline";
        const item = el("li", `bot state-${state}`);
        item.dataset.bot = str(bot.name);
        item.dataset.group = group;
        item.dataset.state = state;
        item.append(el("span", "bot-name", bot.name));
        item.append(el("span", `badge bot-state state-${state}`, state));
        item.append(since("span", "muted activity", bot.last_activity, "active "));
        if (bot.note) item.append(el("p", "note", bot.note));
        if (state === "dropped") dropped.push(`${str(bot.name)} (${group})`);
        ul.append(item);
      }
      section.append(ul);
      sections.push(section);
    }
    ui.botGroups.replaceChildren(...sections);
    ui.botsAlert.hidden = dropped.length === 0;
    ui.botsAlert.textContent = dropped.length ? `Dropped mid-reply: ${dropped.join(", ")}` : "";
  }

  // ---- bindings and held lanes ----------------------------------------------------------------

  function renderBindings(bindings, lanes) {
    const list = asList(bindings);
    ui.bindingRows.replaceChildren(...list.map((binding) => {
      const key = str(binding.key);
      const paused = Boolean(binding.paused);
      const row = el("tr", `binding ${paused ? "paused" : "active"}`);
      row.dataset.binding = key;
      const chat = el("td", "binding-chat");
      chat.append(el("span", "", chatLabel(key)));
      chat.title = key;
      row.append(chat, el("td", "binding-group", binding.group));
      const state = el("td", "binding-state");
      if (paused) {
        state.append(el("span", "badge paused", "paused"));
        const by = binding.paused_by ? ` by ${str(binding.paused_by)}` : "";
        state.append(el("span", "muted", by));
        if (binding.paused_at) state.append(since("span", "muted", binding.paused_at, " · "));
      } else {
        state.append(el("span", "badge up", "active"));
      }
      row.append(state);
      const action = el("td", "binding-action");
      const button = el("button", paused ? "small" : "secondary small", paused ? "Resume" : "Pause");
      button.type = "button";
      button.setAttribute("aria-label", `${paused ? "Resume" : "Pause"} ${chatLabel(key)}`);
      button.addEventListener("click", () => bindingAction(paused ? "resume" : "pause", key, button));
      action.append(button);
      row.append(action);
      return row;
    }));
    if (!list.length) {
      const row = el("tr", "empty");
      const cell = el("td", "muted", "No bindings.");
      cell.colSpan = 4;
      row.append(cell);
      ui.bindingRows.append(row);
    }

    const held = asList(lanes).filter((lane) => Number(lane.held) > 0);
    ui.lanesEmpty.hidden = held.length > 0;
    ui.heldLanes.replaceChildren(...held.map((lane) => {
      const key = str(lane.lane);
      const item = el("li", "lane");
      item.dataset.lane = key;
      const text = el("span", "lane-text");
      text.append(el("span", "lane-name", chatLabel(lane.binding || key)));
      const over = Number(lane.held_over) > 0 ? `, ${count(lane.held_over)} over the cap` : "";
      text.append(el("span", "muted", ` · ${count(lane.held)} held${over}`));
      const button = el("button", "small", `Release ${count(lane.held)} held`);
      button.type = "button";
      button.addEventListener("click", () => releaseLane(key, button));
      item.append(text, button);
      return item;
    }));
    tick();
  }

  async function bindingAction(action, key, button) {
    button.disabled = true;
    ui.bindingsResult.textContent = "";
    try {
      const data = await api(`/bindings/${action}`, { body: { binding: key } });
      const binding = data && data.binding;
      if (binding && app.overview) {
        app.overview.bindings = asList(app.overview.bindings)
          .map((b) => (b.key === binding.key ? binding : b));
        renderBindings(app.overview.bindings, app.overview.held_lanes);
      }
      ui.bindingsResult.textContent = `${action === "pause" ? "Paused" : "Resumed"} ${chatLabel(key)}.`;
    } catch (error) {
      ui.bindingsResult.textContent = `Could not ${action} ${chatLabel(key)}: ${error.message}`;
      button.disabled = false;
    }
  }

  async function releaseLane(lane, button) {
    button.disabled = true;
    ui.bindingsResult.textContent = "";
    try {
      const data = await api("/lanes/release", { body: { lane } });
      const released = count(data && data.released);
      const notKept = Number(data && data.not_kept) > 0 ? ` (${count(data.not_kept)} no longer kept)` : "";
      ui.bindingsResult.textContent = `Released ${released} held message(s)${notKept}.`;
    } catch (error) {
      ui.bindingsResult.textContent = `Could not release: ${error.message}`;
      button.disabled = false;
    }
  }

  // ---- traffic ----------------------------------------------------------------------------------

  function niceCeiling(value) {
    if (!(value > 0)) return 1;
    const power = 10 ** Math.floor(Math.log10(value));
    for (const step of [1, 2, 2.5, 5, 10]) {
      if (value <= step * power) return step * power;
    }
    return 10 * power;
  }

  function seconds(value) {
    if (value === null || value === undefined || !Number.isFinite(Number(value))) return "—";
    const s = Number(value);
    return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(s < 10 ? 2 : 1)} s`;
  }

  // One small line chart: `series` [{key, label, format}] over `points`; gaps (null) break lines.
  function chart(id, title, points, series, format) {
    const width = 360;
    const height = 110;
    const pad = { left: 44, right: 8, top: 8, bottom: 18 };
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    let max = 0;
    for (const point of points) {
      for (const s of series) {
        const v = Number(point[s.key]);
        if (point[s.key] !== null && Number.isFinite(v)) max = Math.max(max, v);
      }
    }
    const top = niceCeiling(max);
    const x = (i) => pad.left + (points.length > 1 ? (i * plotW) / (points.length - 1) : plotW / 2);
    const y = (v) => pad.top + plotH - (Math.min(v, top) / top) * plotH;

    const figure = el("figure", "chart");
    figure.id = id;
    figure.append(el("figcaption", "", title));
    const latest = points.length ? points[points.length - 1] : null;
    const summary = series.map((s) => `${s.label} ${latest ? format(latest[s.key]) : "—"}`).join(", ");
    const root = svg("svg", {
      viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart-svg",
      "aria-label": `${title}: latest ${summary}`,
    });
    root.append(svg("title", {}, `${title}: latest ${summary}`));
    root.append(svg("line", { x1: pad.left, x2: width - pad.right, y1: y(0), y2: y(0), class: "axis" }));
    root.append(svg("line", { x1: pad.left, x2: width - pad.right, y1: y(top), y2: y(top), class: "grid" }));
    root.append(svg("text", { x: pad.left - 4, y: y(0) + 4, class: "tick end" }, format(0)));
    root.append(svg("text", { x: pad.left - 4, y: y(top) + 4, class: "tick end" }, format(top)));
    if (points.length) {
      root.append(svg("text", { x: pad.left, y: height - 4, class: "tick" }, clockTime(points[0].at)));
      root.append(svg("text", { x: width - pad.right, y: height - 4, class: "tick end" },
        clockTime(points[points.length - 1].at)));
    }
    series.forEach((s, index) => {
      let segment = [];
      const flush = () => {
        if (segment.length === 1) {
          const [cx, cy] = segment[0];
          root.append(svg("circle", { cx, cy, r: 2, class: `dot series-${index}` }));
        } else if (segment.length > 1) {
          root.append(svg("polyline", {
            points: segment.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(" "),
            class: `line series-${index}`,
          }));
        }
        segment = [];
      };
      points.forEach((point, i) => {
        const raw = point[s.key];
        const v = Number(raw);
        if (raw === null || raw === undefined || !Number.isFinite(v)) flush();
        else segment.push([x(i), y(v)]);
      });
      flush();
    });
    figure.append(root);

    const legend = el("ul", "legend");
    series.forEach((s, index) => {
      const item = el("li", "");
      item.dataset.series = s.key;
      item.append(el("span", `swatch series-${index}`));
      item.append(el("span", "", `${s.label} `));
      item.append(el("strong", "latest", latest ? format(latest[s.key]) : "—"));
      legend.append(item);
    });
    figure.append(legend);
    return figure;
  }

  function renderTraffic(traffic, counters) {
    const points = asList(traffic && traffic.points);
    const interval = Number(traffic && traffic.interval_seconds) || 0;
    ui.trafficWindow.textContent = points.length && interval
      ? `last ${duration(points.length * interval)}, one point per ${duration(interval)}`
      : "no samples yet";
    ui.charts.replaceChildren(
      chart("chart-messages", "Messages per interval", points,
        [{ key: "in", label: "in" }, { key: "out", label: "out" }], (v) => count(v ?? 0)),
      chart("chart-latency", "Relay latency", points,
        [{ key: "p50", label: "p50" }, { key: "p95", label: "p95" }], seconds),
      chart("chart-outbox", "Outbox depth", points, [{ key: "outbox", label: "outbox" }],
        (v) => count(v ?? 0)),
    );

    const c = counters || {};
    const inbound = c.messages_in && typeof c.messages_in === "object" ? c.messages_in : {};
    const outbound = c.messages_out && typeof c.messages_out === "object" ? c.messages_out : {};
    const pacedFor = c.paced && typeof c.paced === "object" ? c.paced : {};
    const pacedSeconds = c.paced_seconds && typeof c.paced_seconds === "object"
      ? c.paced_seconds : {};
    const channels = [...new Set([...Object.keys(inbound), ...Object.keys(outbound)])].sort();
    ui.counterMessages.replaceChildren(...channels.map((channel) => {
      const row = el("tr", "channel");
      row.dataset.channel = channel;
      const waits = Number(pacedFor[channel]) || 0;
      const paced = waits ? `${seconds(Number(pacedSeconds[channel]) || 0)} (${count(waits)})` : "—";
      row.append(el("td", "", channel), el("td", "num in", count(inbound[channel] ?? 0)),
        el("td", "num out", count(outbound[channel] ?? 0)), el("td", "num paced", paced));
      return row;
    }));
    if (!channels.length) ui.counterMessages.append(emptyRow(4, "No messages yet."));

    const held = asList(c.held);
    ui.counterHeld.replaceChildren(...held.map((h) => {
      const row = el("tr", "held");
      row.dataset.reason = str(h.reason);
      row.dataset.channel = str(h.channel);
      row.append(el("td", "", h.reason), el("td", "", h.channel), el("td", "num", count(h.count)));
      return row;
    }));
    if (!held.length) ui.counterHeld.append(emptyRow(3, "None."));

    const dropped = asList(c.dropped);
    ui.counterDropped.replaceChildren(...dropped.map((d) => {
      const row = el("tr", "dropped");
      row.dataset.reason = str(d.reason);
      row.dataset.channel = str(d.channel);
      row.append(el("td", "", d.reason), el("td", "", d.channel), el("td", "", d.direction),
        el("td", "num", count(d.count)));
      return row;
    }));
    if (!dropped.length) ui.counterDropped.append(emptyRow(4, "None."));
  }

  function emptyRow(columns, text) {
    const row = el("tr", "empty");
    const cell = el("td", "muted", text);
    cell.colSpan = columns;
    row.append(cell);
    return row;
  }

  // ---- the overview ---------------------------------------------------------------------------

  function renderOverview(data) {
    if (!data || typeof data !== "object") return;
    app.overview = data;
    const now = Date.parse(data.now);
    if (!Number.isNaN(now)) app.clockOffset = now - Date.now();
    renderHeader(data);
    renderHealth(data.health);
    renderBots(data.bots);
    renderBindings(data.bindings, data.held_lanes);
    renderTraffic(data.traffic, data.counters);
    updateChatOptions(data.bindings);
    renderChips();
  }

  function updateChatOptions(bindings) {
    const keys = asList(bindings).map((b) => str(b.key)).filter(Boolean).sort();
    const signature = keys.join("\n");
    if (signature === app.chatKeys) return; // leave an open <select> alone
    app.chatKeys = signature;
    const selected = ui.filterChat.value;
    const options = [el("option", "", "all chats")];
    options[0].value = "";
    for (const key of keys) {
      const option = el("option", "", chatLabel(key));
      option.value = key;
      options.push(option);
    }
    if (selected && !keys.includes(selected)) {
      const option = el("option", "", chatLabel(selected));
      option.value = selected;
      options.push(option);
    }
    ui.filterChat.replaceChildren(...options);
    ui.filterChat.value = selected;
  }

  // ---- conversations: chips, filters, the page --------------------------------------------------

  function stateCount(counts, state) {
    if (!counts || typeof counts !== "object") return 0;
    if (Object.hasOwn(counts, state.key) && !state.statuses.includes(state.key)) {
      return Number(counts[state.key]) || 0; // a count already by list state ("answered")
    }
    return state.statuses.reduce((sum, status) => sum + (Number(counts[status]) || 0), 0);
  }

  function renderChips() {
    const counts = app.listCounts || (app.overview && app.overview.counts) || {};
    const chips = [{ key: "", label: "all", total: 0 }];
    for (const state of STATES) {
      const n = stateCount(counts, state);
      chips[0].total += n;
      chips.push({ key: state.key, label: state.label, total: n });
    }
    ui.chips.replaceChildren(...chips.map((chip) => {
      const button = el("button", `chip${chip.key ? ` state-${chip.key}` : " state-all"}`);
      button.type = "button";
      button.dataset.state = chip.key;
      button.setAttribute("aria-pressed", String(app.filters.state === chip.key));
      button.append(el("span", "chip-label", chip.label), el("span", "count", count(chip.total)));
      button.addEventListener("click", () => setFilter("state", chip.key));
      return button;
    }));
  }

  function setFilter(name, value) {
    if (app.filters[name] === value) return;
    app.filters[name] = value;
    if (name === "state") ui.filterState.value = value;
    app.cursor = null;
    app.cursorStack = [];
    renderChips();
    loadList();
  }

  function listQuery() {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(app.filters)) if (value) params.set(name, value);
    if (app.cursor) params.set("cursor", app.cursor);
    params.set("limit", String(PAGE_SIZE));
    return `/conversations?${params}`;
  }

  async function loadList(mark) {
    if (app.signedOut) return;
    const seq = ++app.listSeq;
    if (app.listAbort) app.listAbort.abort();
    const controller = new AbortController();
    app.listAbort = controller;
    try {
      const data = await api(listQuery(), { signal: controller.signal });
      if (seq !== app.listSeq) return;
      ui.listError.textContent = "";
      renderList(data);
      if (mark) performance.measure(mark, `${mark}:start`);
      if (!app.listRendered) {
        app.listRendered = true;
        performance.mark("dashboard:first-rows");
      }
    } catch (error) {
      if (error.name === "AbortError" || seq !== app.listSeq) return;
      ui.listError.textContent = `Could not load conversations: ${error.message}`;
    } finally {
      if (app.listAbort === controller) app.listAbort = null;
    }
  }

  function renderList(data) {
    const items = asList(data && data.items);
    app.nextCursor = data && data.next_cursor ? String(data.next_cursor) : null;
    if (data && data.counts && typeof data.counts === "object") app.listCounts = data.counts;
    renderChips();
    const rows = items.map(conversationRow);
    if (!rows.length) {
      const row = emptyRow(8, app.cursor ? "No older conversations." : "No conversations match.");
      rows.push(row);
    }
    ui.rows.replaceChildren(...rows);
    ui.older.disabled = !app.nextCursor;
    ui.newer.disabled = app.cursorStack.length === 0 && !app.cursor;
    const page = app.cursorStack.length + 1;
    ui.pageInfo.textContent = items.length
      ? `page ${page} · ${items.length} shown, newest first`
      : `page ${page}`;
  }

  function conversationRow(item) {
    const id = str(item.request_id);
    const state = stateOf(item);
    const row = el("tr", `conversation state-${state}`);
    row.dataset.requestId = id;
    row.dataset.state = state;
    row.tabIndex = 0;
    if (id === app.openId) row.setAttribute("aria-selected", "true");
    const idCell = el("td", "request-id");
    idCell.append(el("code", "", id));
    const chainCell = el("td", "chain-cell");
    chainCell.append(chain(item.chain));
    const stateCell = el("td", "state-cell");
    stateCell.append(stateBadge(item));
    const chat = el("td", "chat", chatLabel(item.chat));
    chat.title = str(item.chat);
    row.append(
      idCell, chainCell, stateCell,
      el("td", "depth", depthText(item.depth)),
      el("td", "route", route(item.from, item.to)),
      chat,
      since("td", "age", item.created_at, "", "for"),
      WAITING.has(state) && item.deadline
        ? countdown("td", "time-left", item.deadline)
        : el("td", "time-left muted", "—"),
    );
    if (item.task) row.title = str(item.task);
    return row;
  }

  function openFromRow(target) {
    const row = target.closest("tr.conversation");
    if (!row || !ui.rows.contains(row)) return;
    openDetail(row.dataset.requestId);
  }

  // ---- the detail ------------------------------------------------------------------------------

  function markSelected() {
    for (const row of ui.rows.querySelectorAll("tr.conversation")) {
      if (row.dataset.requestId === app.openId) row.setAttribute("aria-selected", "true");
      else row.removeAttribute("aria-selected");
    }
  }

  function openDetail(id) {
    if (!id) return;
    if (app.openId !== id) {
      ui.cancelResult.textContent = "";
      ui.cancelForm.hidden = true;
      ui.cancelReason.value = "";
      ui.detailSummary.replaceChildren();
      ui.detailHistory.replaceChildren();
    }
    const opened = app.openId !== id;
    app.openId = id;
    ui.detailId.textContent = id;
    ui.detail.hidden = false;
    ui.area.classList.add("has-detail");
    markSelected();
    if (opened) ui.detail.scrollIntoView({ block: "nearest" }); // below the table when narrow
    loadDetail();
  }

  function closeDetail() {
    app.openId = null;
    app.openItem = null;
    ui.detail.hidden = true;
    ui.area.classList.remove("has-detail");
    markSelected();
  }

  async function loadDetail() {
    const id = app.openId;
    if (!id || app.signedOut) return;
    const seq = ++app.detailSeq;
    try {
      const item = await api(`/conversations/${encodeURIComponent(id)}`);
      if (seq !== app.detailSeq || app.openId !== id) return;
      ui.detailError.textContent = "";
      renderDetail(item);
    } catch (error) {
      if (seq !== app.detailSeq) return;
      ui.detailError.textContent = error.status === 404
        ? "This conversation is not tracked (any more)."
        : `Could not load the conversation: ${error.message}`;
    }
  }

  function fact(list, label, value) {
    if (value === null || value === undefined || value === "") return;
    const dd = el("dd", "");
    if (value instanceof Node) dd.append(value); else dd.textContent = String(value);
    list.append(el("dt", "", label), dd);
  }

  function renderDetail(item) {
    if (!item || typeof item !== "object") return;
    app.openItem = item;
    const state = stateOf(item);
    ui.detail.dataset.state = state;
    const head = el("div", "detail-badges");
    head.append(stateBadge(item), chain(item.chain));
    const facts = el("dl", "facts");
    fact(facts, "From → to", route(item.from, item.to));
    fact(facts, "Depth", depthText(item.depth));
    fact(facts, "Chat", chatLabel(item.chat));
    fact(facts, "Task", item.task);
    fact(facts, "Started", item.created_at ? since("span", "", item.created_at) : "");
    fact(facts, "Updated", item.updated_at ? since("span", "", item.updated_at) : "");
    if (WAITING.has(state) && item.deadline) fact(facts, "Time left", countdown("span", "", item.deadline));
    ui.detailSummary.replaceChildren(head, facts);

    const history = asList(item.history);
    ui.detailHistory.replaceChildren(...history.map((entry, index) => {
      const type = str(entry.type).toUpperCase() || "?";
      const li = el("li", `history-item type-${token(type)}`);
      li.dataset.index = String(index);
      li.dataset.type = type;
      const top = el("div", "history-head");
      top.append(el("span", `badge type type-${token(type)}`, type));
      top.append(el("span", "route", route(entry.from, entry.to)));
      if (entry.status) top.append(el("span", "badge status", entry.status));
      const time = el("time", "muted", clockTime(entry.at));
      if (entry.at) time.dateTime = str(entry.at);
      top.append(time);
      li.append(top);
      li.append(el("p", "content", str(entry.content) || "—"));
      return li;
    }));
    if (!history.length) ui.detailHistory.append(el("li", "muted", "No messages recorded."));

    renderQuestion(item.card, item.request_id);

    const waiting = WAITING.has(state);
    ui.cancelButton.hidden = !waiting || !ui.cancelForm.hidden;
    if (!waiting) ui.cancelForm.hidden = true;
    tick();
  }

  // A bot's question, answerable from here as from any chat's card: the first answer
  // anywhere wins, and the chat's cards are redrawn with "answered by <you> (dashboard)".
  function renderQuestion(card, requestId) {
    const box = ui.detailQuestion;
    if (!card || typeof card !== "object") {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const kept = box.querySelector(".question-result");
    const keptText = kept && box.dataset.key === str(card.key) ? kept.textContent : "";
    box.dataset.key = str(card.key);
    box.hidden = false;
    const open = card.state === "open";
    const parts = [el("h4", "", `${str(card.asker)} asks`),
      el("p", "question-text", str(card.question))];
    if (!open) parts.push(el("p", "question-outcome", str(card.outcome) || str(card.state)));
    if (open) {
      const buttons = el("div", "question-buttons");
      for (const option of Array.isArray(card.options) ? card.options : []) {
        const press = el("button", "question-option", str(option));
        press.type = "button";
        press.addEventListener("click", () => answerQuestion(requestId, str(option), null));
        buttons.append(press);
      }
      const stop = el("button", "danger", "Stop");
      stop.type = "button";
      stop.addEventListener("click", () => answerQuestion(requestId, "stop", null));
      buttons.append(stop);
      parts.push(buttons);
      const form = el("form", "question-own");
      const input = el("input", "");
      input.maxLength = 4000;
      input.placeholder = "Answer in your own words";
      input.setAttribute("aria-label", "Answer in your own words");
      const submit = el("button", "", "Answer");
      submit.type = "submit";
      form.append(input, submit);
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        if (input.value.trim()) answerQuestion(requestId, "own", input.value);
      });
      parts.push(form);
    }
    const result = el("p", "question-result result", keptText);
    result.setAttribute("role", "status");
    parts.push(result);
    box.replaceChildren(...parts);
  }

  async function answerQuestion(requestId, choice, text) {
    const result = ui.detailQuestion.querySelector(".question-result");
    if (result) result.textContent = "Answering…";
    try {
      const data = await api(`/conversations/${encodeURIComponent(requestId)}/answer`,
        { body: text === null ? { choice } : { choice, text } });
      if (data && data.conversation && app.openId === requestId) renderDetail(data.conversation);
      const now = ui.detailQuestion.querySelector(".question-result");
      if (now) now.textContent = str(data && data.text);
      loadList();
    } catch (error) {
      const now = ui.detailQuestion.querySelector(".question-result");
      if (now) now.textContent = `Not answered: ${error.message}`;
      loadDetail();
    }
  }

  async function cancelRequest(event) {
    event.preventDefault();
    const id = app.openId;
    if (!id) return;
    const reason = ui.cancelReason.value.trim();
    const submit = ui.cancelForm.querySelector("button[type=submit]");
    submit.disabled = true;
    ui.cancelResult.textContent = "Cancelling…";
    try {
      const data = await api(`/conversations/${encodeURIComponent(id)}/cancel`,
        { body: reason ? { reason } : {} });
      const item = data && data.conversation;
      const label = item ? str(item.state_label) || stateOf(item) : "cancelled";
      ui.cancelResult.textContent = `Cancelled: the request is now ${label}.`;
      ui.cancelForm.hidden = true;
      ui.cancelReason.value = "";
      if (item && app.openId === id) renderDetail({ ...item, history: item.history || (app.openItem && app.openItem.history) });
      loadDetail();
      loadList();
    } catch (error) {
      ui.cancelResult.textContent = error.status === 409
        ? "Not cancelled: the request has already finished."
        : `Not cancelled: ${error.message}`;
      if (error.status === 409) loadDetail();
    } finally {
      submit.disabled = false;
    }
  }

  // ---- live updates -----------------------------------------------------------------------------

  function noteConversation(data) {
    if (!app.pending) {
      app.pending = { ids: new Set(), timer: 0, first: Date.now() };
    }
    const pending = app.pending;
    if (data && data.request_id) pending.ids.add(String(data.request_id));
    window.clearTimeout(pending.timer);
    const wait = Math.max(0, Math.min(DEBOUNCE_MS, pending.first + MAX_WAIT_MS - Date.now()));
    pending.timer = window.setTimeout(applyConversations, wait);
  }

  function applyConversations() {
    const pending = app.pending;
    app.pending = null;
    loadList();
    if (app.openId && (!pending || pending.ids.has(app.openId) || pending.ids.size === 0)) {
      loadDetail();
    }
  }

  function connectStream() {
    if (app.signedOut) return;
    const source = new EventSource(`${API}/stream`);
    app.source = source;
    source.addEventListener("open", () => {
      if (app.source !== source) return;
      app.reconnectMs = RECONNECT_START_MS;
      setLive("live", "ok");
      if (app.streamFailed) {
        app.streamFailed = false;
        noteConversation(null); // events may have been missed meanwhile
      }
    });
    source.addEventListener("overview", (event) => {
      let data;
      try { data = JSON.parse(event.data); } catch { return; }
      renderOverview(data);
    });
    source.addEventListener("conversation", (event) => {
      let data = null;
      try { data = JSON.parse(event.data); } catch { data = null; }
      noteConversation(data);
    });
    source.addEventListener("error", () => {
      if (app.source !== source) return;
      app.streamFailed = true;
      setLive("reconnecting…", "offline");
      if (source.readyState === EventSource.CLOSED) {
        // The server refused the stream (EventSource gives up on a non-200 answer, e.g. a
        // 401): ask the API why, then open a new one unless we are signed out.
        source.close();
        app.source = null;
        const delay = app.reconnectMs;
        app.reconnectMs = Math.min(app.reconnectMs * 2, RECONNECT_MAX_MS);
        api("/session").catch(() => {}).finally(() => {
          if (!app.signedOut) window.setTimeout(connectStream, delay);
        });
      }
    });
  }

  // ---- wiring ------------------------------------------------------------------------------------

  ui.signOut.addEventListener("click", async () => {
    ui.signOut.disabled = true;
    try {
      await fetch(`${ROOT}/logout`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": app.csrf },
        body: "{}",
      });
    } catch { /* reload anyway: the server decides whether we are still signed in */ }
    if (app.source) app.source.close();
    window.location.reload();
  });

  ui.filterState.addEventListener("change", () => setFilter("state", ui.filterState.value));
  ui.filterChat.addEventListener("change", () => setFilter("chat", ui.filterChat.value));
  let botTimer = 0;
  ui.filterBot.addEventListener("input", () => {
    window.clearTimeout(botTimer);
    botTimer = window.setTimeout(() => setFilter("bot", ui.filterBot.value.trim()), FILTER_TYPING_MS);
  });
  ui.filters.addEventListener("submit", (event) => {
    event.preventDefault();
    window.clearTimeout(botTimer);
    setFilter("bot", ui.filterBot.value.trim());
  });

  ui.older.addEventListener("click", () => {
    if (!app.nextCursor) return;
    app.cursorStack.push(app.cursor);
    app.cursor = app.nextCursor;
    ui.older.disabled = true;
    performance.mark("dashboard:page:start");
    loadList("dashboard:page");
  });
  ui.newer.addEventListener("click", () => {
    if (!app.cursor && !app.cursorStack.length) return;
    app.cursor = app.cursorStack.length ? app.cursorStack.pop() : null;
    ui.newer.disabled = true;
    performance.mark("dashboard:page:start");
    loadList("dashboard:page");
  });

  ui.rows.addEventListener("click", (event) => openFromRow(event.target));
  ui.rows.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      openFromRow(event.target);
    }
  });
  ui.closeDetail.addEventListener("click", closeDetail);
  ui.cancelButton.addEventListener("click", () => {
    ui.cancelButton.hidden = true;
    ui.cancelForm.hidden = false;
    ui.cancelResult.textContent = "";
    ui.cancelReason.focus();
  });
  ui.keepRequest.addEventListener("click", () => {
    ui.cancelForm.hidden = true;
    ui.cancelReason.value = "";
    ui.cancelButton.hidden = !(app.openItem && WAITING.has(stateOf(app.openItem)));
  });
  ui.cancelForm.addEventListener("submit", cancelRequest);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !ui.detail.hidden && ui.cancelForm.hidden) closeDetail();
  });

  // ---- start -------------------------------------------------------------------------------------

  async function start() {
    try {
      const session = await api("/session");
      app.csrf = str(session && session.csrf);
      app.operator = str(session && session.operator);
      ui.operator.textContent = app.operator ? `Signed in as ${app.operator}` : "";
    } catch {
      if (!app.signedOut) setLive("cannot reach the bridge", "offline");
      return;
    }
    renderChips();
    loadList();
    api("/overview").then(renderOverview).catch(() => {}); // the stream sends one too
    connectStream();
    window.setInterval(tick, 1000); // relative times only; data comes from the stream
  }

  start();
})();
