// The chat's audio mode in the page: the Voice switch in the header, the agent's messages
// spoken, and the user's push-to-talk.
//
// The switch asks the chat to change the conversation's mode (an `act`, `mode`); what the
// page shows follows the mode the runtime says (`view` frames carry it), so every page of
// the conversation, and the terminal, agree. In audio mode:
// - each part of an agent message's speech that arrives after the page's first view is
//   played, in order, one at a time, by the page's own <audio> element (the WAV the chat
//   had made of it, served by the web host to this conversation's page only); "Stop
//   speaking", and pressing the talk button, end what plays, what waits and the rest of
//   those messages. The switch is a click, so the browser lets the page play sound from
//   then on;
// - the talk button records the user (recorder.js, the recording bar with the time): press
//   and hold it, or click it to start and again to stop (Space and Enter do the same). The
//   recording goes to the runtime, which writes it out and sends it as the user's message;
//   the page says it is being written out until that message is in the timeline.
(() => {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const HOLD_MS = 450; // a press held this long is a hold: letting go sends
  let lent = null; // what app.js lends: enqueue(frame, label)
  let mode = "im";
  let firstView = true;
  const heard = new Set(); // speech parts seen: `${item id}:${part}`
  const hushed = new Set(); // messages the user silenced: their later parts are not played
  let theirs = []; // the ids of the agent's items, as last seen
  const waiting = []; // speech parts to play, in order: /artifact/... addresses
  let pressedAt = 0;
  let pressed = false; // the pointer is down on the talk button, since it started talking
  let stopWhenStarted = false; // let go (or pressed again) before the recording began
  let talking = false; // a push-to-talk under way: opening, recording or sending
  let writing = false; // a recording sent: its message is being written out
  let mine = 0; // the user's messages in the timeline, to see the spoken one arrive
  let wanted = null; // the mode the user just switched to, until the runtime says it
  const WANTED_MS = 5000;

  function attach(app) {
    lent = app;
    $("voice-toggle").addEventListener("click", toggle);
    $("speech-stop").addEventListener("click", silence);
    const player = $("speech-player");
    player.addEventListener("ended", playNext);
    player.addEventListener("error", playNext);
    const button = $("talk");
    button.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      if (talking) { // a second press stops it
        pressed = false;
        end();
        return;
      }
      pressed = true;
      pressedAt = performance.now();
      start();
    });
    button.addEventListener("pointerup", () => {
      // Held: letting go sends; a short press was a click, and the next one stops it.
      if (pressed && performance.now() - pressedAt >= HOLD_MS) end();
      pressed = false;
    });
    button.addEventListener("click", (event) => {
      if (event.detail !== 0) return; // a pointer's click: its press did it already
      if (talking) end(); // the keyboard's Space or Enter: start, or stop and send
      else start();
    });
  }

  function toggle() {
    const next = mode === "audio" ? "im" : "audio";
    wanted = { mode: next, at: Date.now() };
    lent.enqueue({ t: "act", app: "chat", input: { kind: "mode", mode: next } }, null);
    show(next); // at once; the runtime's word follows in the view
    if (next === "im") silence();
  }

  function show(now) {
    mode = now;
    const on = mode === "audio";
    const toggleButton = $("voice-toggle");
    toggleButton.setAttribute("aria-pressed", String(on)); // its name stays "Voice"
    document.body.dataset.voice = on ? "on" : "";
    $("talk").hidden = !on;
    if (!on) {
      silence();
      say("");
    }
  }

  function say(text, failed = false) {
    const line = $("talk-status");
    line.textContent = text;
    line.hidden = !text;
    line.classList.toggle("failed", failed);
  }

  // A `view` frame: the conversation's mode, and the speech parts new since the first view.
  function view(frame, items) {
    if (frame.mode) $("voice-toggle").dataset.mode = frame.mode; // the runtime's word
    // The runtime's word on the mode, unless it is older than the user's own switch.
    const before = wanted && wanted.mode !== frame.mode && Date.now() - wanted.at < WANTED_MS;
    if (frame.mode && frame.mode !== mode && !before) show(frame.mode);
    if (wanted && frame.mode === wanted.mode) wanted = null;
    const count = items.filter((item) => item.mine).length;
    theirs = items.filter((item) => !item.mine).map((item) => item.id);
    for (const item of frame.items) {
      for (const part of item.speech || []) {
        const key = `${item.id}:${part.part}`;
        if (heard.has(key)) continue;
        heard.add(key);
        if (!firstView && mode === "audio" && !hushed.has(item.id)) play(part.id);
      }
    }
    if (writing && count > mine) { // the spoken message is in: written out, or refused
      writing = false;
      say("");
    }
    mine = count;
    firstView = false;
  }

  function play(artifactId) {
    waiting.push(`/artifact/${encodeURIComponent(lent.conversation)}/${encodeURIComponent(artifactId)}`);
    const player = $("speech-player");
    if (player.paused && !player.dataset.playing) playNext();
  }

  function playNext() {
    const player = $("speech-player");
    const next = waiting.shift();
    if (!next) {
      delete player.dataset.playing;
      $("speech-stop").hidden = true;
      return;
    }
    player.dataset.playing = "on";
    $("speech-stop").hidden = false;
    player.src = next;
    player.play().catch((error) => {
      if (!error || error.name !== "NotAllowedError") {
        playNext(); // this part would not play: the next one
        return;
      }
      // The page was opened in voice mode and not clicked yet: the browser holds the sound
      // until the person interacts with the page.
      waiting.unshift(next);
      delete player.dataset.playing;
      say("The browser plays the agent's voice once you click this page: click anywhere.");
      document.addEventListener("click", () => { say(""); playNext(); }, { once: true, capture: true });
    });
  }

  // Stop what plays and what waits, and the rest of those messages, still being made.
  function silence() {
    for (const id of theirs) hushed.add(id);
    waiting.length = 0;
    const player = $("speech-player");
    player.pause();
    player.removeAttribute("src");
    delete player.dataset.playing;
    $("speech-stop").hidden = true;
  }

  async function start() {
    if (talking || mode !== "audio") return;
    talking = true;
    stopWhenStarted = false;
    silence(); // the user talks: the agent stops speaking
    label("Starting…", true);
    const began = await window.lineupRecorder.talk(told);
    if (!began) {
      talking = false;
      label();
    }
  }

  function end() {
    if (window.lineupRecorder.recording()) window.lineupRecorder.stop();
    else if (talking) stopWhenStarted = true;
  }

  // How the push-to-talk goes (recorder.js tells).
  function told(news) {
    if (news.recording) {
      label("Stop and send", true);
      say("");
      if (stopWhenStarted) window.lineupRecorder.stop();
      return;
    }
    talking = false;
    label();
    if (news.failed) {
      say(news.failed, true);
    } else {
      writing = true;
      say(`Sent ${news.sent} s of speech: writing out what you said…`);
    }
  }

  // The talk button says what pressing it does now; while it records it is red.
  function label(text = "Hold to talk", busy = false) {
    $("talk-label").textContent = text;
    if (busy) $("talk").dataset.state = "busy";
    else delete $("talk").dataset.state;
  }

  window.lineupVoice = { attach, view };
})();
