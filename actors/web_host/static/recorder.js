// The microphone in the page: a recording the user starts on an app's card, sees while it
// runs and stops, sent to the runtime as the app's recording (`_uploads.py`).
//
// "Start recording" first opens the browser's microphone (the browser asks the person
// once), then asks the socket to record (`record`): the runtime's yes comes back as
// `recording` {href, max_ms, max_bytes}. From then on the page records with
// `MediaRecorder` (Opus in WebM at 12 kb/s: two minutes fit the runtime's 192 KiB) and
// shows the recording bar: who it records for, the time elapsed of the most allowed, and
// Stop. It stops at Stop, at `max_ms`, a chunk short of `max_bytes`, or when the runtime
// says so (`record_stop`: the app left the front, or its time ran out), then POSTs what it
// recorded to `href`. The runtime reads the bytes and decides; the card says how it went.
//
// The chat's push-to-talk (voice.js, its audio mode) records the same way, with no card:
// `talk` opens the microphone and asks the socket (`talk`); the answer, `recording`, names
// the runtime's key for it (`request_id`, what `record_stop` names), and the bar says it
// records the user's message. Its caller hears how it went: sent, or why not.
(() => {
  "use strict";

  const BITS_PER_S = 12000;
  const CHUNK_MS = 1000;
  const SIZE_MARGIN = 8192; // one more chunk must fit under the runtime's size
  const TYPES = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm"];
  const SENT_MARK = "lineup:recording-sent";

  let link = null; // what app.js lends: send(frame), messageId(), isOpen()
  let live = null; // the recording under way: one at a time
  const asked = new Map(); // client id of a `record` or `talk` waiting for its answer -> {card, stream, app, told?}
  const said = new Map(); // card id -> {text, failed}

  const $ = (id) => document.getElementById(id);

  function attach(lent) {
    link = lent;
    $("recording-stop").addEventListener("click", () => finish("user"));
  }

  function clock(ms) {
    const seconds = Math.max(0, Math.floor(ms / 1000));
    return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
  }

  // The card's controls: "Start recording" and what became of it; once the card is
  // closed, only what became of it.
  function controls(ask) {
    const box = document.createElement("div");
    box.className = "recorder";
    box.dataset.recorder = ask.interaction_id;
    const status = document.createElement("p");
    status.className = "record-status";
    status.setAttribute("role", "status");
    if (!ask.open) {
      status.dataset.closed = ask.recording ? "You let it record." : "Not recorded.";
      box.append(status);
      show(box, ask.interaction_id);
      return box;
    }
    const start = document.createElement("button");
    start.type = "button";
    start.className = "record-start";
    start.textContent = "Start recording";
    const most = clock(ask.recorder.max_seconds * 1000);
    start.setAttribute("aria-describedby", `hint-${ask.interaction_id}`);
    start.addEventListener("click", () => begin(ask));
    const hint = document.createElement("p");
    hint.className = "hint";
    hint.id = `hint-${ask.interaction_id}`;
    hint.textContent = `Up to ${most}. You see the recording and can stop it at any time.`;
    box.append(start, hint, status);
    show(box, ask.interaction_id);
    return box;
  }

  function show(box, card) {
    const status = said.get(card);
    const line = box.querySelector(".record-status");
    line.textContent = status ? status.text : line.dataset.closed || "";
    box.classList.toggle("failed", Boolean(status && status.failed));
    const start = box.querySelector(".record-start");
    if (start) start.disabled = Boolean(live) || [...asked.values()].some((entry) => entry.card === card);
  }

  function say(card, text, failed = false) {
    said.set(card, { text, failed });
    for (const box of document.querySelectorAll("[data-recorder]")) show(box, box.dataset.recorder);
  }

  async function begin(ask) {
    const card = ask.interaction_id;
    if (live || !link) return;
    say(card, "Opening the microphone…");
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (_) {
      say(card, "The browser did not open the microphone: allow it for this page, then press Start recording again.", true);
      return;
    }
    if (!link.isOpen()) {
      stream.getTracks().forEach((track) => track.stop());
      say(card, "The page is not connected: press Start recording again once it is back.", true);
      return;
    }
    const clientId = link.messageId();
    asked.set(clientId, { card, stream, app: ask.recorder.app || "the app" });
    say(card, "Starting…");
    link.send({ t: "record", client_id: clientId, interaction_id: card });
  }

  // A frame of the socket that is about a recording: true when it was.
  function receive(frame) {
    const entry = asked.get(frame.client_id);
    if (entry && (frame.t === "recording" || frame.t === "refused")) {
      asked.delete(frame.client_id);
      if (frame.t === "refused") {
        entry.stream.getTracks().forEach((track) => track.stop());
        if (entry.told) entry.told({ failed: frame.error });
        else say(entry.card, frame.error, true);
      } else {
        if (entry.told) entry.card = frame.request_id; // what `record_stop` names
        record(entry, frame);
      }
      return true;
    }
    if (frame.t === "record_stop") {
      if (live && live.card === frame.interaction_id) finish("");
      return true;
    }
    return false;
  }

  function record(entry, frame) {
    const type = TYPES.find((candidate) => MediaRecorder.isTypeSupported(candidate)) || "";
    const recorder = new MediaRecorder(entry.stream, { mimeType: type, audioBitsPerSecond: BITS_PER_S });
    live = { ...entry, recorder, href: frame.href, maxMs: frame.max_ms, maxBytes: frame.max_bytes,
      chunks: [], size: 0, started: performance.now(), stopping: false, why: "", timer: null };
    recorder.addEventListener("dataavailable", (event) => {
      if (!live || live.recorder !== recorder || !event.data.size) return;
      live.chunks.push(event.data);
      live.size += event.data.size;
      if (live.size > live.maxBytes - SIZE_MARGIN) finish("limit");
    });
    recorder.addEventListener("stop", () => send(recorder));
    recorder.start(CHUNK_MS);
    live.timer = setInterval(tick, 250);
    say(entry.card, "Recording…");
    $("recording-bar").hidden = false;
    document.body.dataset.recording = "on";
    tick();
    // A card's recording moves the focus to Stop; the talk button stays where it is, and
    // now stops.
    if (entry.told) entry.told({ recording: true });
    else $("recording-stop").focus();
  }

  function tick() {
    if (!live || live.stopping) return;
    const elapsed = performance.now() - live.started;
    const what = live.told ? "Recording your message" : `Recording for ${live.app}`;
    $("recording-text").textContent = `${what}: ${clock(elapsed)} of ${clock(live.maxMs)}`;
    if (elapsed >= live.maxMs) finish("limit");
  }

  function finish(why) {
    if (!live || live.stopping) return;
    live.stopping = true;
    live.why = why;
    clearInterval(live.timer);
    $("recording-text").textContent = "Sending the recording…";
    $("recording-stop").disabled = true;
    live.recorder.stop();
    live.stream.getTracks().forEach((track) => track.stop());
  }

  function send(recorder) {
    const done = live;
    if (!done || done.recorder !== recorder) return;
    const blob = new Blob(done.chunks, { type: recorder.mimeType || "audio/webm" });
    const headers = { "content-type": blob.type };
    if (done.why) headers["x-stopped"] = done.why;
    const seconds = Math.round((performance.now() - done.started) / 1000);
    performance.mark(SENT_MARK); // `lineup bench web` times the page's part up to here
    fetch(done.href, { method: "POST", body: blob, headers, credentials: "same-origin" })
      .then(async (response) => {
        const answer = await response.json().catch(() => ({}));
        const taken = response.ok && answer.status === "completed";
        if (done.told) {
          done.told(taken ? { sent: seconds } : { failed: answer.error || talkNotTaken(answer.status) });
        } else if (taken) {
          say(done.card, `Recorded ${seconds} s and handed it to ${done.app}.`);
        } else {
          say(done.card, answer.error || "The runtime did not take the recording.", true);
        }
      })
      .catch(() => {
        const lost = "The connection was lost while the recording was sent.";
        if (done.told) done.told({ failed: lost });
        else say(done.card, lost, true);
      })
      .finally(() => {
        live = null;
        $("recording-bar").hidden = true;
        $("recording-stop").disabled = false;
        delete document.body.dataset.recording;
        for (const box of document.querySelectorAll("[data-recorder]")) show(box, box.dataset.recorder);
      });
  }

  // A push-to-talk recording that was not taken, in words.
  function talkNotTaken(status) {
    return status === "cancelled_by_user"
      ? "Nothing was recorded: hold the button while you speak."
      : "The runtime did not take the recording: try again.";
  }

  // The chat's push-to-talk: `told` hears how it goes ({failed}, then nothing more; or
  // {recording: true}, then {sent: seconds} or {failed}). False when one is under way.
  async function talk(told) {
    if (live || asked.size || !link) return false;
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true }).catch(() => null);
    if (!stream) {
      told({ failed: "The browser did not open the microphone: allow it for this page, then talk again." });
      return true;
    }
    if (!link.isOpen()) {
      stream.getTracks().forEach((track) => track.stop());
      told({ failed: "The page is not connected: talk again once it is back." });
      return true;
    }
    const clientId = link.messageId();
    asked.set(clientId, { card: null, stream, app: "the chat", told });
    link.send({ t: "talk", client_id: clientId });
    return true;
  }

  // The user's stop of the recording under way (the talk button let go, or pressed again).
  function stop() {
    finish("user");
  }

  const recording = () => Boolean(live);

  window.lineupRecorder = { attach, controls, receive, talk, stop, recording };
})();
