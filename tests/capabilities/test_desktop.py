"""`notification.show` on a desktop: a real session bus with Debian's notification server
(dunst, on a screenless X server), read back from dunst's own history. The app's title and
the notification's title and text arrive as LineUp's; a gateway killed after showing one
ends it `in_doubt`, never shown twice; with no service on the bus, or no bus, the desktop
shows nothing and the next way is taken."""

from __future__ import annotations

from pathlib import Path

import trio

from actors.capability_gateway._notifications import desktop_service, show_on_desktop
from tests.app_manager.conftest import lineup
from tests.desktop import bus_only, desktop
from tests.runtime.helpers import Stack

from .helpers import (
    AFTER_EFFECT,
    answer,
    ask,
    asked,
    audit_of,
    card_for,
    crashing_once,
    keeper_ready,
    outcome,
    requests,
)


async def test_a_notification_reaches_the_desktop_once_also_across_a_kill(
    stack: Stack, keeper: tuple[Path, Path], tmp_path: Path
) -> None:
    with desktop(tmp_path / "desktop") as shown:
        env = {**crashing_once(tmp_path / "once"), "DBUS_SESSION_BUS_ADDRESS": shown.bus}
        agent = await keeper_ready(stack, keeper, env=env)
        await ask(agent, "d-1", "notification.show", {"title": "Tea", "text": "ready"})
        answer(stack, await card_for(stack, "notification.show"), "always")
        # Shown, then the gateway killed before it recorded that: in doubt, not shown again.
        assert await outcome(stack, "d-1") == {"status": "in_doubt", "output": None}
        assert (tmp_path / "once" / AFTER_EFFECT).exists()
        first = {"appname": "LineUp", "summary": "Keeper: Tea", "body": "ready"}
        assert await trio.to_thread.run_sync(shown.shown) == [first]

        again = await asked(agent, "d-2", "notification.show", input={"text": "again"})
        assert again == {"status": "completed", "output": {"shown": True}}
        second = {"appname": "LineUp", "summary": "Keeper", "body": "again"}
        assert await trio.to_thread.run_sync(shown.shown) == [first, second]
        # What the user is told the host uses now.
        code, out, err = await trio.to_thread.run_sync(
            lambda: lineup("settings", "show", "--data-dir", stack.data_dir)
        )
        assert code == 0 and "the desktop's notification service (dunst)" in out, out + err
    request_id = requests(stack)[-1]["request_id"]
    assert (await audit_of(stack, request_id))[-1] == "capability.completed"
    served = [a["detail"] for a in stack.audit() if a["message_id"] == request_id][-1]
    assert served.endswith("shown by the desktop's notification service (dunst)"), served
    assert not (stack.data_dir / "notifications.jsonl").exists()  # nothing for the terminal


async def test_without_a_service_or_a_bus_the_desktop_shows_nothing(tmp_path: Path) -> None:
    with bus_only(tmp_path / "bus") as bus:
        assert await desktop_service(bus.env) is None
        assert await show_on_desktop(bus.env, "Keeper", "ready") is None
    assert await desktop_service({}) is None
    gone = {"DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path / 'no-bus'}"}
    assert await show_on_desktop(gone, "Keeper", "ready") is None
