// Draws shapes on the board's canvas: the board is 1000 x 700 units, scaled to the canvas.
// A shape is {kind: stroke | line | rect | ellipse | text, colour, points: [[x, y], ...],
// width?, text?}.
(function () {
  "use strict";
  const BOARD = { width: 1000, height: 700 };

  function path(context, points, scale) {
    context.beginPath();
    points.forEach(([x, y], n) => {
      if (n === 0) context.moveTo(x * scale, y * scale);
      else context.lineTo(x * scale, y * scale);
    });
    context.stroke();
  }

  function shape(context, item, scale) {
    context.strokeStyle = item.colour;
    context.fillStyle = item.colour;
    context.lineWidth = Math.max(1, (item.width || 3) * scale);
    context.lineCap = "round";
    context.lineJoin = "round";
    const [[x0, y0], [x1, y1]] = [item.points[0], item.points[1] || item.points[0]];
    if (item.kind === "stroke" || item.kind === "line") {
      path(context, item.points, scale);
    } else if (item.kind === "rect") {
      context.strokeRect(Math.min(x0, x1) * scale, Math.min(y0, y1) * scale,
        Math.abs(x1 - x0) * scale, Math.abs(y1 - y0) * scale);
    } else if (item.kind === "ellipse") {
      context.beginPath();
      context.ellipse((x0 + x1) / 2 * scale, (y0 + y1) / 2 * scale,
        Math.abs(x1 - x0) / 2 * scale, Math.abs(y1 - y0) / 2 * scale, 0, 0, 2 * Math.PI);
      context.stroke();
    } else if (item.kind === "text") {
      context.font = Math.round(24 * scale * (item.width || 3) / 3) + "px sans-serif";
      context.textBaseline = "top";
      context.fillText(String(item.text || ""), x0 * scale, y0 * scale);
    }
  }

  // Clears the canvas and draws `shapes` in order.
  window.drawBoard = function (canvas, shapes) {
    const context = canvas.getContext("2d");
    const scale = canvas.width / BOARD.width;
    context.clearRect(0, 0, canvas.width, canvas.height);
    for (const item of shapes || []) shape(context, item, scale);
  };

  // The board's point under a pointer event, held to the board.
  window.boardPoint = function (canvas, event) {
    const box = canvas.getBoundingClientRect();
    const x = Math.round((event.clientX - box.left) * BOARD.width / box.width);
    const y = Math.round((event.clientY - box.top) * BOARD.height / box.height);
    return [Math.min(Math.max(x, 0), BOARD.width), Math.min(Math.max(y, 0), BOARD.height)];
  };
})();
