// The bcn-bridge webchat page. Plain script, no build step; see docs/webchat.md for the
// WebSocket protocol it speaks. Only `html` from the server (bot text the bridge rendered and
// sanitized) is inserted as HTML; everything a person typed is inserted as text.
"use strict";

(() => {
  const base = document.body.dataset.base || "/";
  const byId = (id) => document.getElementById(id);
  const KEYS = { client: "bcn-webchat.client-id", name: "bcn-webchat.name", room: "bcn-webchat.room" };
  const COLOURS = 8;
  const BACKOFF_START_MS = 500;
  const BACKOFF_MAX_MS = 15000;

  const storage = {
    get(key) {
      try { return window.localStorage.getItem(key); } catch { return null; }
    },
    set(key, value) {
      try { window.localStorage.setItem(key, value); } catch { /* private mode: forget */ }
    },
  };

  function randomId(prefix) {
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // The server issues the page's id (in `hello`, confirmed in `joined`); the page keeps it
  // and presents it when it joins again, so a reload is the same person to the bots and its
  // queued messages are still recognised as resends. It never makes one up itself.
  function storedClientId() {
    const id = storage.get(KEYS.client);
    return id && /^[\w.:-]{1,100}$/.test(id) ? id : "";
  }

  function roomInAddress() {
    const room = new URLSearchParams(window.location.search).get("room");
    return room ? room.trim().slice(0, 64) : "";
  }

  // The address names the room joined, so it can be shared or bookmarked as it is.
  function showRoomInAddress(room) {
    const url = new URL(window.location.href);
    if (url.searchParams.get("room") === room) return;
    url.searchParams.set("room", room);
    window.history.replaceState(null, "", url);
  }

  const state = {
    clientId: storedClientId(),
    shownName: "", // the name the room shows, e.g. "Ada (2)" when another Ada is there
    ws: null,
    joined: false,
    wantJoin: false,
    name: storage.get(KEYS.name) || "",
    // A link to a room (`/?room=ops`) names the room to join; else the last one joined.
    room: roomInAddress() || storage.get(KEYS.room) || "",
    backoff: BACKOFF_START_MS,
    maxLength: 4000,
    pending: new Map(), // client_message_id -> text, in the order typed; resent until acked
    taps: new Map(), // tap_id -> the card's key, until the server answers the press
    replyTo: null, // the message the next one replies to: {id, sender, snippet}
  };

  const ui = {
    status: byId("status"),
    roomLabel: byId("room-label"),
    changeRoom: byId("change-room"),
    join: byId("join"),
    joinForm: byId("join-form"),
    nameInput: byId("name-input"),
    roomInput: byId("room-input"),
    roomList: byId("room-list"),
    joinError: byId("join-error"),
    chat: byId("chat"),
    hint: byId("unbound-hint"),
    messages: byId("messages"),
    sendForm: byId("send-form"),
    input: byId("message-input"),
    replyBar: byId("reply-bar"),
    replyToText: byId("reply-to-text"),
    replyCancel: byId("reply-cancel"),
    sendError: byId("send-error"),
    requests: byId("requests"),
    noRequests: byId("no-requests"),
    requestList: byId("request-list"),
  };

  // ---- small DOM helpers ---------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function colourClass(name) {
    let hash = 0;
    for (const ch of String(name)) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
    return `colour-${hash % COLOURS}`;
  }

  function shortTime(iso) {
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return "";
    return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  function listText(value) {
    if (Array.isArray(value)) return value.map(String).join(", ");
    return value === undefined || value === null ? "" : String(value);
  }

  function depthText(depth) {
    if (Array.isArray(depth) && depth.length === 2) return `${depth[0]}/${depth[1]}`;
    if (depth && typeof depth === "object") return `${depth.current ?? "?"}/${depth.max ?? "?"}`;
    return listText(depth);
  }

  function nearBottom() {
    const list = ui.messages;
    return list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  }

  function keepScrolled(wasNearBottom) {
    if (wasNearBottom) ui.messages.scrollTop = ui.messages.scrollHeight;
  }

  function setStatus(text, kind) {
    ui.status.textContent = text;
    ui.status.dataset.kind = kind;
  }

  function showStatus() {
    const queued = state.pending.size;
    const tail = queued ? ` · ${queued} queued` : "";
    if (state.ws && state.ws.readyState === WebSocket.OPEN) {
      setStatus((state.joined ? "connected" : "online") + tail, "ok");
    } else {
      setStatus("offline, reconnecting…" + tail, "offline");
    }
  }

  // ---- protocol cards and the request panel --------------------------------------------

  function badge(text, className) {
    return el("span", `badge ${className}`, text);
  }

  function protocolCard(protocol) {
    const type = listText(protocol.type).toUpperCase() || "PROTOCOL";
    const card = el("div", `protocol-card type-${type.toLowerCase()}`);
    card.setAttribute("role", "group");
    card.setAttribute("aria-label", `${type} protocol message`);

    const head = el("div", "card-head");
    head.append(badge(type, `type type-${type.toLowerCase()}`));
    const route = el("span", "route");
    const from = listText(protocol.from);
    const to = listText(protocol.to);
    route.textContent = `${from ? "@" + from.replace(/^@/, "") : "?"} → ${to ? "@" + to.replace(/^@/, "") : "?"}`;
    head.append(route);
    if (protocol.status) {
      const status = listText(protocol.status).toLowerCase();
      head.append(badge(status, `status status-${status.replace(/[^a-z_]/g, "")}`));
    }
    card.append(head);

    const facts = el("dl", "card-facts");
    const addFact = (label, value) => {
      if (value === undefined || value === null || value === "") return;
      facts.append(el("dt", "", label), el("dd", "", value));
    };
    addFact("Request", listText(protocol.request_id));
    addFact("Depth", protocol.depth === undefined ? "" : depthText(protocol.depth));
    addFact("Task", listText(protocol.task));
    addFact("Question", listText(protocol.question));
    addFact("Result", listText(protocol.result));
    addFact("Message", listText(protocol.message));
    card.append(facts);
    return card;
  }

  // A bot's question with buttons: a press sends the button's data; the server decides
  // what it means and who pressed it (this page's own member, whatever the frame says).
  function timeLeft(deadline) {
    const ms = Date.parse(deadline) - Date.now();
    if (!Number.isFinite(ms)) return "";
    const seconds = Math.max(0, Math.floor(ms / 1000));
    return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")} left`;
  }

  function questionCard(card) {
    const state_ = listText(card.state) || "open";
    const node = el("div", `question-card state-${state_.replace(/[^a-z]/g, "")}`);
    node.dataset.cardKey = listText(card.key);
    node.setAttribute("role", "group");
    node.setAttribute("aria-label", "A bot's question");
    node.append(el("p", "question-asker", `${listText(card.asker)} asks`));
    node.append(el("p", "question-text", listText(card.question)));
    const facts = el("p", "question-facts");
    facts.append(el("code", "", listText(card.request_id)));
    if (card.depth) facts.append(el("span", "", ` · depth ${depthText(card.depth)}`));
    if (state_ === "open" && card.deadline) {
      facts.append(el("span", "question-left", ` · ${timeLeft(card.deadline)}`));
    }
    node.append(facts);
    if (state_ !== "open") {
      node.append(el("p", "question-outcome", listText(card.outcome) || state_));
      return node;
    }
    const buttons = el("div", "question-buttons");
    let ownData = null;
    for (const button of Array.isArray(card.buttons) ? card.buttons : []) {
      const data = listText(button.data);
      const press = el("button", `question-button role-${listText(button.role)}`,
        listText(button.label));
      press.type = "button";
      press.dataset.tap = data;
      if (button.role === "own") {
        ownData = data;
        press.addEventListener("click", () => {
          const form = node.querySelector(".question-own");
          if (form) { form.hidden = false; form.querySelector("input").focus(); }
        });
      } else {
        press.addEventListener("click", () => tap(node, data, null));
      }
      buttons.append(press);
    }
    node.append(buttons);
    if (ownData) {
      const form = el("form", "question-own");
      form.hidden = true;
      const input = el("input", "");
      input.type = "text";
      input.maxLength = 4000;
      input.placeholder = "Your answer";
      input.setAttribute("aria-label", "Your answer");
      const submit = el("button", "", "Answer");
      submit.type = "submit";
      form.append(input, submit);
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        if (input.value.trim()) tap(node, ownData, input.value);
      });
      node.append(form);
    }
    node.append(el("p", "question-note"));
    return node;
  }

  function tap(node, data, text) {
    const tapId = randomId("t-");
    state.taps.set(tapId, node.dataset.cardKey);
    const note = node.querySelector(".question-note");
    if (!send({ type: "tap", tap_id: tapId, data, text })) {
      if (note) note.textContent = "Offline: not sent.";
      return;
    }
    if (note) note.textContent = "Sending…";
  }

  function showTapReply(frame) {
    const key = state.taps.get(frame.tap_id);
    state.taps.delete(frame.tap_id);
    const node = key ? ui.messages.querySelector(
      `.question-card[data-card-key="${CSS.escape(key)}"]`) : null;
    const note = node ? node.querySelector(".question-note") : null;
    if (note) note.textContent = listText(frame.text);
    if (node && frame.wants_own_words) {
      const form = node.querySelector(".question-own");
      if (form) { form.hidden = false; form.querySelector("input").focus(); }
    }
  }

  function renderRequests(items) {
    ui.requestList.replaceChildren();
    const list = Array.isArray(items) ? items : [];
    ui.noRequests.hidden = list.length > 0;
    for (const item of list) {
      if (!item || typeof item !== "object") continue;
      const type = listText(item.type).toUpperCase();
      const entry = el("li", "request");
      const head = el("div", "request-head");
      head.append(badge(type || "REQUEST", `type type-${type.toLowerCase()}`));
      head.append(el("span", "route", `${listText(item.from)} → ${listText(item.to)}`));
      if (item.status) head.append(badge(listText(item.status), "status"));
      entry.append(head);
      if (item.task) entry.append(el("p", "request-task", listText(item.task)));
      const meta = el("p", "request-meta");
      meta.append(el("code", "", listText(item.request_id)));
      if (item.depth !== undefined) meta.append(el("span", "", ` · depth ${depthText(item.depth)}`));
      if (item.deadline) {
        const due = shortTime(item.deadline) || listText(item.deadline);
        meta.append(el("span", "", ` · due ${due}`));
      }
      entry.append(meta);
      ui.requestList.append(entry);
    }
  }

  // ---- messages ---------------------------------------------------------------------------

  function messageNode(message) {
    const kind = listText(message.kind);
    const sender = (message.sender && message.sender.name) || "?";
    const isBot = Boolean(message.sender && message.sender.is_bot);
    const item = el("li", `message kind-${kind} ${isBot ? "from-bot" : "from-human"}`);
    item.dataset.id = message.id;
    if (message.client_message_id) item.dataset.clientMessageId = message.client_message_id;

    const head = el("div", "message-head");
    if (kind === "system") {
      head.append(el("span", "sender system-sender", sender));
    } else {
      head.append(el("span", `sender ${colourClass(sender)}`, sender));
      // Only the server sets `is_bot` (a bot's reply through the bridge), never a page: the
      // mark a person cannot get, whatever name they type.
      if (isBot) {
        const mark = badge("bot", "bot-badge");
        mark.title = "A bot of this room's group (people cannot get this mark)";
        head.append(mark);
      }
    }
    const time = el("time", "time", shortTime(message.timestamp));
    if (message.timestamp) time.dateTime = message.timestamp;
    head.append(time);
    if (kind === "delta") head.append(el("span", "typing", "typing…"));
    if (message.edited && kind === "final") head.append(el("span", "muted", "(edited)"));
    if (message.id && (kind === "final" || kind === "human")) {
      const reply = el("button", "secondary small reply", "Reply");
      reply.type = "button";
      reply.title = "Reply to this message (a reply to a bot's question answers it)";
      reply.addEventListener("click", () => replyTo({
        id: message.id, sender, snippet: snippetOf(findMessage(message.id) || item),
      }));
      head.append(reply);
    }
    item.append(head);
    if (typeof message.reply_to === "string" && message.reply_to) {
      const quoted = findMessage(message.reply_to);
      const who = quoted ? quoted.querySelector(".sender") : null;
      const quote = el("p", "reply-quote",
        `↪ ${who ? who.textContent : "a message"}: ${quoted ? snippetOf(quoted) : "(no longer shown)"}`);
      item.append(quote);
    }

    if (message.card && typeof message.card === "object") {
      item.append(questionCard(message.card));
    } else if (message.protocol && typeof message.protocol === "object") {
      item.append(protocolCard(message.protocol));
    }
    const body = el("div", "message-body");
    if (typeof message.html === "string") {
      body.innerHTML = message.html; // rendered and sanitized by the bridge core
      if (message.protocol) foldProtocolText(body);
    } else {
      body.textContent = listText(message.text);
    }
    item.append(body);
    return item;
  }

  // The card already shows the block's fields; its canonical text (what bots outside the
  // bridge parse) stays one click away.
  function foldProtocolText(body) {
    for (const block of body.querySelectorAll("pre.protocol")) {
      const details = el("details", "protocol-text");
      details.append(el("summary", "", "Protocol text"));
      block.replaceWith(details);
      details.append(block);
    }
  }

  function findMessage(id) {
    for (const node of ui.messages.children) if (node.dataset.id === id) return node;
    return null;
  }

  function findPending(clientMessageId) {
    for (const node of ui.messages.children) {
      if (node.classList.contains("pending") && node.dataset.clientMessageId === clientMessageId) {
        return node;
      }
    }
    return null;
  }

  function showMessage(message) {
    if (!message || typeof message !== "object" || !message.id) return;
    const wasNearBottom = nearBottom();
    const node = messageNode(message);
    const existing = findMessage(message.id) ||
      (message.client_message_id ? findPending(message.client_message_id) : null);
    if (existing) existing.replaceWith(node); else ui.messages.append(node);
    keepScrolled(wasNearBottom);
  }

  function showPending(clientMessageId, text) {
    if (findPending(clientMessageId)) return;
    const wasNearBottom = nearBottom();
    const node = messageNode({
      id: "", kind: "human", sender: { name: state.shownName || state.name, is_bot: false }, text,
      client_message_id: clientMessageId, timestamp: new Date().toISOString(),
    });
    node.classList.add("pending");
    node.querySelector(".message-head").append(el("span", "muted sending", "sending…"));
    ui.messages.append(node);
    keepScrolled(wasNearBottom);
  }

  function failPending(clientMessageId, reason) {
    const node = findPending(clientMessageId);
    if (!node) return;
    node.classList.remove("pending");
    node.classList.add("failed");
    const sending = node.querySelector(".sending");
    if (sending) sending.remove();
    node.append(el("p", "error", `Not sent: ${reason}`));
  }

  // ---- the socket ----------------------------------------------------------------------

  function send(frame) {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return false;
    state.ws.send(JSON.stringify(frame));
    return true;
  }

  function messageFrame(clientMessageId, pending) {
    const frame = { type: "message", client_message_id: clientMessageId, text: pending.text };
    if (pending.replyTo) frame.reply_to = pending.replyTo;
    return frame;
  }

  // The Reply action: the next message replies to this one (a reply to a bot's question
  // answers it); shown above the composer until sent or cancelled.
  function replyTo(message) {
    state.replyTo = message;
    ui.replyBar.hidden = !message;
    ui.replyToText.textContent = message ? `Replying to ${message.sender}: ${message.snippet}` : "";
    if (message) ui.input.focus();
  }

  function snippetOf(node) {
    const body = node && node.querySelector(".message-body");
    const text = body ? body.textContent.replace(/\s+/g, " ").trim() : "";
    return text.length > 80 ? `${text.slice(0, 79)}…` : text;
  }

  function sendJoin() {
    const frame = { type: "join", room: state.room, name: state.name };
    if (state.clientId) frame.client_id = state.clientId;
    send(frame);
  }

  function flushPending() {
    if (!state.joined) return;
    for (const [clientMessageId, pending] of state.pending) send(messageFrame(clientMessageId, pending));
  }

  function connect() {
    const url = new URL(`${base}ws`, window.location.href);
    url.protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(url);
    state.ws = ws;
    showStatus();
    ws.addEventListener("open", () => {
      state.backoff = BACKOFF_START_MS;
      showStatus();
      if (state.wantJoin) sendJoin();
    });
    ws.addEventListener("message", (event) => {
      let frame;
      try { frame = JSON.parse(event.data); } catch { return; }
      if (frame && typeof frame === "object") handle(frame);
    });
    ws.addEventListener("close", () => {
      if (state.ws !== ws) return;
      state.ws = null;
      state.joined = false;
      const delay = state.backoff * (0.8 + Math.random() * 0.4);
      state.backoff = Math.min(state.backoff * 2, BACKOFF_MAX_MS);
      showStatus();
      window.setTimeout(connect, delay);
    });
  }

  const handlers = {
    hello(frame) {
      if (Number.isInteger(frame.max_message_length)) {
        state.maxLength = frame.max_message_length;
        ui.input.maxLength = frame.max_message_length;
      }
      if (Number.isInteger(frame.max_name_length)) ui.nameInput.maxLength = frame.max_name_length;
      ui.roomList.replaceChildren(
        ...(Array.isArray(frame.rooms) ? frame.rooms : []).map((room) => {
          const option = document.createElement("option");
          option.value = String(room);
          return option;
        }),
      );
      if (!ui.roomInput.value && frame.default_room) ui.roomInput.value = frame.default_room;
    },
    joined(frame) {
      state.joined = true;
      state.room = frame.room;
      state.shownName = frame.name; // the chosen name is kept for the next join
      if (typeof frame.client_id === "string" && frame.client_id) {
        state.clientId = frame.client_id;
        storage.set(KEYS.client, state.clientId);
      }
      storage.set(KEYS.name, state.name);
      storage.set(KEYS.room, state.room);
      showRoomInAddress(state.room);
      ui.joinError.textContent = "";
      ui.join.hidden = true;
      ui.chat.hidden = false;
      ui.requests.hidden = false;
      ui.changeRoom.hidden = false;
      ui.roomLabel.hidden = false;
      ui.roomLabel.textContent = `#${state.room}`;
      ui.hint.hidden = frame.bound !== false;
      ui.messages.replaceChildren();
      for (const message of Array.isArray(frame.history) ? frame.history : []) showMessage(message);
      for (const [clientMessageId, pending] of state.pending) {
        showPending(clientMessageId, pending.text);
      }
      renderRequests(frame.requests);
      ui.messages.scrollTop = ui.messages.scrollHeight;
      showStatus();
      flushPending();
      ui.input.focus();
    },
    message(frame) { showMessage(frame.message); },
    update(frame) { showMessage(frame.message); },
    ack(frame) {
      state.pending.delete(frame.client_message_id);
      // The ack carries the message as posted: it replaces the "sending…" copy.
      if (frame.message && typeof frame.message === "object") {
        showMessage(frame.message);
        showStatus();
        return;
      }
      const node = findPending(frame.client_message_id);
      if (node) {
        node.classList.remove("pending");
        node.dataset.id = frame.message_id;
        const sending = node.querySelector(".sending");
        if (sending) sending.remove();
      }
      showStatus();
    },
    requests(frame) {
      if (frame.room === state.room) renderRequests(frame.items);
    },
    error(frame) {
      const reason = listText(frame.message) || "something went wrong";
      if (frame.client_message_id && state.pending.has(frame.client_message_id)) {
        state.pending.delete(frame.client_message_id);
        failPending(frame.client_message_id, reason);
        showStatus();
      } else if (!state.joined) {
        state.wantJoin = false;
        ui.join.hidden = false;
        ui.joinError.textContent = reason;
      } else {
        ui.sendError.textContent = reason;
      }
    },
    pong() {},
    tap_reply(frame) { showTapReply(frame); },
  };

  function handle(frame) {
    const handler = Object.hasOwn(handlers, frame.type) ? handlers[frame.type] : null;
    if (handler) handler(frame);
  }

  // ---- the forms -----------------------------------------------------------------------

  ui.joinForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = ui.nameInput.value.trim();
    const room = ui.roomInput.value.trim();
    if (!name || !room) {
      ui.joinError.textContent = "Pick a name and a room.";
      return;
    }
    state.name = name;
    state.room = room;
    state.wantJoin = true;
    state.joined = false;
    ui.joinError.textContent = "";
    sendJoin();
  });

  ui.changeRoom.addEventListener("click", () => {
    ui.join.hidden = false;
    ui.roomInput.focus();
  });

  function submitMessage() {
    const text = ui.input.value;
    if (!text.trim()) return;
    if (text.length > state.maxLength) {
      ui.sendError.textContent = `Messages are at most ${state.maxLength} characters.`;
      return;
    }
    ui.sendError.textContent = "";
    ui.input.value = "";
    const clientMessageId = randomId("m-");
    const pending = { text, replyTo: state.replyTo ? state.replyTo.id : null };
    state.pending.set(clientMessageId, pending);
    replyTo(null);
    showPending(clientMessageId, text);
    if (state.joined) send(messageFrame(clientMessageId, pending));
    showStatus();
  }

  ui.replyCancel.addEventListener("click", () => replyTo(null));

  ui.sendForm.addEventListener("submit", (event) => {
    event.preventDefault();
    submitMessage();
  });

  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submitMessage();
    }
  });

  // ---- start ---------------------------------------------------------------------------

  ui.nameInput.value = state.name;
  ui.roomInput.value = state.room;
  if (state.name && state.room) state.wantJoin = true;
  connect();
})();
