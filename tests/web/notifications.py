"""The page's side of an app's notification, as a test reads it: the browser's permission set
through the DevTools protocol (as the user's answer to the browser), the Notification API's
constructor wrapped to record what the page shows with it, and the page's own notes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

# The browser's Notification API, wrapped: each notification the page makes is recorded,
# then made by the browser's own constructor.
RECORD = """
  window.shownNotifications = [];
  const Browser = window.Notification;
  window.Notification = class extends Browser {
    constructor(title, options) {
      super(title, options);
      window.shownNotifications.push({ title: title, body: options.body });
    }
  };
"""


def permit(driver: WebDriver, port: int, *, allowed: bool) -> None:
    """The user's answer to the browser for the page's origin: notifications allowed, or
    denied."""
    origin = f"http://127.0.0.1:{port}"
    if allowed:
        driver.execute_cdp_cmd(
            "Browser.grantPermissions", {"origin": origin, "permissions": ["notifications"]}
        )
    else:
        driver.execute_cdp_cmd(
            "Browser.setPermission",
            {"origin": origin, "permission": {"name": "notifications"}, "setting": "denied"},
        )


def allow_offered(driver: WebDriver) -> bool:
    return bool(driver.find_element(By.ID, "allow-notifications").is_displayed())


def recorded(driver: WebDriver) -> list[dict[str, Any]]:
    return list(driver.execute_script("return window.shownNotifications || [];"))


def notes(driver: WebDriver) -> list[str]:
    """The page's own notes, the newest first, as a person reads them."""
    return [n.text for n in driver.find_elements(By.CSS_SELECTOR, "#notes .note div")]


def answer_consent(driver: WebDriver, choice: str) -> bool:
    """The user presses `choice` on the open consent card in the page's chat."""
    for button in driver.find_elements(By.CSS_SELECTOR, ".card.consent .actions button"):
        if button.text == choice and button.is_displayed():
            button.click()
            return True
    return False


def look(driver: WebDriver, name: str) -> None:
    """With LINEUP_SCREENSHOTS set, the page saved there as PNG for a person to look at, on a
    laptop's screen and a phone's."""
    folder = os.environ.get("LINEUP_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for width, height in ((1280, 800), (390, 844)):
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
        )
        driver.save_screenshot(str(Path(folder) / f"{name}-{width}x{height}.png"))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
