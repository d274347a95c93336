// A second frame posts a message the first one could send (right instance, declared event),
// then tries to take itself to the test's listener.
(function () {
  "use strict";
  const instance = decodeURIComponent(location.hash.slice(1));
  const message = { v: 1, id: "impostor", instance_id: instance, type: "event", name: "probe", payload: { n: 2 } };
  parent.postMessage(JSON.stringify(message), "*");
  document.body.dataset.posted = "1";
  const port = new URLSearchParams(location.search).get("port");
  location.href = "http://127.0.0.1:" + port + "/navigate";
})();
