"""What the sample apps' end-to-end tests share: signed bundles of the real apps, the CLI
as the user runs it, the focus stack, and what a removal must leave behind (nothing).

Each app is built from its package in `apps/`, signed with a throwaway publisher key and
installed like any third-party app: no core-app shortcut is taken anywhere here.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from actors.app_manager.registry import read_apps
from actors.store import read_artifacts, read_session_data
from tests.app_manager.conftest import lineup
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import Stack, wait_for
from tests.web.axe import axe_source, page_and_frame_violations
from tests.web.conftest import (
    controls_in_view,
    default_viewport,
    in_browser,
    save_view,
    stage_in_view,
)

PUBLISHER = "sample"


@dataclass(frozen=True)
class SignedApp:
    scope: str
    bundle: Path
    key: Path  # the publisher's public key, for DATA_DIR/trusted_keys/


def signed_app(root: Path, package: str, scope: str) -> SignedApp:
    """Build `apps/<package>` into a bundle and sign it (the key pair made once in `root`)."""
    keys = root / "keys"
    if not (keys / f"{PUBLISHER}.key").exists():
        code, _, err = lineup("app", "keygen", "--out", keys, "--name", PUBLISHER)
        assert code == 0, err
    bundle = root / f"{package}.bundle"
    code, _, err = lineup("app", "build", REPO_ROOT / "apps" / package, "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", keys / f"{PUBLISHER}.key")
    assert code == 0, err
    code, _, err = lineup("app", "verify", bundle, "--trust", keys / f"{PUBLISHER}.pub")
    assert code == 0, err
    return SignedApp(scope, bundle, keys / f"{PUBLISHER}.pub")


class SampleApps:
    """The sample apps, each built and signed once a session (`signed_app`, one publisher's
    key in `root`) for every module that installs it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.signed: dict[str, SignedApp] = {}

    def __call__(self, package: str, scope: str) -> SignedApp:
        if package not in self.signed:
            self.signed[package] = signed_app(self.root, package, scope)
        return self.signed[package]


async def cli(stack: Stack, *args: str | Path) -> Any:
    """`lineup ARGS --data-dir D --json` as the user runs it; its JSON (exit 0 asserted)."""
    code, out, err = await trio.to_thread.run_sync(
        lambda: lineup(*args, "--data-dir", stack.data_dir, "--json")
    )
    assert code == 0, f"lineup {' '.join(map(str, args))}: {out} {err}"
    return json.loads(out) if out.strip() else None


async def install_enabled(stack: Stack, app: SignedApp) -> None:
    """Trust the publisher, then install the signed bundle and enable the app."""
    trusted = stack.data_dir / "trusted_keys"
    trusted.mkdir(parents=True, exist_ok=True)
    shutil.copy(app.key, trusted / f"{PUBLISHER}.pub")
    await cli(stack, "app", "install", app.bundle)
    await cli(stack, "app", "enable", app.scope)


def focus_stack(stack: Stack) -> list[str]:
    """The instances the user can return to, bottom to top (the top one is in front)."""
    return list(read_apps(stack.data_dir)["settings"].get("focus_stack") or [])


async def wait_foreground(stack: Stack, instance_prefix: str, timeout: float = 30) -> str:
    """The instance in front once its id starts with `instance_prefix` (e.g. `chat:`)."""

    def front() -> str | None:
        shown = focus_stack(stack)
        return shown[-1] if shown and shown[-1].startswith(instance_prefix) else None

    return await wait_for(front, timeout, f"{instance_prefix}... in front")


def leftovers(stack: Stack, scope: str) -> dict[str, Any]:
    """What the runtime still keeps of an app: empty in every field once it is removed."""
    records = [r for r in read_apps(stack.data_dir)["records"] if r["app_scope"] == scope]
    return {
        "records": records,
        "session_data": [r for r in read_session_data(stack.data_dir) if r["app_scope"] == scope],
        "artifacts": [a for a in read_artifacts(stack.data_dir) if a["app_scope"] == scope],
        "private_dir": (stack.data_dir / "apps" / scope).exists(),
    }


async def remove_confirmed(stack: Stack, scope: str) -> None:
    """`lineup app remove SCOPE --yes`, then wait until nothing of the app is left: no
    record, session data, artifact, private directory, or cached bundle."""
    (record,) = leftovers(stack, scope)["records"]
    cached = [
        stack.data_dir / "bundles" / digest
        for digest in (record.get("bundle_digest"), record.get("previous_digest"))
        if digest
    ]
    assert cached and all(path.exists() for path in cached)
    await cli(stack, "app", "remove", scope, "--yes")
    empty = {"records": [], "session_data": [], "artifacts": [], "private_dir": False}
    await wait_for(lambda: leftovers(stack, scope) == empty, 30, f"{scope} removed entirely")
    assert not any(path.exists() for path in cached)


def actor(stack: Stack, name: str) -> dict[str, Any]:
    return next(a for a in stack.control({"type": "actors"})["actors"] if a["name"] == name)


async def killed_and_back(stack: Stack, name: str) -> None:
    """SIGKILL the actor, then wait until its supervisor has it running again."""
    before = actor(stack, name)
    assert before["state"] == "running" and stack.kill(name)
    await wait_for(
        lambda: (
            (now := actor(stack, name))["restarts"] > before["restarts"]
            and now["state"] == "running"
        ),
        30,
        f"{name} restarted",
    )


async def owns_the_stage(browser: WebDriver) -> None:
    """The app in front owns the stage: the stage takes most of the window and the app's
    frame lies wholly in it at a desktop's size and a phone's, and the page itself does not
    scroll; every control of the app is in its frame's view, nothing of it scrolled away; a
    desktop docks the chat beside it, a phone shows the app alone; neither the page nor the
    app's surface has a serious or critical accessibility violation at either size."""
    source = axe_source()
    for width, height, chat_beside in ((1280, 800, True), (390, 844, False)):
        box = await in_browser(stage_in_view, browser, width, height)
        left, top, right, bottom = box["slot"]
        assert 0 <= left < right <= width and 0 <= top < bottom <= height, box
        assert right - left >= width / 2 and bottom - top >= height / 2, box
        assert left <= box["left"] < box["right"] <= right, box
        assert top <= box["top"] < box["bottom"] <= bottom, box
        assert not box["page_scrolls"], box
        controls = await in_browser(controls_in_view, browser)
        assert controls == {"outside": [], "scrolled": 0, "scrolls": False}, (width, controls)
        title = await in_browser(lambda: browser.find_element(By.ID, "stage-title").text)
        await in_browser(save_view, browser, f"{title}-{width}x{height}")
        assert box["chat_shown"] is chat_beside, box
        found = await in_browser(page_and_frame_violations, browser, source)
        assert found == {"page": [], "surface": []}, (width, found)
    await in_browser(default_viewport, browser)


def looked_at(driver: WebDriver, name: str) -> None:
    """With LINEUP_SCREENSHOTS set, the page saved there at a desktop's size and a phone's,
    for a person to look at."""
    folder = os.environ.get("LINEUP_SCREENSHOTS")
    if not folder:
        return
    for width, height in ((1280, 800), (390, 844)):
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
        )
        driver.execute_async_script(
            "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(done));"
        )
        driver.save_screenshot(str(Path(folder) / f"{name}-{width}x{height}.png"))
    default_viewport(driver)
