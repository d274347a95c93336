// A second frame posts a message the first one could send: right instance, declared event.
(function () {
  "use strict";
  const instance = decodeURIComponent(location.hash.slice(1));
  const message = { v: 1, id: "impostor", instance_id: instance, type: "event", name: "probe", payload: { n: 2 } };
  parent.postMessage(JSON.stringify(message), "*");
  document.body.dataset.posted = "1";
})();
