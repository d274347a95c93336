"""The browser of `lineup bench web`: headless Debian Chromium, driven by Selenium through
Debian's chromedriver, with a fresh profile in the bench's temp dir.

Selenium's calls block: the bench makes each in a worker thread, so its trio loop keeps
the agent going meanwhile. The figures come from the page's own clock (`performance`),
never from when a poll of the bench saw something. Closing quits the browser and its
driver, then stops by pid whatever of theirs is left: each of them names this run's
profile or driver log on its command line.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from ._procs import BenchError

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
READY_MARK = "lineup:ready"  # the page's mark once its first view is drawn (`app.js`)

# When each timeline item first enters the DOM: a MutationObserver's callback runs right
# after the page's script inserted it, and takes the page's wall clock then (ms since the
# epoch, the same clock as the agent's `time.time_ns()`). The timeline's items are in its
# blocks (the page's `timeline.js`). An item redrawn in place (a new state) enters again and
# is not counted again.
_OBSERVE = """
const timeline = document.getElementById("timeline");
const seen = (window.lineupSeen = []);
const known = new Set();
new MutationObserver((records) => {
  const now = performance.timeOrigin + performance.now();
  for (const record of records) {
    if (record.target.parentElement !== timeline) continue;  // an item's own insides
    for (const node of record.addedNodes) {
      if (node.nodeType !== 1 || !node.dataset.id || known.has(node.dataset.id)) continue;
      known.add(node.dataset.id);
      const text = node.querySelector(".text");
      seen.push([text ? text.textContent : "", now]);
    }
  }
}).observe(timeline, { childList: true, subtree: true });
"""
_READY = f"""
const marks = performance.getEntriesByName("{READY_MARK}");
return marks.length ? marks[0].startTime : null;
"""
_NOW = "return performance.timeOrigin + performance.now();"


class Browser:
    def __init__(self, work: Path, *, microphone: Path | None = None) -> None:
        self.profile = work / "chromium-profile"
        self.driver_log = work / "logs" / "chromedriver.log"
        self.driver: Any = None
        # A WAV the browser's microphone plays, its prompt for it answered yes.
        self.microphone = microphone

    def open(self) -> str:
        """Start Chromium; its version."""
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        if self.microphone is not None:
            options.add_argument("--use-fake-ui-for-media-stream")
            options.add_argument("--use-fake-device-for-media-stream")
            options.add_argument(f"--use-file-for-fake-audio-capture={self.microphone}")
        self.driver_log.parent.mkdir(parents=True, exist_ok=True)
        service = Service(CHROMEDRIVER, log_output=str(self.driver_log))
        try:
            self.driver = webdriver.Chrome(service=service, options=options)
        except WebDriverException as exc:
            raise BenchError(f"Chromium did not start: {exc.msg}") from None
        self.driver.set_window_size(1400, 900)
        return str(self.driver.capabilities.get("browserVersion", "?"))

    def go(self, url: str) -> None:
        """Navigate to `url`; back once the document has loaded."""
        self.driver.get(url)

    def url(self) -> str:
        return str(self.driver.current_url)

    def ready_ms(self) -> float | None:
        """Navigation start → the page's ready mark, ms; None until it is there."""
        value = self.driver.execute_script(_READY)
        return None if value is None else float(value)

    def observe(self) -> None:
        self.driver.execute_script(_OBSERVE)

    def seen_count(self) -> int:
        return int(self.driver.execute_script("return window.lineupSeen.length;"))

    def seen(self) -> list[tuple[str, float]]:
        """Each item's text and the page's wall clock (ms) when it entered the DOM."""
        rows = self.driver.execute_script("return window.lineupSeen;")
        return [(str(text), float(at)) for text, at in rows]

    def now_ms(self) -> float:
        return float(self.driver.execute_script(_NOW))

    def close(self) -> None:
        if self.driver is not None:
            # A driver that died already cannot quit: its leftovers are stopped below.
            with contextlib.suppress(Exception):
                self.driver.quit()
            self.driver = None
        for pid in _pids_naming(str(self.profile), str(self.driver_log)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _pids_naming(*names: str) -> list[int]:
    """The processes whose command line holds one of `names` (this run's own paths)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue  # exited while we looked
        if any(name in text for name in names):
            found.append(int(cmdline.parent.name))
    return found
