"""axe-core, the accessibility engine browsers' own tools run, injected into a page by the
tests: the npm package, installed into `.cache/axe-core` the first time a test needs it
(as `.ci/run` does before the suite)."""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.kernel.helpers import REPO_ROOT
from tests.web.conftest import default_viewport, until

AXE_VERSION = "4.14"
# A desktop's window and a phone's, in CSS pixels.
SIZES = ((1280, 800), (390, 844))
PREFIX = REPO_ROOT / ".cache" / "axe-core"
SOURCE = PREFIX / "node_modules" / "axe-core" / "axe.min.js"
# What a person cannot get past: the impacts the page must have none of.
BLOCKING = ("serious", "critical")


def axe_source() -> str:
    """axe-core's script, installed with npm on first use (one installer at a time)."""
    PREFIX.mkdir(parents=True, exist_ok=True)
    with open(PREFIX / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not SOURCE.exists():
            subprocess.run(
                ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix",
                 str(PREFIX), f"axe-core@{AXE_VERSION}"],
                check=True, capture_output=True, timeout=300,
            )  # fmt: skip
    return SOURCE.read_text(encoding="utf-8")


def blocking_violations(
    driver: WebDriver, source: str, within: str | None = None
) -> list[dict[str, Any]]:
    """The serious and critical violations axe finds in the document the driver is on (a
    frame's, after `switch_to.frame`), or in the part `within` selects: rule id, impact,
    and the elements it names."""
    if not driver.execute_script("return typeof window.axe === 'object'"):
        driver.execute_script(source)
    found = driver.execute_async_script(
        """
        const within = arguments[0];
        const done = arguments[arguments.length - 1];
        axe.run(within ? document.querySelector(within) : document, {resultTypes: ['violations']})
          .then((r) => done(r.violations.map((v) => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5)}))))
          .catch((e) => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));
        """,
        within,
    )
    return [v for v in found if v["impact"] in BLOCKING]


def page_and_frame_violations(driver: WebDriver, source: str) -> dict[str, list[dict[str, Any]]]:
    """The blocking violations of the page and of the app's surface framed in it (axe is
    run inside the frame too: the page's run does not enter a sandboxed frame)."""
    found = {"page": blocking_violations(driver, source)}
    frame = driver.find_element(By.CSS_SELECTOR, "iframe.surface")
    driver.switch_to.frame(frame)
    try:
        found["surface"] = blocking_violations(driver, source)
    finally:
        driver.switch_to.default_content()
    return found


def violations_at_sizes(
    driver: WebDriver,
    source: str,
    ready: Callable[[WebDriver], Any],
    name: str,
    within: str | None = None,
) -> dict[str, Any]:
    """The blocking violations at each of `SIZES` (in the part `within` selects, if given),
    once `ready` holds there (it may act to bring what is checked into view). With
    LINEUP_SCREENSHOTS set, each is saved there as `NAME-WxH.png` for a person to look at."""
    found = {}
    folder = os.environ.get("LINEUP_SCREENSHOTS")
    for width, height in SIZES:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
        )
        until(driver, ready)
        found[f"{width}x{height}"] = blocking_violations(driver, source, within)
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(Path(folder) / f"{name}-{width}x{height}.png"))
    default_viewport(driver)
    return found
