"""Capability grants, seen and revoked through the settings app and `lineup settings`: the
user grants an app a capability "always" on its consent card, the settings app lists what
the capability gateway holds, a revocation through it removes the grant (the gateway's and
its row), and the app's next request asks the user again."""

from __future__ import annotations

from pathlib import Path

from tests.capabilities.helpers import answer, ask, card_for, gateway_rows, keeper_ready, outcome
from tests.runtime.helpers import Stack
from tests.tools.helpers import Agent

from .helpers import SettingsUi, settings, settings_json

NOTICE = {"title": "tea", "text": "the kettle has boiled"}


def _granted(stack: Stack) -> list[tuple[str, str, str]]:
    query = "SELECT app_scope, capability, scope FROM capability_grants ORDER BY 1, 2"
    return gateway_rows(stack, query)


async def _grant_always(stack: Stack, agent: Agent, call: str, capability: str) -> None:
    """The app asks, the user answers "always" on the card, the effect runs."""
    await ask(agent, call, capability, input=NOTICE)
    answer(stack, await card_for(stack, capability), "always")
    assert (await outcome(stack, call))["status"] == "completed"


async def test_revoking_through_settings_removes_a_grant(
    stack: Stack, asker: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, asker)
    data_dir = stack.data_dir
    await _grant_always(stack, agent, "n1", "notification.show")
    assert _granted(stack) == [("keeper", "notification.show", "always")]

    # What the gateway holds, shown by the settings app and by the CLI alike.
    ui = SettingsUi(data_dir)
    outcome_ = await ui.act("grants")
    assert (outcome_["ok"], outcome_["grants"]) == (True, 1), outcome_
    [grant] = ui.view()["grants"]
    assert (grant["app_scope"], grant["capability"], grant["scope"]) == (
        "keeper",
        "notification.show",
        "always",
    )
    assert await settings_json(data_dir, "grants") == [grant]
    code, out, err = await settings(data_dir, "grants")
    assert code == 0 and "notification.show" in out and "always" in out, out + err

    # Revoked in the settings app: gone from the gateway and its row.
    outcome_ = await ui.act("revoke", app_scope="keeper", capability="notification.show")
    assert (outcome_["ok"], outcome_["result"]) == (True, {"revoked": 1}), outcome_
    assert ui.view()["grants"] == []
    assert _granted(stack) == []
    assert await settings_json(data_dir, "grants") == []
    code, out, err = await settings(data_dir, "revoke", "keeper", "notification.show")
    assert code == 1 and "nothing to revoke: keeper holds no capability grant" in err, err

    # The app's next request asks the user again; granted again, revoked with the CLI.
    await _grant_always(stack, agent, "n2", "notification.show")
    code, out, err = await settings(data_dir, "revoke", "keeper", "notification.shw")
    assert code == 1 and "did you mean 'notification.show'?" in err, err
    code, out, err = await settings(data_dir, "revoke", "keeper", "notification.show")
    assert code == 0 and "revoked notification.show for keeper" in out, out + err
    assert _granted(stack) == []
