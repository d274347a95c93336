"""The settings app's types are the user's: an installed app that sends them (the store's
overview of every app's data, the tool policy seen and replaced, the grants listed and
revoked, an input to the settings app itself) is refused at the supervisor's door before
anything is stored, through the SDK too, and nothing changes."""

from __future__ import annotations

from actors.app_manager.registry import read_apps
from tests.runtime.helpers import CONVERSATION, texts, wait_for
from tests.settings.helpers import settings_statistics

from .conftest import Hostile

POLICY = '{"deny": ["pomodoro/*"]}\n'
DOOR_REFUSED = (
    "overview",
    "policy",
    "replace policy",
    "grants",
    "revoke",
    "as the user",
    "sdk: replace policy",
    "sdk: app data",
)


async def test_an_app_cannot_reach_the_settings(hostile: Hostile) -> None:
    stack = hostile.stack
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "before")
    await wait_for(lambda: texts(stack.timeline()) == ["before"], 30, "the first message")
    (hostile.data_dir / "tool_policy.json").write_text(POLICY)
    await hostile.install({"attacks": ["reach_settings"]})
    await hostile.launch()
    outcomes = (await hostile.wait_report(60))["results"]["reach_settings"]["outcomes"]

    for label in DOOR_REFUSED:
        assert outcomes[label] == "refused:sender_not_allowed", (label, outcomes)
    # The app manager's own rule: the default app is the user's choice.
    assert outcomes["sdk: set default"] == "refused:sender_not_allowed", outcomes
    assert stack.runtime is not None
    refused = stack.runtime.actors()["app.hostile"]["refused"]
    assert refused["sender_not_allowed"] >= len(DOOR_REFUSED), refused

    # Nothing changed: the policy file, the default app; no owner acted; the input never
    # reached the settings app (its own check would have counted it).
    assert (hostile.data_dir / "tool_policy.json").read_text() == POLICY
    assert read_apps(hostile.data_dir)["settings"].get("default_app") is None
    acted = hostile.runtime_rows(
        "SELECT code FROM audit WHERE code IN ('tool_policy.replace', 'capability.grant_revoked')"
    )
    assert acted == []
    the_settings_app = settings_statistics(hostile.data_dir)
    assert (the_settings_app["outcomes"], the_settings_app["refused_inputs"]) == ([], 0)
