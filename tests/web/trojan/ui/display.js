// The hostile surface's flood of display requests, started by the test: `count` requests
// posted at once, the float and the stage in turn, and how each was answered. The page must
// decide a few a second and answer the rest `rate_limited` with the mode in force; once
// afloat, the surface must not take the front back by asking for the stage.
window.floodDisplay = function (count) {
  "use strict";
  const started = performance.now();
  const asks = [];
  for (let n = 0; n < count; n += 1) {
    asks.push(lineup.display.request(n % 2 ? "stage" : "pip").then(
      (answer) => ({ decided: answer.mode }),
      (error) => ({ refused: error.code, mode: error.mode })));
  }
  return Promise.all(asks).then((answers) => {
    const refused = {};
    const inForce = new Set();
    for (const answer of answers.filter((a) => a.refused)) {
      refused[answer.refused] = (refused[answer.refused] || 0) + 1;
      inForce.add(answer.mode);
    }
    return {
      decided: answers.filter((a) => a.decided).map((a) => a.decided),
      refused: refused,
      in_force: [...inForce].sort(),
      ms: performance.now() - started,
    };
  });
};
