// The whiteboard's surface: the board the user draws on, drawn from the instance's session
// data. Every edit is a change applied to the board as last committed and written against
// that revision; a write that lost a race (revision_conflict: another page or the agent
// wrote first) reads the board again and applies the same change to it, so no page ever
// overwrites another's shapes. Coordinates are board units (1000 x 700) at any size.
(function () {
  "use strict";
  const WIDTH = 1000;
  const HEIGHT = 700;
  const MAX_POINTS = 500;
  const COLOURS = { black: "#222222", red: "#d62728", blue: "#1f77b4", green: "#2ca02c",
    orange: "#ff7f0e", purple: "#9467bd" };
  const TEXT_SIZE = 22;
  const WRITE_ATTEMPTS = 8;
  const canvas = document.getElementById("board");
  const context = canvas.getContext("2d");
  const body = document.body;
  const status = document.getElementById("status");
  const page = Math.random().toString(36).slice(2, 8); // this page's shape ids: its own
  let made = 0;
  let committed = { data: null, revision: 0 }; // the newest snapshot of the store's board
  let gesture = null; // the shape being drawn, not yet written
  let tool = "pen";
  let colour = "black";
  let width = 3;
  const mine = []; // ids of the shapes this page added, newest last: what undo takes back
  let writes = 0; // edits in flight
  let conflicts = 0; // writes that lost a race and were made again

  // What another writer left on the board is drawn only if it keeps the shapes' contract,
  // as the app holds it: the same shapes on every page, in every export.
  const POINTS = { stroke: [2, MAX_POINTS], line: [2, 2], rect: [2, 2], ellipse: [2, 2], text: [1, 1] };

  function inRange(value, top) {
    return Number.isInteger(value) && value >= 0 && value <= top;
  }

  function drawable(shape) {
    if (!shape || typeof shape !== "object" || !POINTS.hasOwnProperty(shape.kind)) return false;
    if (!COLOURS.hasOwnProperty(shape.colour) || !Array.isArray(shape.points)) return false;
    const [least, most] = POINTS[shape.kind];
    if (shape.points.length < least || shape.points.length > most) return false;
    if (!shape.points.every((p) => Array.isArray(p) && p.length === 2 && inRange(p[0], WIDTH) && inRange(p[1], HEIGHT))) return false;
    if (shape.width !== undefined && !(inRange(shape.width, 20) && shape.width >= 1)) return false;
    if (shape.kind !== "text") return shape.text === undefined;
    return typeof shape.text === "string" && shape.text.length >= 1 && shape.text.length <= 200;
  }

  function boardOf(data) {
    const raw = data && typeof data === "object" ? data : {};
    const shapes = raw.shapes && typeof raw.shapes === "object" ? raw.shapes : {};
    const order = Array.isArray(raw.order) ? raw.order.filter((id) => drawable(shapes[id])) : [];
    return { title: typeof raw.title === "string" ? raw.title : "Whiteboard", shapes: shapes, order: order };
  }

  // -- drawing ------------------------------------------------------------------------

  function outline(shape) {
    const [a, b] = shape.points;
    if (shape.kind === "rect") return [a, [b[0], a[1]], b, [a[0], b[1]], a];
    return shape.points;
  }

  function draw(shape) {
    context.strokeStyle = context.fillStyle = COLOURS[shape.colour] || COLOURS.black;
    context.lineWidth = shape.width || 3;
    context.lineCap = context.lineJoin = "round";
    context.beginPath();
    if (shape.kind === "text") {
      context.font = TEXT_SIZE + "px sans-serif";
      context.textBaseline = "top";
      context.fillText(shape.text, shape.points[0][0], shape.points[0][1]);
      return;
    }
    if (shape.kind === "ellipse") {
      const [[x0, y0], [x1, y1]] = shape.points;
      context.ellipse((x0 + x1) / 2, (y0 + y1) / 2, Math.abs(x1 - x0) / 2, Math.abs(y1 - y0) / 2, 0, 0, 2 * Math.PI);
    } else {
      outline(shape).forEach(([x, y], n) => (n ? context.lineTo(x, y) : context.moveTo(x, y)));
    }
    context.stroke();
  }

  function render() {
    const board = boardOf(committed.data);
    context.clearRect(0, 0, WIDTH, HEIGHT);
    board.order.forEach((id) => draw(board.shapes[id]));
    if (gesture) draw(gesture);
    document.getElementById("title").textContent = board.title;
    body.dataset.revision = String(committed.revision);
    body.dataset.shapes = String(board.order.length);
    body.dataset.shapeIds = board.order.join(",");
  }

  function fit() {
    const area = canvas.parentElement.getBoundingClientRect();
    const scale = Math.max(0.1, Math.min((area.width - 16) / WIDTH, (area.height - 16) / HEIGHT));
    canvas.style.width = Math.floor(WIDTH * scale) + "px";
    canvas.style.height = Math.floor(HEIGHT * scale) + "px";
  }

  // -- writing ------------------------------------------------------------------------

  function showProgress() {
    body.dataset.pending = String(writes);
    body.dataset.conflicts = String(conflicts);
    status.textContent = writes ? "Saving…" : "Saved (revision " + committed.revision + ")";
  }

  function take(snapshot) {
    if (snapshot.revision > committed.revision || committed.revision === 0) committed = snapshot;
    render();
    showProgress();
  }

  // Apply `change(board)` to the board as committed, again on a newer one after a conflict.
  async function edit(change) {
    writes += 1;
    showProgress();
    try {
      let base = committed;
      for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt += 1) {
        const board = change(boardOf(base.data));
        try {
          const written = await lineup.session.replace(board, base.revision);
          take({ data: board, revision: written.revision });
          return;
        } catch (error) {
          if (error.code !== "revision_conflict") throw error;
          conflicts += 1;
          base = await lineup.session.get();
          take(base);
        }
      }
      throw Object.assign(new Error("the board kept changing"), { code: "revision_conflict" });
    } finally {
      writes -= 1;
      showProgress();
    }
  }

  function report(error) {
    body.dataset.writeError = String(error.code || error);
    status.textContent = "Not saved: " + (error.code || error);
  }

  function add(shape) {
    made += 1;
    const id = "u" + page + "-" + made;
    mine.push(id);
    edit((board) => {
      board.shapes = Object.assign({}, board.shapes, { [id]: shape });
      board.order = board.order.filter((other) => other !== id).concat([id]);
      return board;
    }).catch(report);
  }

  function remove(ids) {
    edit((board) => {
      const gone = new Set(ids);
      const shapes = {};
      board.order = board.order.filter((id) => !gone.has(id));
      board.order.forEach((id) => { shapes[id] = board.shapes[id]; });
      board.shapes = shapes;
      return board;
    }).catch(report);
  }

  // -- the user's gestures --------------------------------------------------------------

  function at(event) {
    const box = canvas.getBoundingClientRect();
    const x = Math.round(((event.clientX - box.left) / box.width) * WIDTH);
    const y = Math.round(((event.clientY - box.top) / box.height) * HEIGHT);
    return [Math.min(WIDTH, Math.max(0, x)), Math.min(HEIGHT, Math.max(0, y))];
  }

  function thinned(points) {
    if (points.length <= MAX_POINTS) return points;
    const step = (points.length - 1) / (MAX_POINTS - 1);
    return Array.from({ length: MAX_POINTS }, (_, n) => points[Math.round(n * step)]);
  }

  canvas.addEventListener("pointerdown", (event) => {
    const point = at(event);
    if (tool === "text") {
      const text = document.getElementById("text").value.trim().slice(0, 200);
      if (text) add({ kind: "text", colour: colour, points: [point], text: text });
      return;
    }
    try {
      canvas.setPointerCapture(event.pointerId); // the stroke goes on past the board's edge
    } catch (error) {
      // A pointer that is no longer down cannot be captured: the gesture goes on uncaptured.
    }
    const points = tool === "pen" ? [point] : [point, point];
    gesture = { kind: tool === "pen" ? "stroke" : tool, colour: colour, points: points, width: width };
    render();
  });

  canvas.addEventListener("pointermove", (event) => {
    if (!gesture) return;
    const point = at(event);
    const points = gesture.points;
    if (gesture.kind === "stroke") {
      const last = points[points.length - 1];
      if (Math.abs(last[0] - point[0]) + Math.abs(last[1] - point[1]) >= 2) points.push(point);
    } else {
      points[1] = point;
    }
    render();
  });

  function finish(event) {
    if (!gesture) return;
    const shape = gesture;
    gesture = null;
    if (event.type === "pointerup") {
      shape.points.push(at(event));
      if (shape.kind !== "stroke") shape.points = [shape.points[0], shape.points[shape.points.length - 1]];
      const [a, b] = [shape.points[0], shape.points[shape.points.length - 1]];
      const moved = shape.points.length > 2 || a[0] !== b[0] || a[1] !== b[1];
      if (shape.kind === "stroke" || moved) {
        shape.points = thinned(shape.points);
        add(shape);
      }
    }
    render();
  }
  canvas.addEventListener("pointerup", finish);
  canvas.addEventListener("pointercancel", finish);

  // -- the toolbar ----------------------------------------------------------------------

  function press(selector, attribute, value) {
    document.querySelectorAll(selector).forEach((button) => {
      button.setAttribute("aria-pressed", String(button.dataset[attribute] === String(value)));
    });
  }

  function choose(next) {
    if (next.tool) tool = next.tool;
    if (next.colour) colour = next.colour;
    if (next.width) width = next.width;
    body.dataset.tool = tool;
    body.dataset.colour = colour;
    body.dataset.width = String(width);
    press("#tools button", "tool", tool);
    press("#palette button", "colour", colour);
    press("#widths button", "width", width);
  }

  const palette = document.getElementById("palette");
  Object.entries(COLOURS).forEach(([name, hex]) => {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.colour = name;
    button.title = name;
    button.setAttribute("aria-label", name);
    button.style.background = hex;
    palette.appendChild(button);
  });
  document.querySelectorAll("#tools button").forEach((b) => b.addEventListener("click", () => choose({ tool: b.dataset.tool })));
  document.querySelectorAll("#palette button").forEach((b) => b.addEventListener("click", () => choose({ colour: b.dataset.colour })));
  document.querySelectorAll("#widths button").forEach((b) => b.addEventListener("click", () => choose({ width: Number(b.dataset.width) })));
  document.getElementById("undo").addEventListener("click", () => {
    const present = new Set(boardOf(committed.data).order);
    while (mine.length && !present.has(mine[mine.length - 1])) mine.pop();
    if (mine.length) remove([mine.pop()]);
  });
  document.getElementById("clear").addEventListener("click", () => remove(boardOf(committed.data).order));
  addEventListener("resize", fit);

  choose({});
  fit();
  render();
  lineup.ready
    .then(() => lineup.session.subscribe(take))
    .then(() => { body.dataset.ready = "true"; })
    .catch((error) => { body.dataset.error = String(error.code || error); });
})();
