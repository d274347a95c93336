"""The tool policy, edited through the settings app and `lineup settings policy --set`: a
good policy is in force at once (the agent is given a new inventory revision without the
denied tool, and the reason is shown), a broken one is refused with its code and one
sentence and nothing changes: not the file, not the revision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import conversation_open, new_revision, revision_of, sent, tools_of

from .helpers import KEEPER, SettingsUi, install_keeper, settings, settings_json

POLICY = "tool_policy.json"


async def _published(stack: Stack, revision: int) -> list[str]:
    """The methods of the inventory the agent is given at `revision`, once it has it (the
    tool router commits a revision before the transport hands it over)."""

    def given() -> dict[str, Any] | None:
        inventories = sent(stack, "lineup.inventory")
        at = [e for e in inventories if e["payload"]["revision"] == str(revision)]
        return at[0] if at else None

    envelope = await wait_for(given, 30, f"the inventory at revision {revision} given")
    return [tool["method"] for tool in envelope["payload"]["tools"]]


def _visibility(view: dict[str, Any], method: str) -> dict[str, Any]:
    [inventory] = [i for i in view["inventories"] if i["conversation_id"] == CONVERSATION]
    return next(e for e in inventory["visibility"] if e["method"] == method)


async def test_a_policy_edit_changes_what_the_agent_sees(
    stack: Stack, keeper: tuple[Path, Path], tmp_path: Path
) -> None:
    data_dir = stack.data_dir
    _, first = await conversation_open(stack)
    await install_keeper(data_dir, keeper)
    before = await new_revision(stack, first)
    assert "keeper.note" in tools_of(stack)

    # Denied from the settings app: in force at once, a new revision without the tool.
    ui = SettingsUi(data_dir)
    outcome = await ui.act("set_policy", policy={"deny": [f"{KEEPER}/*"]})
    assert outcome["ok"], outcome
    denied = int(outcome["result"]["revisions"][CONVERSATION])
    assert denied > before
    assert await new_revision(stack, before) == denied
    assert "keeper.note" not in tools_of(stack)
    assert "keeper.note" not in await _published(stack, denied)
    assert json.loads((data_dir / POLICY).read_text()) == {"deny": ["keeper/*"]}
    shown = ui.view()["policy"]
    assert shown["policy"] == {"deny": ["keeper/*"]}
    note = _visibility(shown, "keeper.note")
    assert (note["visible"], note["reason"]) == (
        False,
        "denied by tool policy rule deny[1] (keeper/*)",
    )
    assert [
        (a["code"], a["source"]) for a in stack.audit() if a["code"].startswith("tool_policy")
    ] == [("tool_policy.replace", "tool_router")]

    await _broken_policies_change_nothing(stack, ui, tmp_path, denied)

    # Allowed again with the CLI: the tool is back, in a newer revision.
    good = tmp_path / "good.json"
    good_policy = {"allow": ["keeper/*", "chat/*"], "capabilities": {"deny": ["keeper/*"]}}
    good.write_text(json.dumps(good_policy))
    result = await settings_json(data_dir, "policy", "--set", good)
    allowed = int(result["revisions"][CONVERSATION])
    assert allowed > denied
    assert await new_revision(stack, denied) == allowed
    assert "keeper.note" in await _published(stack, allowed)
    view = await settings_json(data_dir, "policy")
    assert view["policy"] == good_policy
    assert _visibility(view, "keeper.note")["visible"] is True

    # What was written is what a tool router killed and restarted reads: the same tools, so
    # the agent is given no new revision.
    assert stack.kill("tool_router")
    view = await settings_json(data_dir, "policy")
    assert view["policy"] == good_policy and view["broken"] is None
    assert _visibility(view, "keeper.note")["visible"] is True
    assert revision_of(stack) == allowed


async def _broken_policies_change_nothing(
    stack: Stack, ui: SettingsUi, tmp_path: Path, revision: int
) -> None:
    """From the app and from the CLI: refused with one sentence; not the file, not the
    revision changes."""
    data_dir = stack.data_dir
    written = (data_dir / POLICY).read_bytes()
    outcome = await ui.act("set_policy", policy={"deny": [3]})
    assert (outcome["ok"], outcome["code"]) == (False, "invalid_payload"), outcome
    assert outcome["detail"] == (
        "the policy cannot be used: deny[1]: a rule is a string or an object with a `tool` glob"
    )
    outcome = await ui.act("set_policy", policy="deny everything")
    assert (outcome["ok"], outcome["code"]) == (False, "invalid_payload"), outcome
    # The capabilities section is the capability gateway's to judge.
    outcome = await ui.act(
        "set_policy", policy={"deny": ["keeper/*"], "capabilities": {"allow": "file.save"}}
    )
    assert (outcome["ok"], outcome["code"]) == (False, "invalid_payload"), outcome
    assert outcome["detail"] == (
        "the policy cannot be used: capabilities.allow: must be a list of rules"
    )
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"allow": "keeper/*"}))
    code, out, err = await settings(data_dir, "policy", "--set", broken)
    assert code == 1, out + err
    assert err.strip() == (
        f"error: the policy in {broken} was refused, nothing changed: the policy cannot be"
        " used: allow: must be a list of rules; fix the file and run this again"
    )
    not_json = tmp_path / "not.json"
    not_json.write_text('{"deny": [')
    code, out, err = await settings(data_dir, "policy", "--set", not_json)
    assert code == 2 and "is not JSON (line 1, column 11" in err and "nothing changed" in err, err
    code, out, err = await settings(data_dir, "policy", "--set", tmp_path / "absent.json")
    assert code == 2 and "cannot read" in err and "Traceback" not in err, err
    assert (data_dir / POLICY).read_bytes() == written
    assert revision_of(stack) == revision
    assert (await settings_json(data_dir, "policy"))["broken"] is None
