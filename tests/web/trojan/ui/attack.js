// The hostile surface: tries each way out of its frame and writes what happened.
(async function () {
  "use strict";
  const report = {};
  const instance = lineup.instanceId;

  function attempt(name, action) {
    try {
      report[name] = "allowed: " + String(action());
    } catch (error) {
      report[name] = "blocked: " + error.name;
    }
  }

  function settles(name, start) {
    // The outcome of an asynchronous attempt, or "blocked: no answer" after two seconds.
    return new Promise((resolve) => {
      const done = (outcome) => { report[name] = report[name] || outcome; resolve(); };
      setTimeout(() => done("blocked: no answer"), 2000);
      try {
        start(done);
      } catch (error) {
        done("blocked: " + error.name);
      }
    });
  }

  function post(message) {
    parent.postMessage(JSON.stringify(Object.assign({ v: 1, instance_id: instance }, message)), "*");
  }

  await lineup.ready;
  // The test's loopback listener: its port comes in the app's state (its orders).
  const port = await new Promise((resolve) => {
    if (lineup.state().listener) resolve(lineup.state().listener);
    lineup.onState((state) => state.listener && resolve(state.listener));
  });
  const listener = "http://127.0.0.1:" + port;
  attempt("parent_document", () => parent.document.body.innerHTML.length);
  attempt("cookie", () => document.cookie);
  attempt("local_storage", () => localStorage.getItem("x"));
  attempt("window_open", () => window.open(listener + "/open") !== null ? "a window" : null);
  attempt("top_location", () => { top.location = listener + "/top"; return "set"; });
  attempt("form_submit", () => {
    const form = document.getElementById("leak");
    form.action = listener + "/form";
    form.submit();
    return "submitted";
  });
  await Promise.all([
    settles("fetch", (done) => fetch(listener + "/fetch").then(() => done("allowed"), (e) => done("blocked: " + e.name))),
    settles("xhr", (done) => {
      const xhr = new XMLHttpRequest();
      xhr.onload = () => done("allowed");
      xhr.onerror = () => done("blocked: error");
      xhr.open("GET", listener + "/xhr");
      xhr.send();
    }),
    settles("websocket", (done) => {
      const socket = new WebSocket(listener.replace("http", "ws") + "/ws");
      socket.onopen = () => done("allowed");
      socket.onerror = () => done("blocked: error");
    }),
    settles("image", (done) => {
      const image = new Image();
      image.onload = () => done("allowed");
      image.onerror = () => done("blocked: error");
      image.src = listener + "/image.png";
    }),
  ]);
  // Bridge messages the page must drop: each counted by its reason.
  post({ id: "other", type: "event", name: "probe", payload: { n: 100 }, instance_id: "canvas:main" });
  post({ id: "undeclared", type: "event", name: "exfiltrate", payload: { n: 101 } });
  post({ id: "huge", type: "event", name: "probe", payload: { n: 102, pad: "x".repeat(10 * 1024 * 1024) } });
  parent.postMessage({ v: 1, id: "object", instance_id: instance, type: "event", name: "probe", payload: { n: 103 } }, "*");
  post({ id: "ask", type: "capability", capability: "clipboard.write", purpose: "steal", input: { text: "x" } });
  post({ id: "schema", type: "event", name: "probe", payload: { n: "not a number" } });
  // Sizes out of bounds or not whole pixels, and a display mode it did not declare.
  post({ id: "tall", type: "size", height: 1e9, viewport: innerHeight });
  post({ id: "negative", type: "size", height: -5, viewport: innerHeight });
  post({ id: "nan", type: "size", height: NaN, viewport: innerHeight }); // JSON has no NaN: null
  post({ id: "half", type: "size", height: 10.5, viewport: innerHeight });
  post({ id: "text", type: "size", height: "300", viewport: innerHeight });
  parent.postMessage(`{"v":1,"id":"raw","instance_id":"${instance}","type":"size","height":NaN,"viewport":1}`, "*");
  post({ id: "inline", type: "display.request", mode: "inline" });
  // A flood of sizes within bounds, from nothing to the most a surface may say.
  for (let n = 0; n < 5000; n += 1) {
    post({ id: "flood", type: "size", height: n % 2 ? 100000 : 0, viewport: innerHeight });
  }
  // The control: a declared event with its payload, which must reach the app.
  await lineup.emit("probe", { n: 1 });
  document.getElementById("report").textContent = JSON.stringify(report);
  document.body.dataset.done = "1";
})().catch((error) => {
  document.body.dataset.error = String(error.code || error);
});
