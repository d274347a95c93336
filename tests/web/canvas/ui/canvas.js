// The canvas surface: draws, emits one stroke, counts its visits in session data, asks
// for the clipboard, asks for a notification when its button is pressed, and answers the
// agent's `board.clear` calls as their arguments ask. Its other buttons ask the user for a
// file (`file.open`) and save one (`file.save`); each outcome is kept in the body's data
// (`opened`, `filed`) as JSON, the latest last.
(async function () {
  "use strict";
  const kept = (key, outcome) => {
    const seen = JSON.parse(document.body.dataset[key] || "[]");
    document.body.dataset[key] = JSON.stringify([...seen, outcome]);
  };
  document.getElementById("open-file").addEventListener("click", async () => {
    const input = { accept: ["text/plain", "image/png"], max_bytes: 2048 };
    kept("opened", await lineup.capabilities.request("file.open", "Open a list to draw", input));
  });
  document.getElementById("save-file").addEventListener("click", async () => {
    const input = { name: "drawing.txt", data_base64: btoa("a red stroke") };
    kept("filed", await lineup.capabilities.request("file.save", "Save the drawing", input));
  });
  let counted;
  const visited = new Promise((resolve) => { counted = resolve; });
  lineup.onToolCall("board.clear", async (args, call) => {
    const visits = await visited;
    const seen = document.body.dataset.calls;
    document.body.dataset.calls = (seen ? seen + "," : "") + call.callId;
    // Held until the surface is shown again (a reload, a restarted web host): only a
    // later visit answers it.
    if (visits < (args.hold_until_visit || 1)) return new Promise(() => {});
    await call.progress({ stage: "clearing", percent: 50 });
    if (args.answer === "off_schema") return { cleared: "all", visits: visits };
    return { cleared: 5, visits: visits };
  });
  const board = document.getElementById("board").getContext("2d");
  const colours = ["#dc322f", "#859900", "#268bd2", "#d33682", "#b58900"];
  colours.forEach((colour, n) => {
    board.fillStyle = colour;
    board.fillRect(20 + n * 58, 30 + (n % 2) * 40, 48, 48);
  });
  // Each press asks for a notification; its outcomes are kept in order.
  document.getElementById("remind").addEventListener("click", async () => {
    const asked = await lineup.capabilities.request("notification.show", "Remind you of the board", { title: "Board <b>saved</b>", text: "Five strokes & counting" });
    const seen = document.body.dataset.notified;
    document.body.dataset.notified = (seen ? seen + "," : "") + asked.status;
  });
  lineup.onState((state) => {
    document.getElementById("strokes").textContent = String(state.strokes || 0);
    document.body.dataset.strokes = String(state.strokes || 0);
  });
  await lineup.ready;
  // The listener's first call is the snapshot now, then one call per later revision.
  await lineup.session.subscribe((snapshot) => {
    document.getElementById("saved").textContent = JSON.stringify(snapshot.data);
    const seen = document.body.dataset.revisions;
    document.body.dataset.revisions = (seen ? seen + "," : "") + snapshot.revision;
  });
  const first = await lineup.session.get();
  const visits = ((first.data && first.data.visits) || 0) + 1;
  await lineup.session.replace({ visits: visits }, first.revision);
  counted(visits);
  await lineup.emit("stroke", { x: 10, y: 20, colour: "red" });
  const copied = await lineup.capabilities.request("clipboard.write", "Copy the drawing", { text: "drawing" });
  document.body.dataset.capability = copied.status;
  document.body.dataset.visits = String(visits);
})().catch((error) => {
  document.body.dataset.error = String(error.code || error);
});
