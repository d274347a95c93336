// The Surface Bridge SDK: an installed app's surface talks to the runtime through this
// script only. The surface runs in a sandboxed frame with an opaque origin and no network;
// the one way out is a message to the host page, which checks it, and the web host, which
// checks it again before the app's process sees it (docs/protocol.md, "The surface bridge").
//
// <script src="/surface-bridge.js"></script> gives the surface `window.lineup`:
//   lineup.instanceId                 the instance this surface shows
//   lineup.ready                      a promise: the host answered, `lineup.state()` is set
//   lineup.state() / onState(fn)      the app's state for it, patched by the app's process
//   lineup.emit(name, payload)        a declared event, its payload held to its schema
//   lineup.session.get()              {data, revision} of the instance's session data
//   lineup.session.replace(data, rev) {revision}; a stale rev fails "revision_conflict"
//   lineup.session.subscribe(fn)      fn(snapshot) now, then each later revision in order
//   lineup.capabilities.request(capability, purpose, input)  {status, output, code?}
//   lineup.onToolCall(method, handler)  answers the agent's calls of a `surface_bridge`
//     tool of the app: handler(arguments, call) with call = {callId, instanceId, method,
//     progress({stage, percent, message})}; what it returns (an object) is the output,
//     what it throws ends the call with the error's `code` (one an app may use, or
//     handler_failed). A call offered again (a reload, a restarted web host) keeps its
//     call id: a call id already taken in this frame is not run twice.
//   lineup.display.request(mode)      asks to be shown another way ("inline", "stage",
//     "fullscreen", "pip"; one its entrypoint declares): {mode}, the one the host put in force.
//     The host decides a few a second; one more rejects with code "rate_limited" and the
//     error's `mode` is the one in force
//   lineup.display.mode() / onChange(fn)  how it is shown now, and each change of it
// Escape pressed inside the frame while it has the whole window asks for the stage, as the
// page's own Escape does.
// The bridge tells the page the document's height, and the frame's it was measured in, whenever
// either changes; the page sizes the frame to it, within what the mode in force allows.
// A refused request rejects with an Error whose `code` is the runtime's code.
(function () {
  "use strict";
  const instanceId = decodeURIComponent(location.hash.slice(1));
  const pending = new Map();
  const stateListeners = [];
  const subscriptions = []; // {listener, last, ready, early}
  const toolHandlers = new Map(); // method -> handler
  const callsTaken = new Set(); // call ids run in this frame: each runs once
  const callsWaiting = []; // offered before their method's handler was set
  const APP_TOOL_CODES = ["cancelled_by_user", "permission_denied", "invalid_arguments",
    "foreground_required", "operation_expired", "handler_failed"];
  const displayListeners = [];
  let displayMode = "stage";
  // The most a size report may say; the page refuses a report of more.
  const MAX_HEIGHT = 100000;
  let toldSize = null;
  let counter = 0;
  let state = {};
  let markReady;
  const ready = new Promise((resolve) => { markReady = resolve; });

  function post(message) {
    // The frame's origin is opaque, and so is the page's to it: "*" is the only target
    // that reaches the parent. What it carries is this surface's own request.
    parent.postMessage(JSON.stringify(message), "*");
  }

  function request(type, fields) {
    counter += 1;
    const id = "r" + counter;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      post(Object.assign({ v: 1, id: id, instance_id: instanceId, type: type }, fields));
    });
  }

  // Each listener sees revisions in order, each once: its first snapshot, then every later
  // one; what is pushed before its first snapshot arrives waits for it.
  function offer(subscription, snapshot) {
    if (typeof snapshot.revision !== "number" || snapshot.revision <= subscription.last) return;
    if (snapshot.revision > subscription.last + 1) {
      // A revision was missed: take the whole snapshot again rather than skip it.
      api.session.get().then((fresh) => deliver(subscription, fresh.revision >= snapshot.revision ? fresh : snapshot));
      return;
    }
    deliver(subscription, snapshot);
  }

  function deliver(subscription, snapshot) {
    if (snapshot.revision <= subscription.last && subscription.ready) return;
    subscription.last = snapshot.revision;
    subscription.listener({ data: snapshot.data, revision: snapshot.revision });
  }

  function onSession(snapshot) {
    for (const subscription of subscriptions) {
      if (subscription.ready) offer(subscription, snapshot);
      else subscription.early.push(snapshot);
    }
  }

  function runCall(offer) {
    callsTaken.add(offer.call_id);
    const callId = offer.call_id;
    const call = Object.freeze({
      callId: callId,
      instanceId: instanceId,
      method: offer.method,
      progress(fields) {
        return request("tool.progress", Object.assign({}, fields || {}, { call_id: callId }));
      },
    });
    Promise.resolve()
      .then(() => toolHandlers.get(offer.method)(offer.arguments || {}, call))
      .then(
        (output) => (output !== null && typeof output === "object" && !Array.isArray(output)
          ? request("tool.result", { call_id: callId, output: output })
          : request("tool.error", { call_id: callId, code: "handler_failed", message: "the output is not an object" })),
        (error) => {
          const code = error && APP_TOOL_CODES.includes(error.code) ? error.code : "handler_failed";
          return request("tool.error", { call_id: callId, code: code, message: String((error && error.message) || "").slice(0, 4096) });
        })
      .catch(() => {});  // a refused answer: the runtime ends the call its own way
  }

  function onToolCallOffered(offer) {
    if (typeof offer.call_id !== "string" || callsTaken.has(offer.call_id)) return;
    if (toolHandlers.has(offer.method)) runCall(offer);
    else if (!callsWaiting.some((waiting) => waiting.call_id === offer.call_id)) callsWaiting.push(offer);
  }

  addEventListener("message", (event) => {
    if (event.source !== parent || typeof event.data !== "string") return;
    let message;
    try { message = JSON.parse(event.data); } catch (error) { return; }
    if (!message || message.v !== 1) return;
    if (message.type === "reply" && pending.has(message.id)) {
      const waiting = pending.get(message.id);
      pending.delete(message.id);
      if (message.ok) {
        waiting.resolve(message.result);
      } else {
        const error = new Error(message.code + ": " + (message.detail || ""));
        error.code = message.code;
        if (typeof message.mode === "string") error.mode = message.mode;
        waiting.reject(error);
      }
    } else if (message.type === "init" || message.type === "state") {
      state = message.state || {};
      if (message.type === "init") markReady();
      for (const listener of stateListeners.slice()) listener(state);
    } else if (message.type === "session") {
      onSession(message);
    } else if (message.type === "tool_call") {
      onToolCallOffered(message);
    } else if (message.type === "display" && typeof message.mode === "string") {
      displayMode = message.mode;
      for (const listener of displayListeners.slice()) listener(displayMode);
    }
  });

  const api = {
    instanceId: instanceId,
    ready: ready,
    state: () => state,
    onState(listener) { stateListeners.push(listener); },
    emit(name, payload) { return request("event", { name: name, payload: payload || {} }); },
    session: {
      get() { return request("session.get", {}); },
      replace(data, expectedRevision) {
        return request("session.replace", { data: data, expected_revision: expectedRevision });
      },
      subscribe(listener) {
        const subscription = { listener: listener, last: -1, ready: false, early: [] };
        subscriptions.push(subscription);
        return request("session.subscribe", {}).then((first) => {
          deliver(subscription, first);
          subscription.ready = true;
          subscription.early.sort((a, b) => a.revision - b.revision).forEach((s) => offer(subscription, s));
          subscription.early = [];
        });
      },
    },
    capabilities: {
      request(capability, purpose, input) {
        const fields = { capability: capability, purpose: purpose };
        if (input !== undefined) fields.input = input;
        return request("capability", fields);
      },
    },
    display: {
      request(mode) { return request("display.request", { mode: mode }); },
      mode: () => displayMode,
      onChange(listener) { displayListeners.push(listener); },
    },
    onToolCall(method, handler) {
      toolHandlers.set(method, handler);
      for (const offer of callsWaiting.splice(0)) {
        if (offer.method === method) runCall(offer);
        else callsWaiting.push(offer);
      }
    },
  };
  // The document's height as its content needs it: the root's box, or the body's content
  // when it overflows a body of fixed height. A document that fills its frame (a body of
  // 100vh) measures the frame's own height: the page then gives it all the frame may have.
  function contentHeight() {
    let height = document.documentElement.getBoundingClientRect().height;
    const body = document.body;
    if (body) {
      const style = getComputedStyle(body);
      height = Math.max(height, body.scrollHeight + parseFloat(style.marginTop) + parseFloat(style.marginBottom));
    }
    return Math.min(MAX_HEIGHT, Math.ceil(height || 0));
  }

  // Told again when only the frame's height changed: the page's decision depends on both.
  // Told from the document's load on: before it, its styles may not be applied yet.
  function tellSize() {
    if (document.readyState !== "complete") return;
    const height = contentHeight();
    const key = height + ":" + innerHeight;
    if (key === toldSize) return;
    toldSize = key;
    post({ v: 1, id: "size", instance_id: instanceId, type: "size", height: height, viewport: innerHeight });
  }

  const sizes = new ResizeObserver(tellSize);
  sizes.observe(document.documentElement);
  if (document.body) sizes.observe(document.body);
  else addEventListener("DOMContentLoaded", () => sizes.observe(document.body));
  addEventListener("resize", tellSize);
  addEventListener("load", tellSize);

  // Escape gives the whole window back, as it does on the page: a key pressed inside the
  // frame never reaches the page, so the bridge asks for the stage on the person's behalf.
  addEventListener("keydown", (event) => {
    if (event.key === "Escape" && displayMode === "fullscreen") {
      request("display.request", { mode: "stage" }).catch(() => {});
    }
  }, true);

  Object.freeze(api.session);
  Object.freeze(api.capabilities);
  Object.freeze(api.display);
  window.lineup = Object.freeze(api);
  post({ v: 1, id: "ready", instance_id: instanceId, type: "ready" });
})();
