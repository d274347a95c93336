// The voice app's surface: the prompt the agent or the user gave, what became of the
// recording (from the instance's session data, which the app writes), and the user's
// Record, Stop and Replay, each a declared event. The recording itself is the page's:
// the chat's card starts it and the page's bar shows it. Replay plays the `data:` URL the
// app hands over in a state patch (this frame cannot fetch anything).
(async function () {
  "use strict";
  const body = document.body;
  const $ = (id) => document.getElementById(id);
  const WORDS = {
    idle: () => "Press Record, or ask the agent to record you.",
    asking: (s) => `Press “Start recording” in the chat, then speak; Stop ends it (up to ${s.max_seconds} s).`,
    recorded: (s) => `Recorded ${Math.round(s.recording.duration_ms / 1000)} s${s.recording.stopped === "background" ? ", stopped when Voice left the front" : ""}.`,
    failed: (s) => s.problem || "The recording did not work.",
  };
  let shown = { state: "idle" };

  function show(data) {
    shown = data && typeof data.state === "string" ? data : { state: "idle" };
    body.dataset.state = shown.state;
    $("prompt").textContent = shown.prompt || "Nothing to record yet.";
    $("status").textContent = (WORDS[shown.state] || WORDS.idle)(shown);
    $("record").disabled = shown.state === "asking";
    $("stop").disabled = shown.state !== "asking";
    $("replay").disabled = !shown.recording;
    $("transcript").hidden = !shown.transcript;
    $("transcript").textContent = shown.transcript ? `“${shown.transcript}”` : "";
  }

  function play(state) {
    const replay = state && state.replay;
    if (!replay) return;
    if (replay.problem) {
      $("status").textContent = replay.problem;
      return;
    }
    const player = $("player");
    player.src = replay.src;
    player.hidden = false;
    player.play().catch(() => {}); // a browser that wants a click first shows the controls
    body.dataset.replaying = "1";
  }

  for (const name of ["record", "stop", "replay"]) {
    $(name).addEventListener("click", () => {
      lineup.emit(name, {}).catch((error) => {
        body.dataset.refused = String(error.code || error);
      });
    });
  }
  await lineup.ready;
  lineup.onState(play);
  await lineup.session.subscribe((snapshot) => show(snapshot.data));
  body.dataset.ready = "1";
})().catch((error) => {
  document.body.dataset.error = String(error.code || error);
});
