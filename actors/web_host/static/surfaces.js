// The page's side of installed apps' surfaces: it frames the surface of the open app in
// front, in <iframe sandbox="allow-scripts"> (an opaque origin: no cookie, no storage, no
// access to this page), and checks every message the frame posts before it does anything
// with it. A message is relayed to the web host, which checks it again, only when
//   - it comes from that frame's window (`event.source`), as text of at most 64 KiB,
//   - it is a JSON object of a bridge type with exactly that type's fields,
//   - it names the instance the frame shows,
//   - an event is declared by the app's manifest and its payload fits the event's schema,
//   - a capability is declared by the manifest,
//   - an answer to a tool call names a call handed to this frame and not answered yet
//     (of a `surface_bridge` tool of its app), with an object output or an app's code,
//   - a display mode asked for is declared, a size is a whole number of pixels in bounds.
// Anything else is dropped and counted by reason, reported to the web host's statistics.
// A display request is the page's to decide, at a person's pace (`DISPLAY_PACE`).
// What to frame is the web host's word: it sends the surface in front opened, unasked, when
// the socket opens and as soon as the registry changes; the page frames each surface it is
// sent opened.
(function () {
  "use strict";
  const MAX_BYTES = 64 * 1024;
  const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;
  const FIELDS = {
    ready: [],
    event: ["name", "payload"],
    "session.get": [],
    "session.subscribe": [],
    "session.replace": ["data", "expected_revision"],
    capability: ["capability", "purpose", "input"],
    "tool.result": ["call_id", "output"],
    "tool.error": ["call_id", "code", "message"],
    "tool.progress": ["call_id", "stage", "percent", "message"],
    "display.request": ["mode"],
    size: ["height", "viewport"],
  };
  const REQUIRED = {
    event: ["name", "payload"], "session.replace": ["data", "expected_revision"], capability: ["capability", "purpose"],
    "tool.result": ["call_id", "output"], "tool.error": ["call_id", "code"], "tool.progress": ["call_id"],
    "display.request": ["mode"], size: ["height", "viewport"],
  };
  // The codes an app may end a call with; the others are the runtime's to give.
  const APP_TOOL_CODES = ["cancelled_by_user", "permission_denied", "invalid_arguments",
    "foreground_required", "operation_expired", "handler_failed"];
  const slot = document.getElementById("surface-slot");
  const MAX_HEIGHT = 100000; // the most a surface may say its document needs, in CSS pixels
  const counters = { relayed: 0, refused_by_host: 0, dropped: {}, retired: 0 };
  // A display request moves the user's window, and one may ask the runtime to change the
  // app in front: the page decides at most DISPLAY_PACE of one surface's requests in any
  // second (a person clicks a few times a second; a surface's own layout does not ask at
  // every frame). The others are answered `rate_limited` with the mode in force, change
  // nothing and send nothing, and are counted with the drops (`rate_limited`).
  const DISPLAY_PACE = 4;
  const DISPLAY_WINDOW_MS = 1000;
  const displayDecided = new Map(); // instance id -> when its last requests were decided (ms)
  // The windows of frames this page framed and took down: what they posted before they went
  // may still arrive. It is theirs, not forged, and goes nowhere: counted apart from drops.
  const retiredWindows = new WeakSet();

  function retire(frame) {
    if (frame.contentWindow) retiredWindows.add(frame.contentWindow);
    frame.remove();
    stage(null);
  }

  // The surface hears how it is shown whenever that changes (app.js says so), and when it
  // is ready; its frame goes where that mode shows it.
  let shownMode = "hidden";
  function tellMode() {
    if (current && current.frame.contentWindow) {
      current.frame.contentWindow.postMessage(JSON.stringify({ v: 1, type: "display", mode: shownMode }), "*");
    }
  }
  document.addEventListener("lineup:display-mode", (event) => {
    shownMode = event.detail.mode;
    if (current) current.fit = null; // all the new place allows, until the surface reports
    place();
    tellMode();
  });

  // The page's layout follows what is framed: an app's surface takes the stage while its
  // instance is in front (app.js decides).
  function stage(opened) {
    const detail = opened
      ? { title: opened.title, instanceId: opened.instance_id, modes: opened.declared.modes || ["stage"] }
      : null;
    document.dispatchEvent(new CustomEvent("lineup:stage", { detail }));
  }
  let unreported = {};
  let socket = null;
  let current = null; // {token, instanceId, declared, frame, calls: ids handed, not answered}

  // -- the checks ---------------------------------------------------------------------------

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (isObject(value)) {
      return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
    }
    return JSON.stringify(value);
  }

  function hasType(value, type) {
    switch (type) {
      case "object": return isObject(value);
      case "array": return Array.isArray(value);
      case "string": return typeof value === "string";
      case "integer": return Number.isInteger(value);
      case "number": return typeof value === "number" && Number.isFinite(value);
      case "boolean": return typeof value === "boolean";
      case "null": return value === null;
      default: return false;
    }
  }

  // The keywords a surface event's schema may use (the manifest refuses any other), checked
  // as JSON Schema defines them, as the web host checks them too.
  function fits(schema, value) {
    if (schema === true) return true;
    if (!isObject(schema)) return false;
    if (schema.type !== undefined) {
      const types = Array.isArray(schema.type) ? schema.type : [schema.type];
      if (!types.some((type) => hasType(value, type))) return false;
    }
    if (schema.enum !== undefined && !schema.enum.some((item) => canonical(item) === canonical(value))) return false;
    if (schema.const !== undefined && canonical(schema.const) !== canonical(value)) return false;
    if (typeof value === "number") {
      if (schema.minimum !== undefined && value < schema.minimum) return false;
      if (schema.maximum !== undefined && value > schema.maximum) return false;
    }
    if (typeof value === "string") {
      const length = Array.from(value).length;
      if (schema.minLength !== undefined && length < schema.minLength) return false;
      if (schema.maxLength !== undefined && length > schema.maxLength) return false;
    }
    if (Array.isArray(value)) {
      if (schema.minItems !== undefined && value.length < schema.minItems) return false;
      if (schema.maxItems !== undefined && value.length > schema.maxItems) return false;
      if (schema.items !== undefined && !value.every((item) => fits(schema.items, item))) return false;
    }
    if (isObject(value)) {
      const keys = Object.keys(value);
      const properties = schema.properties || {};
      if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) return false;
      if ((schema.required || []).some((key) => !Object.prototype.hasOwnProperty.call(value, key))) return false;
      for (const key of keys) {
        if (Object.prototype.hasOwnProperty.call(properties, key)) {
          if (!fits(properties[key], value[key])) return false;
        } else if (schema.additionalProperties === false) {
          return false;
        } else if (isObject(schema.additionalProperties) && !fits(schema.additionalProperties, value[key])) {
          return false;
        }
      }
    }
    return true;
  }

  // Why the message must be dropped, or null when it may be relayed.
  function refusal(event) {
    if (!current || event.source !== current.frame.contentWindow) return "source";
    const text = event.data;
    if (typeof text !== "string") return "not_text";
    if (text.length > MAX_BYTES || new TextEncoder().encode(text).length > MAX_BYTES) return "too_large";
    let message;
    try { message = JSON.parse(text); } catch (error) { return "invalid_json"; }
    if (!isObject(message)) return "invalid_json";
    if (!Object.prototype.hasOwnProperty.call(FIELDS, message.type)) return "unknown_type";
    const allowed = new Set(["v", "id", "instance_id", "type"].concat(FIELDS[message.type]));
    if (message.v !== 1 || typeof message.id !== "string" || !REQUEST_ID.test(message.id)) return "invalid_payload";
    if (Object.keys(message).some((key) => !allowed.has(key))) return "invalid_payload";
    if ((REQUIRED[message.type] || []).some((key) => !(key in message))) return "invalid_payload";
    if (message.instance_id !== current.instanceId) return "scope_mismatch";
    const declared = current.declared;
    if (message.type === "event") {
      if (!Object.prototype.hasOwnProperty.call(declared.events, message.name)) return "undeclared_event";
      if (!isObject(message.payload) || !fits(declared.events[message.name], message.payload)) return "invalid_payload";
    } else if (message.type === "session.replace") {
      if (!isObject(message.data) || !Number.isInteger(message.expected_revision) || message.expected_revision < 0) return "invalid_payload";
    } else if (message.type === "capability") {
      if (!declared.capabilities.includes(message.capability)) return "undeclared_capability";
      if (typeof message.purpose !== "string" || message.purpose.length < 1 || message.purpose.length > 200) return "invalid_payload";
    } else if (message.type === "display.request") {
      if (typeof message.mode !== "string") return "invalid_payload";
      // Back to the stage from the whole window is the person's way out (the bridge asks it
      // for Escape pressed inside the frame), whatever the app declared.
      const wayOut = message.mode === "stage" && document.body.dataset.display === "fullscreen";
      if (!wayOut && !(declared.modes || ["stage"]).includes(message.mode)) return "undeclared_mode";
    } else if (message.type === "size") {
      const pixels = (n) => Number.isInteger(n) && n >= 0 && n <= MAX_HEIGHT;
      if (!pixels(message.height) || !pixels(message.viewport)) return "invalid_payload";
    } else if (message.type.startsWith("tool.")) {
      if (!current.calls.has(message.call_id)) return "unknown_call";
      if (message.type === "tool.result" && !isObject(message.output)) return "invalid_payload";
      if (message.type === "tool.error" && !APP_TOOL_CODES.includes(message.code)) return "invalid_payload";
    }
    return null;
  }

  // Whether a display request of the surface showing `instanceId` may be decided now: fewer
  // than DISPLAY_PACE of its requests were decided in the last second.
  function displayPaced(instanceId) {
    const now = performance.now();
    const recent = (displayDecided.get(instanceId) || []).filter((at) => now - at < DISPLAY_WINDOW_MS);
    const paced = recent.length < DISPLAY_PACE;
    if (paced) recent.push(now);
    displayDecided.set(instanceId, recent);
    return paced;
  }

  // -- counters -----------------------------------------------------------------------------
  // Kept for `lineup debug` (reported to the web host) and in the page's DOM for its tests,
  // never shown: they are the machinery's, not the user's.

  let reportTimer = null;
  function drop(reason) {
    counters.dropped[reason] = (counters.dropped[reason] || 0) + 1;
    unreported[reason] = (unreported[reason] || 0) + 1;
    render();
    if (reportTimer === null) {
      reportTimer = setTimeout(() => {
        reportTimer = null;
        if (send({ t: "dropped", counts: unreported })) unreported = {};
      }, 200);
    }
  }

  function render() {
    let debug = document.getElementById("surface-debug");
    if (!debug) {
      debug = document.createElement("p");
      debug.id = "surface-debug";
      debug.className = "surface-debug";
      debug.hidden = true;
      slot.appendChild(debug);
    }
    debug.dataset.counters = JSON.stringify(counters);
  }

  // -- the frame's place and size -------------------------------------------------------------
  // One frame at a time, on the stage's slot or, inline, in its card in the conversation
  // (app.js keeps the card). It is moved between them with moveBefore, which keeps its
  // document; a browser without it loads the surface again in its new place, where it finds
  // what the runtime keeps for it (its state, session data and open calls).

  function place() {
    if (!current || !current.frame.isConnected) return; // a retired frame stays retired
    const card = document.getElementById("surface-card-slot");
    const home = shownMode === "inline" && card ? card : slot;
    const frame = current.frame;
    if (frame.parentElement !== home) {
      try {
        home.moveBefore(frame, home.firstChild);
      } catch (error) { // no moveBefore here: the surface is loaded again
        retiredWindows.add(frame.contentWindow);
        home.insertBefore(frame, home.firstChild);
      }
    }
    fit();
  }

  // The frame is as tall as the surface's document, within the place's bounds: the stage's
  // slot, or an inline card's cap (a bounded part of the conversation's height). The
  // surface reports its document's height and its frame's (bridge.js). A document shorter
  // than its frame gets its own height (`fit`, a number); one as tall as its frame or taller
  // gets all the place allows ("fill"), and reports again from there: one that fills
  // whatever it is given stays so, one that only overflowed is then shorter and shrinks to
  // its height. A document exactly as tall as the frame it was given keeps it. Before any
  // report (a new frame, a new place) the frame gets all there is. Picture-in-picture is a
  // fixed small box the surface fits itself to. Reports are applied once per animation
  // frame: a flood of them costs one layout a frame.
  function judged(fit, height, viewport) {
    if (height < viewport - 1) return height;
    if (typeof fit === "number" && Math.abs(fit - height) <= 1 && Math.abs(viewport - fit) <= 1) return fit;
    return "fill";
  }

  const MIN_HEIGHT = 48;
  const INLINE_MAX = 560;
  let fitting = 0;

  function fitSoon() {
    if (!fitting) fitting = requestAnimationFrame(() => { fitting = 0; fit(); });
  }

  function inlineMax() {
    const chat = document.getElementById("chat-scroll");
    return Math.max(MIN_HEIGHT, Math.min(INLINE_MAX, Math.round(chat.clientHeight * 0.7)));
  }

  function fit() {
    if (!current) return;
    const frame = current.frame;
    const inline = frame.parentElement !== slot;
    const most = inline ? inlineMax() : slot.clientHeight;
    const fills = shownMode === "pip" || typeof current.fit !== "number";
    frame.dataset.fit = fills ? "fill" : "content";
    const height = fills ? most : Math.min(most, Math.max(MIN_HEIGHT, current.fit));
    // On the stage the slot's flex layout fills it; inline the card takes the frame's height.
    frame.style.height = inline || !fills ? height + "px" : "";
  }

  // The places' bounds change with the window, and with the chat's pane (shown again after
  // the Apps view, its message box resized).
  addEventListener("resize", fitSoon);
  if (slot) new ResizeObserver(fitSoon).observe(document.getElementById("chat-scroll"));

  // -- the frame ------------------------------------------------------------------------------

  function show(opened) {
    if (current) retire(current.frame);
    const frame = document.createElement("iframe");
    // Scripts only: no same origin (so no cookie, storage or page), no popups, no top
    // navigation, no forms. The web host's policy for the document says the same.
    frame.setAttribute("sandbox", "allow-scripts");
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.title = opened.title;
    frame.className = "surface";
    frame.src = opened.src;
    current = {
      token: opened.token, instanceId: opened.instance_id, declared: opened.declared, frame: frame,
      calls: new Set(), fit: null,
    };
    slot.insertBefore(frame, slot.firstChild);
    stage(opened); // app.js lays the page out for it, and says how it is shown
    place();
    render();
  }

  addEventListener("message", (event) => {
    if (event.source && retiredWindows.has(event.source)) {
      counters.retired += 1;
      render();
      return;
    }
    const reason = refusal(event);
    if (reason !== null) {
      drop(reason);
      return;
    }
    const message = JSON.parse(event.data);
    if (message.type === "display.request") {
      // The page's to decide, not the runtime's: asked of the layout (app.js), answered
      // with the mode in force, nothing relayed.
      const frame = current.frame;
      const reply = (fields) => frame.contentWindow && frame.contentWindow.postMessage(
        JSON.stringify(Object.assign({ v: 1, type: "reply", id: message.id }, fields)), "*");
      if (!displayPaced(current.instanceId)) {
        drop("rate_limited");
        reply({ ok: false, code: "rate_limited", mode: shownMode,
          detail: `at most ${DISPLAY_PACE} display requests a second: ask again later` });
        return;
      }
      const answer = (mode) => reply({ ok: true, result: { mode } });
      document.dispatchEvent(new CustomEvent("lineup:display", { detail: { mode: message.mode, answer } }));
      return;
    }
    if (message.type === "size") {
      // The page's alone too. A report measured in a frame of another height than the
      // frame's now came before a move or a resize: the surface reports again after it.
      if (Math.abs(message.viewport - current.frame.clientHeight) <= 1) {
        current.fit = judged(current.fit, message.height, message.viewport);
        fitSoon();
      }
      return;
    }
    if (message.type === "ready") tellMode();
    if (message.type === "tool.result" || message.type === "tool.error") {
      current.calls.delete(message.call_id);  // one answer per call: a second is dropped
    }
    counters.relayed += 1;
    render();
    send({ t: "bridge", token: current.token, text: event.data });
  });

  // -- the web host ---------------------------------------------------------------------------

  function send(frame) {
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    socket.send(JSON.stringify(frame));
    return true;
  }

  function onFrame(frame) {
    if (frame.t === "surfaces") {
      if (current && !frame.items.some((item) => item.instance_id === current.instanceId)) {
        retire(current.frame);  // its instance is gone, and its token with it
        current = null;
      }
    } else if (frame.t === "opened") {
      if (current) send({ t: "close", token: current.token });
      show(frame);
    } else if (frame.t === "to_surface") {
      if (current && frame.token === current.token) {
        const message = frame.message;
        if (message.type === "tool_call") {
          if (!current.declared.tools.includes(message.method)) return;
          current.calls.add(message.call_id);
        }
        current.frame.contentWindow.postMessage(JSON.stringify(message), "*");
      }
    } else if (frame.t === "refused") {
      counters.refused_by_host += 1;
      render();
    }
  }

  function connect() {
    socket = new WebSocket("ws://" + location.host + "/surface-socket");
    socket.onopen = () => {
      if (current) retire(current.frame);  // its token died with the last socket
      current = null;
    };
    socket.onmessage = (event) => {
      let frame;
      try { frame = JSON.parse(event.data); } catch (error) { return; }
      if (isObject(frame)) onFrame(frame);
    };
    socket.onclose = () => { setTimeout(connect, 1000); };
  }

  if (slot) connect();
})();
