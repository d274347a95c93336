// The game's surface: shows the round the app keeps in the instance's session data (the
// agent's drawing to guess, or the user's own strokes and the word to draw), the
// countdown and the score; the user's strokes, guesses, Done and Give up go to the app as
// declared events. The word the user must guess is sent here only once the round is over:
// its end screen says how it ended and what the word was, until the user closes the game
// (Close, a declared event too) or the agent starts the next round.
(function () {
  "use strict";
  const MAX_POINTS = 500; // a stroke's points, as the app takes them
  const COLOURS = ["black", "red", "blue", "green", "orange", "purple"];
  const $ = (id) => document.getElementById(id);
  const board = $("board");
  let round = {};
  let colour = "black";
  let pen = null; // the stroke being drawn: its points

  function playing(mode) {
    return round.state === "playing" && (!mode || round.mode === mode);
  }

  function failed(error) {
    $("status").textContent = "Not sent: " + (error.code || error);
  }

  function send(name, payload) {
    return lineup.emit(name, payload).catch(failed);
  }

  function redraw() {
    const drawing = pen ? [{ kind: "stroke", colour: colour, points: pen.concat([pen[pen.length - 1]]) }] : [];
    window.drawBoard(board, round.shapes.concat(drawing));
  }

  function clock(seconds) {
    return Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0");
  }

  function countdown() {
    const left = playing() && round.ends_at
      ? Math.max(0, Math.ceil((Date.parse(round.ends_at) - Date.now()) / 1000)) : null;
    $("countdown").textContent = left === null ? "" : clock(left);
    document.body.dataset.remaining = left === null ? "" : String(left);
  }

  // The round's end in words: how it ended, what the word was, how long the user took.
  function ending() {
    const word = round.word ? "“" + round.word + "”" : "the word";
    const took = typeof round.seconds_used === "number" ? clock(round.seconds_used) : "";
    if (round.outcome === "guessed") return "Correct! It was " + word + (took ? " — you won in " + took : "");
    if (round.outcome === "drawn") {
      return "Done! You drew " + word + (took ? " in " + took : "") + " — the agent has your drawing";
    }
    if (round.outcome === "time_up") return "Time's up — it was " + word;
    if (round.outcome === "gave_up") return "You gave up — it was " + word;
    return "The round was stopped — it was " + word;
  }

  function status() {
    if (!round.state) return "Waiting for a round…";
    const ready = round.ends_at ? "" : " Get ready…";
    if (round.mode === "user_draws") return "Draw: " + round.word + "." + ready;
    return "What did the agent draw?" + ready;
  }

  function show(snapshot) {
    round = snapshot.data || {};
    round.shapes = round.shapes || [];
    const body = document.body.dataset;
    body.state = round.state || "waiting";
    body.mode = round.mode || "";
    body.round = String(round.round || 0);
    body.outcome = round.outcome || "";
    body.guesses = (round.guesses || []).join("|");
    body.shapes = String(round.shapes.length);
    body.revision = String(snapshot.revision);
    const score = round.score || { user: 0, agent: 0 };
    $("score-user").textContent = String(score.user);
    $("score-agent").textContent = String(score.agent);
    body.score = score.user + ":" + score.agent;
    const ended = round.state === "ended";
    $("status").hidden = ended;
    $("status").textContent = ended ? "" : status();
    $("end").hidden = !ended;
    $("end-text").textContent = ended ? ending() : "";
    $("guesses").replaceChildren(...(round.guesses || []).map((text) => {
      const item = document.createElement("li");
      item.textContent = text;
      return item;
    }));
    $("guess-row").hidden = !playing("user_guesses");
    $("palette").hidden = !playing("user_draws");
    $("done").hidden = !playing("user_draws");
    $("done").disabled = round.shapes.length === 0;
    $("give-up").hidden = !playing();
    redraw();
    countdown();
  }

  // The user's pen: a stroke from press to release, sent whole.
  board.addEventListener("pointerdown", (event) => {
    if (!playing("user_draws")) return;
    board.setPointerCapture(event.pointerId);
    pen = [window.boardPoint(board, event)];
    redraw();
  });
  board.addEventListener("pointermove", (event) => {
    if (!pen) return;
    const point = window.boardPoint(board, event);
    const last = pen[pen.length - 1];
    if (point[0] !== last[0] || point[1] !== last[1]) pen.push(point);
    redraw();
  });
  board.addEventListener("pointerup", () => {
    if (!pen) return;
    let points = pen;
    pen = null;
    // A long stroke keeps every nth point, its ends included.
    if (points.length > MAX_POINTS) {
      const step = (points.length - 1) / (MAX_POINTS - 1);
      points = Array.from({ length: MAX_POINTS }, (_, n) => points[Math.round(n * step)]);
    }
    send("stroke", { points: points, colour: colour });
  });

  for (const name of COLOURS) {
    const button = document.createElement("button");
    button.type = "button";
    button.title = name;
    button.style.background = name;
    button.setAttribute("aria-pressed", String(name === colour));
    button.addEventListener("click", () => {
      colour = name;
      for (const other of $("palette").children) {
        other.setAttribute("aria-pressed", String(other === button));
      }
    });
    $("palette").appendChild(button);
  }

  // The frame's sandbox submits no form: the guess goes on a click or Enter.
  function guess() {
    const text = $("guess").value.trim();
    $("guess").value = "";
    if (text && playing("user_guesses")) send("guess", { text: text });
  }
  $("guess-button").addEventListener("click", guess);
  $("guess").addEventListener("keydown", (event) => {
    if (event.key === "Enter") guess();
  });
  $("done").addEventListener("click", () => send("done", {}));
  $("give-up").addEventListener("click", () => send("give_up", {}));
  $("close").addEventListener("click", () => send("close", {}));
  setInterval(countdown, 250);

  lineup.ready
    .then(() => lineup.session.subscribe(show))
    .catch((error) => { document.body.dataset.error = String(error.code || error); });
})();
