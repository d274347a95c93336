// The LineUp page: the chat timeline, the app registry and the app switcher, over one
// WebSocket to the web host. Everything an agent or an app wrote arrives as data and goes
// into the DOM as text (textContent, createElement): never as HTML.
//
// What the user does is queued here first, each action with its own id (a message id the
// runtime keeps once): queued actions are shown as pending and sent while the socket is
// open; an action the web host has stored leaves the queue. After a reconnect the page
// says which position of the conversation it holds, and gets only what changed since.
"use strict";

(() => {
  const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  const TAGS = new Set(["p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
    "blockquote", "pre", "hr", "strong", "em", "code", "s", "br", "a"]);
  const SAFE_LINK = /^(https?:|mailto:)/i;
  const READY_MARK = "lineup:ready";
  const MACHINE_ID = /[0-9A-HJKMNP-TV-Z]{26}/; // a message id (ULID) inside a name
  const conversation = new URLSearchParams(location.search).get("conversation") || "main";
  const queueKey = `lineup.queue.${conversation}`;
  const $ = (id) => document.getElementById(id);

  const state = {
    socket: null,
    open: false,
    link: "starting",
    pos: 0,
    items: new Map(), // item id -> its data as last shown
    queue: load(queueKey), // [{client_id, frame, label}]
    sending: new Set(), // client ids sent on this socket and not yet answered
    retryMs: 250,
    everOpen: false,
    downSince: null,
    stopped: false,
    titles: new Map(), // app scope -> its title, from the registry
    asked: [], // registry operations asked for in this page, their outcome not seen yet
    latestOperation: null, // the last operation in the registry as last shown
    framed: null, // the app surface framed now: {title, instanceId, modes}
    placement: null, // how the page shows an instance's surface: {instanceId, inline}
    front: null, // the instance in front, from the registry's focus stack
    saves: new Map(), // artifact id -> how its Save went: {text, busy, failed, href, name}
    saving: new Map(), // client id of a save under way -> its artifact id
    chosen: new Map(), // card id -> how the file chosen for it went: {text, busy, failed, code}
    choosing: new Map(), // client id of a choice waiting for its upload -> {card, file}
  };
  // How long a socket may stay down before the page says the runtime has stopped.
  const GIVE_UP_MS = 20000;
  const page = randomId(16);

  function load(key) {
    try {
      const value = JSON.parse(sessionStorage.getItem(key) || "[]");
      return Array.isArray(value) ? value : [];
    } catch (_) {
      return [];
    }
  }

  function saveQueue() {
    sessionStorage.setItem(queueKey, JSON.stringify(state.queue));
  }

  function randomId(length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length));
    return Array.from(bytes, (b) => CROCKFORD[b % 32]).join("");
  }

  // A message id: 48 bits of milliseconds, 80 random bits, 26 characters of base32.
  function messageId() {
    const random = crypto.getRandomValues(new Uint8Array(10));
    let value = BigInt(Date.now());
    for (const byte of random) value = (value << 8n) | BigInt(byte);
    let text = "";
    for (let i = 25; i >= 0; i--) text += CROCKFORD[Number((value >> BigInt(5 * i)) & 31n)];
    return text;
  }

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  // -- connection ------------------------------------------------------------------------

  // What the header says of the connection: "reconnecting" only while a socket that was
  // open is down, "offline" only once the runtime said its AppServer link is down, and
  // "stopped" once the web host said the runtime stops, or the runtime has not answered for
  // a while (killed: nobody said goodbye; a runtime started again needs a new address).
  function showConnection() {
    const shown = $("connection");
    let mode = "online";
    let text = "online";
    if (state.stopped) {
      mode = "stopped";
      text = "the runtime has stopped: start it with `lineup run`, then `lineup open`";
    } else if (!state.open) {
      mode = state.everOpen ? "reconnecting" : "connecting";
      text = state.everOpen
        ? "reconnecting… what you type waits here and goes out when the page is back"
        : "connecting…";
    } else if (state.link === "offline_degraded" || state.link === "reconnecting") {
      mode = "offline";
      text = "offline: the runtime cannot reach the AppServer; your messages wait and go out when it is back";
    } else if (state.link !== "online") {
      mode = "connecting";
      text = "connecting…";
    }
    shown.dataset.state = mode;
    shown.textContent = text;
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/ws`);
    state.socket = socket;
    socket.addEventListener("open", () => {
      state.open = true;
      state.everOpen = true;
      state.downSince = null;
      state.retryMs = 250;
      state.sending.clear();
      const stillOpen = [...state.items.values()]
        .filter((item) => item.mine && item.state === "pending")
        .map((item) => item.id)
        .slice(-200);
      socket.send(JSON.stringify({ t: "hello", page, conversation, since: state.pos, open: stillOpen }));
      showConnection();
      flush();
    });
    socket.addEventListener("message", (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch (_) {
        return;
      }
      receive(frame);
    });
    socket.addEventListener("close", () => {
      if (state.socket !== socket) return;
      state.open = false;
      state.sending.clear();
      for (const artifactId of state.saving.values()) {
        setSave(artifactId, { text: "The connection was lost before the save finished: try again.", failed: true });
      }
      state.saving.clear();
      for (const { card } of state.choosing.values()) {
        setChosen(card, { text: "The connection was lost before the file was sent: choose it again.", failed: true });
      }
      state.choosing.clear();
      state.downSince = state.downSince || Date.now();
      state.stopped = state.stopped || Date.now() - state.downSince > GIVE_UP_MS;
      showConnection();
      renderQueue();
      if (state.stopped) return; // reloading the page (or a new address) starts again
      setTimeout(connect, state.retryMs);
      state.retryMs = Math.min(state.retryMs * 2, 3000);
    });
  }

  function receive(frame) {
    if (window.lineupRecorder.receive(frame)) return; // a recording's (recorder.js)
    if (frame.t === "view") applyView(frame);
    else if (frame.t === "registry") renderRegistry(frame);
    else if (frame.t === "status") {
      state.link = frame.link;
      showConnection();
    } else if (frame.t === "stored") {
      settle(frame.client_id);
      notice("");
    } else if (frame.t === "retry") {
      state.sending.delete(frame.client_id);
      setTimeout(flush, 1000);
    } else if (frame.t === "saved" || (frame.t === "refused" && state.saving.has(frame.client_id))) {
      saveAnswered(frame);
    } else if (frame.t === "upload" || (frame.t === "refused" && state.choosing.has(frame.client_id))) {
      upload(frame);
    } else if (frame.t === "download") {
      download(frame);
    } else if (frame.t === "refused") {
      if (frame.client_id) settle(frame.client_id);
      notice(frame.error);
    } else if (frame.t === "notification") {
      // An app's notification (notify.js shows it); the web host hears how it was shown.
      const socket = state.socket;
      const shown = (how) => {
        if (socket.readyState === WebSocket.OPEN) {
          socket.send(JSON.stringify({ t: "notified", id: frame.id, as: how }));
        }
      };
      document.dispatchEvent(new CustomEvent("lineup:notification", { detail: { notification: frame, shown } }));
    } else if (frame.t === "stopped") {
      state.stopped = true;
      showConnection();
    }
  }

  function notice(text) {
    $("notice").textContent = text || "";
    $("notice-box").hidden = !text;
  }

  // -- the queue of the user's actions -----------------------------------------------------

  function enqueue(frame, label) {
    const entry = { client_id: messageId(), frame, label };
    state.queue.push(entry);
    saveQueue();
    renderQueue();
    flush();
    return entry.client_id;
  }

  function flush() {
    if (!state.open) return;
    for (const entry of state.queue) {
      if (state.sending.has(entry.client_id)) continue;
      state.sending.add(entry.client_id);
      state.socket.send(JSON.stringify({ ...entry.frame, client_id: entry.client_id }));
    }
    renderQueue();
  }

  function settle(clientId) {
    const settled = state.queue.find((entry) => entry.client_id === clientId);
    state.sending.delete(clientId);
    state.queue = state.queue.filter((entry) => entry !== settled);
    saveQueue();
    renderQueue();
    if (settled && settled.frame.input) refreshAsk(settled.frame.input.interaction_id);
  }

  // The card of a question re-drawn (its controls off while an answer to it is queued).
  function refreshAsk(interactionId) {
    if (!interactionId) return;
    for (const item of state.items.values()) {
      if (item.ask && item.ask.interaction_id === interactionId) place(renderItem(item), item.order);
    }
  }

  function queuedAnswers() {
    return new Set(state.queue
      .filter((entry) => entry.frame.t === "act" && entry.frame.input.interaction_id)
      .map((entry) => entry.frame.input.interaction_id));
  }

  function renderQueue() {
    const list = $("queued");
    list.replaceChildren();
    for (const entry of state.queue) {
      if (!entry.label) continue;
      const item = el("li", null, "item mine pending-local");
      item.dataset.state = "pending";
      const head = el("div", null, "head");
      head.append(el("span", "you", "from"), el("span", state.sending.has(entry.client_id) ? "sending" : "pending", "state"));
      item.append(head, el("p", entry.label, "text"));
      list.append(item);
    }
  }

  // -- the chat timeline -------------------------------------------------------------------

  function applyView(frame) {
    if (frame.reset) {
      state.items.clear();
      // An inline surface's card stays: taking its frame out of the page would end it.
      window.lineupTimeline.clear("surface-card");
    }
    const page = $("chat-scroll");
    const nearBottom = page.scrollHeight - page.scrollTop - page.clientHeight < 80;
    for (const item of frame.items) {
      state.items.set(item.id, item);
      place(renderItem(item), item.order);
    }
    state.pos = frame.pos;
    renderTasks(frame.tasks || []);
    window.lineupVoice.view(frame, [...state.items.values()]); // the mode, speech (voice.js)
    // Follow the conversation while the user is at its end; leave them where they read.
    if ((nearBottom || frame.reset) && frame.items.length) page.scrollTop = page.scrollHeight;
    // Ready: the first view is drawn and the socket is open, so the page shows the
    // runtime's timeline and what the user does goes out at once (`lineup bench web`
    // times navigation start → this mark).
    if (!performance.getEntriesByName(READY_MARK).length) performance.mark(READY_MARK);
  }

  // Each item is one <li> with data-id, kept in timeline order (timeline.js): a changed
  // item replaces its own element, so nothing is ever shown twice.
  const place = (node, order) => window.lineupTimeline.place(node, order);

  // A state as a person reads it; a state that is the normal end of things (a message
  // delivered, a question answered) shows nothing. The raw state stays in data-state.
  const STATE_WORDS = {
    pending: "waiting to be sent",
    sending: "sending…",
    accepted: "",
    received: "",
    waiting: "waiting for your answer",
    answered: "",
    withdrawn: "",
    refused: "not sent",
    running: "working…",
    succeeded: "done",
    cancelled: "stopped",
    failed: "failed",
    rejected: "not delivered",
  };

  function stateWords(item) {
    if (item.code === "cancelled_by_user") return "stopped"; // the user's or the agent's stop
    const words = Object.prototype.hasOwnProperty.call(STATE_WORDS, item.state)
      ? STATE_WORDS[item.state] : item.state;
    return item.code && words ? `${words}: ${item.code.replaceAll("_", " ")}` : words;
  }

  // Who wrote an item, in words: the user, the agent (by its name), an app's tool call, the
  // runtime itself (a permission an app asks for) by the product's name.
  function sender(item) {
    if (item.mine) return "you";
    if (item.kind === "tool") return "tool";
    const [kind, name] = String(item.from).split(":", 2);
    if (kind === "runtime") return "LineUp";
    return kind === "agent" && name ? `${name} (agent)` : item.from;
  }

  function renderItem(item) {
    const node = el("li", null, `item kind-${item.kind} ${item.mine ? "mine" : "theirs"}`);
    node.dataset.id = item.id;
    node.dataset.order = String(item.order);
    node.dataset.state = item.state;
    const head = el("div", null, "head");
    head.append(el("span", sender(item), "from"));
    head.append(el("span", stateWords(item), "state"));
    node.append(head);
    if (item.md) node.append(renderMarkdown(item.md));
    else if (item.kind !== "interaction") node.append(el("p", item.mine ? item.text : localTimes(item.text), "text"));
    // A spoken message says so under what was made out of it (one not sent is named by its
    // recording already, and its sentence says why).
    if (item.kind === "message" && item.spoken && item.state !== "refused") {
      node.append(el("p", `Spoken · ${item.spoken.toLowerCase()}`, "detail spoken"));
    }
    if (item.kind === "message" && item.detail) node.append(el("p", item.detail, "detail"));
    if (item.kind === "tool") node.append(renderTool(item));
    if (item.ask) node.append(renderAsk(item));
    return node;
  }

  // The runtime writes times as UTC timestamps; a person reads them as the clock on the
  // wall: the local time, with the date only when it is not today.
  const TIMESTAMP = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z\b/g;

  function clock(stamp) {
    const at = new Date(stamp);
    if (typeof stamp !== "string" || Number.isNaN(at.getTime())) return "";
    const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    const today = at.toDateString() === new Date().toDateString();
    return today ? time : `${at.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}`;
  }

  function localTimes(text) {
    return String(text).replace(TIMESTAMP, (stamp) => clock(stamp) || stamp);
  }

  // A span as a person says it: "under a minute", "24 min", "1 h 5 min".
  function duration(ms) {
    if (ms < 60000) return "under a minute";
    const minutes = Math.round(ms / 60000);
    const hours = Math.floor(minutes / 60);
    const rest = minutes % 60;
    if (!hours) return `${rest} min`;
    return rest ? `${hours} h ${rest} min` : `${hours} h`;
  }

  // The line of a timer the runtime keeps for a tool call, from its moments (the terminal
  // chat words the same data the same way): "ends 12:27 · in 24 min", "paused at 12:03 ·
  // 24 min left", "ended 12:27". A running one's line is worded again as time passes.
  function deadlineWords(deadline, now) {
    if (deadline.state === "running") {
      const at = clock(deadline.ends_at);
      if (!at) return "";
      const left = Date.parse(deadline.ends_at) - now;
      return `ends ${at} · ${left > 0 ? `in ${duration(left)}` : "now"}`;
    }
    if (deadline.state === "paused") {
      const at = clock(deadline.paused_at);
      const remaining = deadline.remaining_ms;
      if (!at || typeof remaining !== "number") return "";
      const left = remaining < 60000 ? `${Math.round(remaining / 1000)} s` : duration(remaining);
      return `paused at ${at} · ${left} left`;
    }
    const ended = clock(deadline.ended_at);
    if (!ended) return "";
    return deadline.state === "finished" ? `ended ${ended}` : `stopped ${ended}`;
  }

  // How often the running timers' lines are worded again: a minute's rounding moves every
  // 60 s, so no line is more than this behind the clock.
  const DEADLINE_TICK_MS = 15000;

  function tickDeadlines() {
    const now = Date.now();
    for (const line of document.querySelectorAll("#timeline .deadline[data-state='running']")) {
      const item = state.items.get(line.dataset.call);
      const words = item && item.deadline ? deadlineWords(item.deadline, now) : "";
      if (words && line.textContent !== words) line.textContent = words;
    }
  }

  function renderMarkdown(nodes) {
    const box = el("div", null, "md");
    for (const node of nodes) box.append(markdownNode(node));
    return box;
  }

  // What the agent wrote, its UTC timestamps on the local clock (not inside code: that is
  // quoted as written).
  function markdownNode(node, literal = false) {
    if (typeof node === "string") return document.createTextNode(literal ? node : localTimes(node));
    if (!Array.isArray(node)) return document.createTextNode("");
    const [tag, children, href] = node;
    const fragment = document.createDocumentFragment();
    const element = document.createElement(TAGS.has(tag) ? tag : "span");
    const quoted = literal || tag === "code" || tag === "pre";
    for (const child of Array.isArray(children) ? children : []) element.append(markdownNode(child, quoted));
    fragment.append(element);
    if (tag === "a") {
      if (typeof href === "string" && SAFE_LINK.test(href)) {
        element.href = href;
        element.rel = "noopener noreferrer";
        element.target = "_blank";
      }
      fragment.append(el("span", ` (${href})`, "address"));
    }
    return fragment;
  }

  function renderTool(item) {
    const box = el("div", null, "tool");
    const ended = ["succeeded", "failed"].includes(item.state);
    if (typeof item.percent === "number" && !ended) {
      const bar = el("progress");
      bar.max = 100;
      bar.value = item.percent;
      bar.setAttribute("aria-label", `${item.text}: ${item.percent} %`);
      box.append(bar);
    }
    const timer = item.deadline ? deadlineWords(item.deadline, Date.now()) : "";
    if (timer) {
      const line = el("p", timer, "detail deadline");
      line.dataset.call = item.id;
      line.dataset.state = item.deadline.state;
      box.append(line);
    } else if (item.detail) {
      box.append(el("p", localTimes(item.detail), "detail"));
    }
    if (item.artifact) box.append(renderArtifact(item.artifact));
    if (!ended) {
      const stop = el("button", "Stop");
      stop.type = "button";
      stop.addEventListener("click", () =>
        enqueue({ t: "act", app: "chat", input: { kind: "stop", call_id: item.id } }, null));
      box.append(stop);
    }
    return box;
  }

  // -- artifacts: a picture's preview, and Save ---------------------------------------------
  // The web host answers a preview only for a picture its bytes show to be one, and only
  // in the conversation whose tool call handed it over; anything else is no picture here.
  const PREVIEWED = new Set(["image/png", "image/jpeg", "image/webp", "image/gif"]);

  function renderArtifact(artifact) {
    const box = el("div", null, "artifact");
    box.dataset.artifact = artifact.id;
    if (PREVIEWED.has(artifact.media_type)) {
      const picture = el("img", null, "thumb");
      picture.alt = artifact.title;
      picture.addEventListener("error", () => picture.remove());
      picture.src = `/artifact/${encodeURIComponent(conversation)}/${encodeURIComponent(artifact.id)}`;
      box.append(picture);
    }
    box.append(el("p", artifact.label, "artifact-label"));
    const row = el("div", null, "save-row");
    const button = el("button", "Save");
    button.type = "button";
    button.setAttribute("aria-label", `Save ${artifact.title}`);
    button.addEventListener("click", () => saveArtifact(artifact.id));
    row.append(button, el("span", null, "save-status"));
    row.lastChild.setAttribute("role", "status");
    box.append(row);
    showSave(box, state.saves.get(artifact.id));
    return box;
  }

  // The user's Save: the runtime saves it into its downloads, then the page hands the
  // browser the same file (an <a download> to the web host's copy of that save).
  function saveArtifact(artifactId) {
    if (!state.open) {
      setSave(artifactId, { text: "The page is not connected: try again once it is back.", failed: true });
      return;
    }
    const clientId = messageId();
    state.saving.set(clientId, artifactId);
    setSave(artifactId, { text: "Saving…", busy: true });
    state.socket.send(JSON.stringify({ t: "save", client_id: clientId, artifact_id: artifactId }));
  }

  function saveAnswered(frame) {
    const artifactId = state.saving.get(frame.client_id);
    state.saving.delete(frame.client_id);
    if (!artifactId) return;
    if (frame.t !== "saved") {
      setSave(artifactId, { text: frame.error, failed: true });
      return;
    }
    setSave(artifactId, { text: `Saved as “${frame.name}”.`, href: frame.href, name: frame.name });
    const link = document.querySelector(`[data-artifact="${CSS.escape(artifactId)}"] .save-row a`);
    if (link) link.click();
  }

  function setSave(artifactId, save) {
    state.saves.set(artifactId, save);
    for (const box of document.querySelectorAll(`[data-artifact="${CSS.escape(artifactId)}"]`)) {
      showSave(box, save);
    }
  }

  function showSave(box, save) {
    const row = box.querySelector(".save-row");
    const status = row.querySelector(".save-status");
    row.querySelector("button").disabled = Boolean(save && save.busy);
    row.classList.toggle("failed", Boolean(save && save.failed));
    status.textContent = save ? save.text : "";
    const old = row.querySelector("a");
    if (old) old.remove();
    if (save && save.href) {
      const link = el("a", "Download again");
      link.href = save.href;
      link.download = save.name;
      row.append(link);
    }
  }

  // -- a file the user chooses for an app (a card that asks for one) -------------------------
  // The page asks its socket for a one-time address bound to the card, then sends the file
  // there; the runtime decides from the bytes what it is and whether the app takes it.

  function renderChooser(ask) {
    const box = el("div", null, "chooser");
    box.dataset.chooser = ask.interaction_id;
    const id = `file-${ask.interaction_id}`;
    const label = el("label", "Choose a file");
    label.htmlFor = id;
    const input = el("input");
    input.type = "file";
    input.id = id;
    if (ask.chooser.accept.length) input.accept = ask.chooser.accept.join(",");
    const takes = ask.chooser.takes.charAt(0).toUpperCase() + ask.chooser.takes.slice(1);
    const hint = el("p", `${takes}, up to ${ask.chooser.limit}.`, "hint");
    hint.id = `${id}-hint`;
    input.setAttribute("aria-describedby", hint.id);
    input.addEventListener("change", () => chooseFile(ask, input.files[0]));
    const status = el("p", null, "choose-status");
    status.setAttribute("role", "status");
    box.append(label, input, hint, status);
    showChosen(box, state.chosen.get(ask.interaction_id));
    return box;
  }

  function chooseFile(ask, file) {
    if (!file) return;
    const card = ask.interaction_id;
    if (file.size > ask.chooser.max_bytes) {
      setChosen(card, { text: `“${file.name}” is larger than the ${ask.chooser.limit} this app takes: choose a smaller one.`, failed: true, code: "too_large" });
      return;
    }
    if (!state.open) {
      setChosen(card, { text: "The page is not connected: choose the file again once it is back.", failed: true });
      return;
    }
    const clientId = messageId();
    state.choosing.set(clientId, { card, file });
    setChosen(card, { text: `Sending “${file.name}”…`, busy: true });
    state.socket.send(JSON.stringify({ t: "choose", client_id: clientId, interaction_id: card }));
  }

  function upload(frame) {
    const choice = state.choosing.get(frame.client_id);
    state.choosing.delete(frame.client_id);
    if (!choice) return;
    const { card, file } = choice;
    if (frame.t !== "upload") {
      setChosen(card, { text: frame.error, failed: true });
      return;
    }
    const headers = { "x-file-name": encodeURIComponent(file.name), "content-type": file.type || "application/octet-stream" };
    fetch(frame.href, { method: "POST", body: file, headers, credentials: "same-origin" })
      .then(async (response) => {
        const answer = await response.json().catch(() => ({}));
        if (!response.ok) {
          setChosen(card, { text: answer.error || "The runtime did not take the file: choose it again.", failed: true, code: answer.code });
        } else if (answer.status === "completed") {
          setChosen(card, { text: `Sent “${file.name}” to the app.` });
        } else {
          setChosen(card, { text: "The app could not be given the file.", failed: true, code: answer.code || answer.status });
        }
      })
      .catch(() => setChosen(card, { text: "The connection was lost while the file was sent: choose it again.", failed: true }));
  }

  function setChosen(card, chosen) {
    state.chosen.set(card, chosen);
    for (const box of document.querySelectorAll(`[data-chooser="${CSS.escape(card)}"]`)) showChosen(box, chosen);
  }

  function showChosen(box, chosen) {
    const status = box.querySelector(".choose-status");
    status.textContent = chosen ? chosen.text : "";
    if (chosen && chosen.code) status.dataset.code = chosen.code;
    else delete status.dataset.code;
    box.classList.toggle("failed", Boolean(chosen && chosen.failed));
    box.querySelector("input").disabled = Boolean(chosen && chosen.busy);
  }

  // A file an app saved, handed to this page by the runtime: the browser downloads it.
  function download(frame) {
    const link = el("a");
    link.href = frame.href;
    link.download = frame.name;
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
  }

  function answer(ask, fields, label) {
    enqueue({ t: "act", app: "chat", input: { kind: "answer", interaction_id: ask.interaction_id, ...fields } }, label);
    refreshAsk(ask.interaction_id);
  }

  function renderAsk(item) {
    const ask = item.ask;
    const card = el("div", null, `card card-${ask.kind}${ask.origin === "runtime" ? " consent" : ""}`);
    card.append(el("p", localTimes(item.text), "prompt"));
    const waiting = queuedAnswers().has(ask.interaction_id);
    if (!ask.open) {
      // A question the agent withdrew says so, with its reason: it takes no answer now.
      const withdrawn = ask.reason ? `No longer asked: ${ask.reason}` : "No longer asked";
      const closed = ask.answer !== undefined ? `You answered: ${ask.answer}` : ask.withdrawn ? withdrawn : "closed";
      card.append(ask.recorder ? window.lineupRecorder.controls(ask) : el("p", closed, "closed"));
      return card;
    }
    if (ask.chooser) card.append(renderChooser(ask));
    const actions = el("div", null, "actions");
    if (ask.kind === "choice" && ask.multiple) {
      const boxes = [];
      for (const option of ask.options) {
        const label = el("label");
        const box = el("input");
        box.type = "checkbox";
        box.value = option.id;
        label.append(box, document.createTextNode(` ${option.label}`));
        boxes.push(box);
        actions.append(label);
      }
      const send = el("button", "Answer");
      send.type = "button";
      send.addEventListener("click", () => {
        const picked = boxes.filter((b) => b.checked).map((b) => b.value);
        if (picked.length) answer(ask, { selected: picked }, `chose ${picked.join(", ")}`);
      });
      actions.append(send);
    } else if (ask.kind === "choice") {
      // A card asking to record: its yes is the page's own recording (recorder.js).
      if (ask.recorder) actions.append(window.lineupRecorder.controls(ask));
      for (const option of ask.options) {
        if (ask.recorder && option.id === "once") continue;
        const button = el("button", option.label);
        button.type = "button";
        button.addEventListener("click", () => answer(ask, { selected: [option.id] }, `chose ${option.id}`));
        actions.append(button);
      }
      if (ask.origin === "runtime") {
        const dismiss = el("button", "Decide later", "quiet");
        dismiss.type = "button";
        dismiss.addEventListener("click", () => enqueue(
          { t: "act", app: "chat", input: { kind: "dismiss", interaction_id: ask.interaction_id } }, null));
        actions.append(dismiss);
      }
    } else if (ask.kind === "confirm") {
      for (const [confirmed, text] of [[true, ask.confirm_label || "Yes"], [false, ask.cancel_label || "No"]]) {
        const button = el("button", text);
        button.type = "button";
        button.addEventListener("click", () => answer(ask, { confirmed }, confirmed ? "confirmed" : "declined"));
        actions.append(button);
      }
    } else {
      const form = el("form", null, "answer-form");
      const field = el("input");
      field.type = "text";
      field.maxLength = 16000;
      field.placeholder = ask.placeholder || "Your answer";
      field.setAttribute("aria-label", item.text);
      const send = el("button", "Answer");
      send.type = "submit";
      form.append(field, send);
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        if (field.value.trim()) answer(ask, { text: field.value }, field.value);
      });
      actions.append(form);
    }
    if (waiting) {
      for (const control of actions.querySelectorAll("button, input")) control.disabled = true;
      card.append(el("p", "your answer is on its way", "closed"));
    }
    card.append(actions);
    return card;
  }

  function renderTasks(tasks) {
    const list = $("task-list");
    list.replaceChildren();
    for (const task of tasks) {
      const row = el("li", null, `task task-${task.status}`);
      // A task is named by its title; one whose title is a machine-made id (a message id
      // in it) by its label alone: ids are not shown where words can be.
      const named = task.title && !MACHINE_ID.test(task.title) ? task.title : "";
      const label = task.label && task.label !== named ? task.label : "";
      const words = [named, label].filter(Boolean).join(" — ") || "a task";
      const finished = ["succeeded", "failed", "done", "cancelled"].includes(task.status);
      row.append(el("span", words, "title"), el("span", stateWords({ state: task.status }), "state"));
      if (typeof task.percent === "number" && !finished) {
        const bar = el("progress");
        bar.max = 100;
        bar.value = task.percent;
        bar.setAttribute("aria-label", `${task.title}: ${task.percent} %`);
        row.append(bar);
      }
      list.append(row);
    }
    $("tasks").hidden = tasks.length === 0;
  }

  // -- the app registry and the switcher ---------------------------------------------------

  function renderRegistry(registry) {
    // Titles are kept past an app's removal: its last operations still name it.
    for (const app of registry.apps) state.titles.set(app.app_scope, app.title);
    $("apps-default").textContent = registry.default_app
      ? `The runtime opens ${registry.default_app} at start.`
      : "No default app is set: the runtime opens the chat at start.";
    const list = $("apps-list");
    list.replaceChildren();
    for (const app of registry.apps) {
      const row = el("li", null, "app");
      row.dataset.app = app.app_scope;
      const about = el("div", null, "about");
      about.append(el("strong", app.title), el("span", ` ${app.app_scope} ${app.installed_version || ""}`, "muted"));
      const core = app.kind === "core";
      const facts = [core ? "comes with LineUp" : "installed", app.enabled ? "enabled" : "disabled"];
      if (!["installed", "", null, undefined].includes(app.install_state)) facts.push(app.install_state);
      if (registry.default_app === app.app_scope) facts.push("opens at start");
      about.append(el("p", facts.join(" · "), "facts"));
      const actions = el("div", null, "actions");
      const toggle = app.enabled ? "disable" : "enable";
      const open = el("button", "Open");
      open.type = "button";
      open.disabled = !app.enabled;
      open.addEventListener("click", () => enqueue(
        { t: "intent", intent: "open_app", app_scope: app.app_scope }, null));
      actions.append(open);
      // What a record cannot take is not offered, and the row says why: a core app comes
      // with the runtime and stays; the chat, where the user can always get back to, is
      // never disabled either.
      const recovery = app.app_scope === "chat";
      if (core) {
        row.title = recovery
          ? `${app.title} comes with LineUp and is always there to come back to: it cannot be disabled or removed`
          : `${app.title} comes with LineUp: it can be disabled, not removed`;
      }
      if (!recovery) {
        actions.append(registryButton(toggle === "enable" ? "Enable" : "Disable",
          { kind: toggle, app_scope: app.app_scope }));
      }
      actions.append(registryButton("Set as default", { kind: "set_default", app_scope: app.app_scope },
        registry.default_app === app.app_scope || !app.enabled));
      if (!core) {
        const remove = el("button", "Remove…", "danger");
        remove.type = "button";
        remove.addEventListener("click", () => confirmRemove(app));
        actions.append(remove);
      }
      row.append(about, actions);
      list.append(row);
    }
    const operations = $("operations");
    operations.replaceChildren();
    for (const op of [...registry.operations].reverse()) {
      const outcome = op.code ? `${op.state}: ${op.detail || op.code} (${op.code})` : op.state;
      operations.append(el("li", `${op.kind.replace("_", " ")} ${op.app_scope}: ${outcome}`));
    }
    renderSwitcher(registry.focus);
    tellOutcome(registry.operations);
  }

  function registryButton(text, input, disabled) {
    const button = el("button", text);
    button.type = "button";
    button.disabled = Boolean(disabled);
    button.addEventListener("click", () => askRegistry(input));
    return button;
  }

  // A registry operation the user asked for here, until its outcome is in: a refusal is
  // said where the user is (the toast), not only in the list of last operations.
  function askRegistry(input) {
    state.asked.push({ kind: input.kind, app_scope: input.app_scope, at: Date.now() });
    enqueue({ t: "act", app: "app-registry", input }, null);
  }

  function tellOutcome(operations) {
    const latest = operations.length ? JSON.stringify(operations[operations.length - 1]) : "";
    const before = state.latestOperation;
    state.latestOperation = latest;
    if (before === null || latest === before) return; // the first look, or nothing new
    state.asked = state.asked.filter((asked) => Date.now() - asked.at < 60000);
    const op = operations[operations.length - 1];
    const mine = state.asked.findIndex((a) => a.kind === op.kind && a.app_scope === op.app_scope);
    if (mine < 0) return;
    state.asked.splice(mine, 1);
    if (op.code) {
      const title = state.titles.get(op.app_scope) || op.app_scope;
      notice(`Could not ${op.kind.replace("_", " ")} ${title}: ${op.detail || op.code.replaceAll("_", " ")}`);
    }
  }

  function confirmRemove(app) {
    const dialog = $("confirm-remove");
    $("confirm-remove-text").textContent =
      `${app.title} (${app.app_scope}) is closed, and its bundle and private data are deleted.`;
    const yes = $("confirm-remove-yes");
    const no = $("confirm-remove-no");
    const close = () => {
      yes.onclick = null;
      no.onclick = null;
      dialog.close();
    };
    yes.onclick = () => {
      close();
      askRegistry({ kind: "remove", app_scope: app.app_scope, confirmed: true });
    };
    no.onclick = close;
    dialog.showModal();
  }

  // The switcher: the focus stack, the one in front first and marked; a click focuses an
  // app, its close button closes it (the chat stays: it is where the conversation is).
  function renderSwitcher(stack) {
    const list = $("focus-stack");
    list.replaceChildren();
    const front = [...stack].reverse(); // the registry keeps the foreground instance last
    state.front = front.length ? front[0].instance_id : null;
    layoutStage();
    front.forEach((instance, index) => {
      const row = el("li", null, index === 0 ? "front" : "");
      const name = appName(instance, front);
      const button = el("button", name, "focus");
      button.type = "button";
      if (index === 0) {
        button.setAttribute("aria-current", "true");
        button.setAttribute("aria-label", `${name}, in front`);
      }
      button.addEventListener("click", () => {
        showView("main");
        if (index === 0) return;
        enqueue({ t: "intent", intent: "focus_app", app_scope: instance.app_scope }, null);
      });
      row.append(button);
      if (instance.app_scope !== "chat") {
        const close = el("button", "×", "close quiet");
        close.type = "button";
        close.setAttribute("aria-label", `Close ${name}`);
        close.addEventListener("click", () => enqueue(
          { t: "intent", intent: "close_app", app_scope: instance.app_scope }, null));
        row.append(close);
      }
      list.append(row);
    });
    if (!front.length) list.append(el("li", "nothing open yet", "muted"));
  }

  // An instance as people name it: its app's title; where the app has more than one
  // instance open, a number after it, in one order that holds (an instance's own
  // name is an id, never shown).
  function appName(instance, open) {
    const title = state.titles.get(instance.app_scope) || instance.app_scope;
    const same = open.filter((other) => other.app_scope === instance.app_scope)
      .map((other) => String(other.instance_id)).sort();
    return same.length > 1 ? `${title} ${same.indexOf(String(instance.instance_id)) + 1}` : title;
  }

  // -- the page's own controls -------------------------------------------------------------

  function showView(name) {
    for (const [tab, view] of [["tab-chat", "main"], ["tab-apps", "apps-view"]]) {
      const selected = view === name;
      $(tab).setAttribute("aria-selected", String(selected));
      $(view).hidden = !selected;
    }
  }

  // -- the stage and the dock --------------------------------------------------------------
  // An installed app in front owns the stage; the chat is docked beside it (a phone shows
  // one of them at a time). Whether the chat is shown beside the app, and how wide, is the
  // user's choice, kept in this browser.
  const phone = matchMedia("(max-width: 720px)");
  const DOCK_KEY = "lineup.dock";
  const WIDTH_KEY = "lineup.dock.width";

  // The stage shows the framed app while its instance is in front; with the chat (or an
  // app without a surface) in front, the chat has the main area.
  // An app that may float (its entrypoint declares `pip`) stays in view, small, while
  // another is in front: the host's choice of its display mode. One shown inline is a card
  // in the conversation, in front or not, and the chat keeps the main area.
  function layoutStage() {
    const framed = state.framed;
    const inline = Boolean(framed) && state.placement.inline;
    const front = Boolean(framed) && !inline && framed.instanceId === state.front;
    const floats = Boolean(framed) && !inline && !front && framed.modes.includes("pip");
    onStage(front ? framed.title : null, floats ? framed : null, inline ? framed : null);
  }

  // A surface newly framed is shown inline when its entrypoint's first mode is `inline`,
  // else on the stage; the same instance framed again (a reload, a restarted web host)
  // keeps how it was shown.
  function placeFramed(framed) {
    state.framed = framed;
    if (framed && (!state.placement || state.placement.instanceId !== framed.instanceId)) {
      state.placement = { instanceId: framed.instanceId, inline: framed.modes[0] === "inline" };
    }
    layoutStage();
  }

  // An inline surface's card: the app's title, a button to the stage when the app may be
  // shown there, and the slot its frame goes in (surfaces.js moves it). The card is placed
  // after what the conversation holds when it first opens, and keeps that place; what is
  // said later comes below it. Whether it is new.
  function showCard(framed) {
    const old = $("surface-card");
    if (old && old.dataset.instance === framed.instanceId) return false;
    if (old) old.remove();
    const last = window.lineupTimeline.last();
    if (state.placement.order === undefined) {
      state.placement.order = last ? Number(last.dataset.order) + 0.5 : 0;
    }
    const card = el("li", null, "item surface-card");
    card.id = "surface-card";
    card.dataset.instance = framed.instanceId;
    card.dataset.order = String(state.placement.order);
    const head = el("div", null, "head");
    head.append(el("span", framed.title, "from"));
    if (framed.modes.includes("stage")) {
      const expand = el("button", "Expand", "quiet");
      expand.type = "button";
      expand.setAttribute("aria-label", `Expand ${framed.title} onto the stage`);
      expand.addEventListener("click", () => {
        onDisplayRequest("stage", () => {}, true);
        if (!$("stage-inline").hidden) $("stage-inline").focus(); // the card and its button went
      });
      head.append(expand);
    }
    const slot = el("div", null, "surface-card-slot");
    slot.id = "surface-card-slot";
    card.append(head, slot);
    window.lineupTimeline.place(card, state.placement.order);
    return true;
  }

  // How the framed app is shown now, as its surface hears it.
  function displayMode() {
    const main = $("main");
    if (main.dataset.inline === "on") return "inline";
    if (main.dataset.pip === "on") return "pip";
    if (main.dataset.stage !== "app") return "hidden";
    return document.body.dataset.display === "fullscreen" ? "fullscreen" : "stage";
  }

  let toldMode = null;
  function tellMode() {
    const mode = displayMode();
    if (mode === toldMode) return;
    toldMode = mode;
    document.dispatchEvent(new CustomEvent("lineup:display-mode", { detail: { mode } }));
  }

  // A surface asks to be shown another way (surfaces.js let through only a mode it
  // declares, at its pace), or the user does with the page's controls; the page decides
  // and answers with the mode in force. The front is the user's: a surface not in front
  // (afloat, inline, or hidden behind another app) is answered with the mode in force when
  // it asks for the stage or the whole window, and one hidden changes nothing at all; the
  // user brings it forward (the float's "Bring to front", the card's "Expand", the
  // switcher). A surface in front may leave it: asking `pip` brings the chat to the front.
  function onDisplayRequest(mode, answer, byUser = false) {
    const framed = state.framed;
    if (!framed) {
      answer(displayMode());
      return;
    }
    const inFront = framed.instanceId === state.front;
    const forward = mode === "stage" || mode === "fullscreen";
    if (!byUser && ((forward && !inFront) || displayMode() === "hidden")) {
      answer(displayMode());
      return;
    }
    if (mode === "inline") {
      document.body.dataset.display = "";
      state.placement.inline = true;
    } else if (mode === "fullscreen" && inFront) {
      state.placement.inline = false;
      document.body.dataset.display = "fullscreen";
    } else if (mode === "stage") {
      document.body.dataset.display = "";
      state.placement.inline = false;
      if (!inFront) {
        const scope = String(framed.instanceId).split(":")[0];
        enqueue({ t: "intent", intent: "focus_app", app_scope: scope }, null);
        answer("stage");  // it comes to the front as the registry moves it
        return;
      }
    } else if (mode === "pip") {
      document.body.dataset.display = "";
      state.placement.inline = false;
      if (inFront) {
        enqueue({ t: "intent", intent: "focus_app", app_scope: "chat" }, null);
        answer("pip");  // it floats as the registry brings the chat to the front
        return;
      }
    }
    layoutStage();
    answer(displayMode());
  }

  function onStage(title, floating = null, inline = null) {
    const main = $("main");
    if (!title) document.body.dataset.display = ""; // full screen ends with its app in front
    const app = Boolean(title);
    const was = main.dataset.stage === "app" && $("stage-title").textContent === title;
    main.dataset.stage = app ? "app" : "chat";
    main.dataset.pip = floating ? "on" : "";
    main.dataset.inline = inline ? "on" : "";
    const newCard = Boolean(inline) && showCard(inline);
    $("stage").hidden = !app && !floating;
    $("stage-front").hidden = !floating;
    if (floating) $("stage-title").textContent = floating.title;
    $("dock-handle").hidden = !app;
    if (!floating) $("stage-title").textContent = title || "";
    if (app && !was) { // an app newly in front: the user's last choice of the dock
      main.dataset.dock = phone.matches ? "hidden" : localStorage.getItem(DOCK_KEY) || "shown";
      showView("main");
    }
    labelDock();
    describeHandle();
    $("stage-leave").hidden = document.body.dataset.display !== "fullscreen";
    // The app in front goes back into the conversation when its entrypoint declares `inline`.
    const backInline = app && !floating && state.framed.modes.includes("inline");
    $("stage-inline").hidden = !backInline;
    if (backInline) $("stage-inline").title = `Put ${title} back in the conversation, as a card`;
    tellMode(); // the frame leaves the card first (surfaces.js), then the card goes
    if (!inline && $("surface-card")) $("surface-card").remove();
    if (newCard) $("surface-card").scrollIntoView({ block: "nearest" });
  }

  function setDock(shown) {
    $("main").dataset.dock = shown ? "shown" : "hidden";
    if (!phone.matches) localStorage.setItem(DOCK_KEY, shown ? "shown" : "hidden");
    labelDock();
    if (shown) $("composer-text").focus();
  }

  function labelDock() {
    const shown = $("main").dataset.dock === "shown";
    const title = $("stage-title").textContent;
    $("dock-toggle").textContent = phone.matches ? "Chat" : shown ? "Hide the chat" : "Show the chat";
    $("dock-toggle").setAttribute("aria-expanded", String(shown));
    $("stage-back").textContent = phone.matches ? `Back to ${title}` : "Hide";
  }

  const DOCK_MIN = 256;

  function dockWidth(px) {
    const main = $("main").getBoundingClientRect().width;
    const width = Math.round(Math.min(Math.max(px, DOCK_MIN), main * 0.6));
    $("main").style.setProperty("--dock", `${width}px`);
    localStorage.setItem(WIDTH_KEY, String(width));
    describeHandle();
  }

  // The handle says where it is, as a separator a keyboard moves must.
  function describeHandle() {
    const handle = $("dock-handle");
    const main = $("main").getBoundingClientRect().width;
    handle.setAttribute("aria-valuemin", String(DOCK_MIN));
    handle.setAttribute("aria-valuemax", String(Math.max(DOCK_MIN, Math.round(main * 0.6))));
    handle.setAttribute("aria-valuenow", String(Math.round($("chat-view").getBoundingClientRect().width)));
  }

  function resizable() {
    const handle = $("dock-handle");
    const saved = Number(localStorage.getItem(WIDTH_KEY));
    if (saved) $("main").style.setProperty("--dock", `${saved}px`);
    handle.addEventListener("pointerdown", (down) => {
      handle.setPointerCapture(down.pointerId);
      const right = $("main").getBoundingClientRect().right;
      const move = (event) => dockWidth(right - event.clientX);
      handle.addEventListener("pointermove", move);
      handle.addEventListener("pointerup", () => handle.removeEventListener("pointermove", move), { once: true });
    });
    handle.addEventListener("keydown", (event) => {
      const now = $("chat-view").getBoundingClientRect().width;
      if (event.key === "ArrowLeft") dockWidth(now + 32);
      else if (event.key === "ArrowRight") dockWidth(now - 32);
      else return;
      event.preventDefault();
    });
  }

  function send(event) {
    event.preventDefault();
    const box = $("composer-text");
    const text = box.value;
    if (!text.trim()) return;
    enqueue({ t: "act", app: "chat", input: { kind: "send", text } }, text);
    box.value = "";
    box.focus();
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("conversation-name").textContent = conversation;
    document.title = `${conversation} — LineUp`;
    $("tab-chat").addEventListener("click", () => {
      showView("main");
      if ($("main").dataset.stage === "app") setDock(true);
    });
    $("tab-apps").addEventListener("click", () => showView("apps-view"));
    $("dock-toggle").addEventListener("click", () => setDock($("main").dataset.dock !== "shown"));
    $("stage-back").addEventListener("click", () => setDock(false));
    $("stage-front").addEventListener("click", () => {
      const scope = String(state.framed && state.framed.instanceId).split(":")[0];
      enqueue({ t: "intent", intent: "focus_app", app_scope: scope }, null);
    });
    document.addEventListener("lineup:display", (event) => {
      onDisplayRequest(event.detail.mode, event.detail.answer);
    });
    $("stage-leave").addEventListener("click", () => onDisplayRequest("stage", () => {}, true));
    $("stage-inline").addEventListener("click", () => {
      onDisplayRequest("inline", () => {}, true);
      const expand = document.querySelector("#surface-card .head button");
      (expand || $("composer-text")).focus(); // the stage and its button went
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && document.body.dataset.display === "fullscreen") {
        onDisplayRequest("stage", () => {}, true);
      }
    });
    document.addEventListener("lineup:stage", (event) => placeFramed(event.detail));
    phone.addEventListener("change", () => {
      $("main").dataset.stage = "chat"; // laid out anew for the new size
      layoutStage();
    });
    resizable();
    onStage(null);
    $("composer").addEventListener("submit", send);
    $("notice-close").addEventListener("click", () => notice(""));
    $("composer-text").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) send(event);
    });
    window.lineupRecorder.attach({
      send: (frame) => state.socket.send(JSON.stringify(frame)),
      messageId,
      isOpen: () => state.open,
    });
    window.lineupVoice.attach({ enqueue, conversation });
    renderQueue();
    showConnection();
    connect();
    setInterval(tickDeadlines, DEADLINE_TICK_MS);
    document.addEventListener("visibilitychange", tickDeadlines);
  });
})();
