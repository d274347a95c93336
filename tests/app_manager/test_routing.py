"""The registry decides what the router lets through: an agent's
message for an app that is disabled gets `app_disabled`, for one that was removed
`app_not_installed`; neither is silent, neither reaches an app, every actor keeps running."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .conftest import Bundles, lineup


def _app(stack: Stack, *args: str | Path) -> int:
    return lineup("app", *args, "--data-dir", stack.data_dir)[0]


async def test_disabled_and_removed_apps_get_definite_rejections(
    stack: Stack, bundles: Bundles
) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(bundles.keys / "publisher.pub", stack.data_dir / "trusted_keys")
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await wait_for(lambda: len(stack.timeline()) == 1, 30, "the greeting")

    def for_pomodoro() -> dict[str, object]:
        return agent.envelope(
            "lineup.message", CONVERSATION, {"text": "for the timer"}, app_scope="pomodoro"
        )

    async def rejected(envelope: dict[str, object]) -> str:
        """Submit, and wait for the router's verdict before the registry changes again."""
        await agent.submit(envelope)

        def code() -> str | None:
            return {r["message_id"]: r["code"] for r in stack.audit()}.get(str(envelope["id"]))

        return await wait_for(code, 30, f"the verdict on {envelope['id']}")

    assert await rejected(for_pomodoro()) == "app_not_installed"
    assert _app(stack, "install", bundles.v1) == 0  # installed, not enabled
    assert await rejected(for_pomodoro()) == "app_disabled"
    assert _app(stack, "enable", "pomodoro") == 0
    assert await rejected(for_pomodoro()) == "not_subscribed"  # it takes tool calls only
    assert _app(stack, "disable", "pomodoro") == 0
    assert await rejected(for_pomodoro()) == "app_disabled"
    assert _app(stack, "remove", "pomodoro", "--yes") == 0
    assert await rejected(for_pomodoro()) == "app_not_installed"
    assert [item["text"] for item in stack.timeline()] == ["hello"]
    actors = {a["name"]: a for a in stack.control({"type": "actors"})["actors"]}
    assert all(a["restarts"] == 0 for a in actors.values())
