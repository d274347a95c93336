// The pomodoro timer's surface: the countdown of the timer its instance shows, read from the
// instance's session data (the app writes it as the runtime starts, pauses, resumes and ends
// the timer), and the user's Pause, Resume and Interrupt buttons, each a declared event.
// The body's data-state and data-remaining (whole seconds shown) say what it shows; the
// words on screen are a person's: "Done" once the time is up, times on the local clock.
(async function () {
  "use strict";
  // The buttons each state allows: a timer counts down while running and holds while paused.
  const ALLOWED = {
    running: ["pause", "interrupt"],
    paused: ["resume", "interrupt"],
  };
  // Each state in words: the timer's own end is "Done".
  const WORDS = {
    idle: "No timer",
    waiting: "Starting…",
    running: "Focus",
    paused: "Paused",
    finished: "Done",
    stopped: "Stopped",
  };
  const body = document.body;
  let shown = { state: "idle" };

  function secondsLeft() {
    if (shown.state === "running" && shown.ends_at) {
      return Math.max(0, Math.ceil((Date.parse(shown.ends_at) - Date.now()) / 1000));
    }
    if (shown.state === "paused" && typeof shown.remaining_ms === "number") {
      return Math.ceil(shown.remaining_ms / 1000);
    }
    if (shown.state === "finished") return 0;
    return null;
  }

  function clock(seconds) {
    if (seconds === null) return "--:--";
    const minutes = Math.floor(seconds / 60);
    const rest = seconds % 60;
    return String(minutes).padStart(2, "0") + ":" + String(rest).padStart(2, "0");
  }

  function render() {
    const seconds = secondsLeft();
    document.getElementById("countdown").textContent = clock(seconds);
    body.dataset.remaining = seconds === null ? "" : String(seconds);
  }

  // How long it was asked for, and when it ended (on the local clock) once it has.
  function about() {
    const length = shown.minutes ? shown.minutes + "-minute focus"
      : shown.seconds ? shown.seconds + "-second timer" : "";
    const ended = Date.parse(shown.ended_at || "");
    if (Number.isNaN(ended) || !["finished", "stopped"].includes(shown.state)) return length;
    const at = new Date(ended).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    return (length ? length + ", " : "") + (shown.state === "finished" ? "ended " : "stopped ") + at;
  }

  function show(data) {
    shown = data && typeof data.state === "string" ? data : { state: "idle" };
    body.dataset.state = shown.state;
    document.getElementById("state").textContent = WORDS[shown.state] || shown.state;
    document.getElementById("minutes").textContent = about();
    const allowed = ALLOWED[shown.state] || [];
    for (const button of ["pause", "resume", "interrupt"]) {
      document.getElementById(button).disabled = !allowed.includes(button);
    }
    render();
  }

  for (const button of ["pause", "resume", "interrupt"]) {
    document.getElementById(button).addEventListener("click", () => {
      // Pressed once: the button waits for the display the runtime's answer brings; a
      // refused press gives the buttons back as the display allows them.
      document.getElementById(button).disabled = true;
      lineup.emit(button, {}).catch((error) => {
        body.dataset.refused = String(error.code || error);
        show(shown);
      });
    });
  }
  setInterval(render, 250);
  await lineup.ready;
  await lineup.session.subscribe((snapshot) => show(snapshot.data));
  body.dataset.ready = "1";
})().catch((error) => {
  document.body.dataset.error = String(error.code || error);
});
