"""The hostile app against artifacts, beside the toolbox (both installed from signed bundles
through the CLI) and an agent that makes real calls. It must not read, list or describe the
toolbox's artifact, make one in a conversation that is not its own or in the toolbox's name,
nor hand the agent the toolbox's artifact or a path of its own as a tool result. Every
assertion reads an independent record: runtime.db (artifacts, calls, audit), the artifact
files, the AppServer's store (what the agent is given)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.artifacts.helpers import assert_whole, files, stored
from tests.runtime.helpers import wait_for
from tests.tools.conftest import toolbox  # noqa: F401 - the signed toolbox bundle
from tests.tools.helpers import Agent, finals, new_revision

from .app._app import STOLEN_PATH
from .conftest import Hostile
from .test_tools import _ready, _result

FLOOD = 1_000  # creates the store refuses, sent as fast as the channel takes them
ELSEWHERE = "conv-2"  # a conversation the toolbox is in and the hostile app is not
REFERENCE = {"artifact_id", "title", "media_type", "size"}


async def test_an_app_cannot_read_hand_or_make_another_apps_artifacts(
    hostile: Hostile,
    toolbox: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    stack = hostile.stack
    agent = await _ready(hostile, toolbox, {"attacks": ["steal_artifact"]})
    await agent.client.send_text(ELSEWHERE, "hello")
    await new_revision(stack, 0, ELSEWHERE)
    made = await agent.call(
        "call_victim",
        "box.artifact",
        arguments={"size": 2000, "media_type": "image/png", "title": "the toolbox's"},
        conversation=ELSEWHERE,
    )
    victim = made["output"]["artifact"]["artifact_id"]
    await hostile.launch()
    restarts = hostile.restarts()

    hostile.order("steal_artifact", {"victim": victim, "conversation": ELSEWHERE, "flood": FLOOD})
    result = await wait_for(
        lambda: _result(hostile, "steal_artifact"), 60, "the hostile app's artifact attacks"
    )
    assert "raised" not in result, result
    outcomes = result["outcomes"]
    # Another app's artifact and one that does not exist get the same answer: nothing tells
    # the app what others made. Its own it reads.
    assert outcomes["read victim"] == outcomes["read nobody's"] == "refused:ownership_mismatch"
    assert outcomes["read own"] == "accepted"
    assert outcomes["create elsewhere"] == "refused:ownership_mismatch"
    # Its scope is the sender the supervisor stamped: a body naming another is not a body the
    # store takes, and what only the tool router may ask is refused before it is stored.
    assert outcomes["create as toolbox"].startswith("refused:invalid_payload")
    assert outcomes["create with a sender"].startswith("refused:invalid_payload")
    # Nor does it make its own artifacts ones the store may let go to make room (the chat's
    # speech is kept so by the gateway alone), or keep one for the chat itself.
    assert outcomes["create replaceable"].startswith("refused:invalid_payload") and outcomes[
        "keep replaceable"
    ].startswith("refused:sender_not_allowed"), outcomes
    assert outcomes["list as toolbox"].startswith("refused:invalid_payload")
    assert outcomes["describe victim"] == "refused:sender_not_allowed"
    assert outcomes["save as the user"] == "refused:sender_not_allowed"
    assert not (stack.data_dir / "downloads").exists()
    own = result["own"]
    assert result["listed"] == [own["artifact_id"]]
    assert result["pages"] == {
        "after victim": [own["artifact_id"]],
        "after nobody's": [own["artifact_id"]],
    }
    rows = stored(stack)
    owners = {artifact_id: row["app_scope"] for artifact_id, row in rows.items()}
    assert owners == {victim: "toolbox", own["artifact_id"]: "hostile"}
    assert rows[own["artifact_id"]]["conversation_id"] == "conv-1"
    # Every refusal audited, at most once per sender every ten seconds with the count since:
    # the flood cost the store a row or two, not one each.
    assert outcomes["after the flood"] == "refused:ownership_mismatch"
    refused = [a for a in stack.audit() if a["source"] == "app.hostile"]
    assert refused and refused[0]["code"] == "ownership_mismatch", refused
    assert len(refused) <= 3, refused

    # As a tool result: the toolbox's artifact is refused, audited, and nothing of it (nor
    # the path) reaches the agent.
    mine = Agent(stack, agent.client, "hostile")
    row = await mine.call(
        "call_hand_victim", "hostile.hand_artifact", arguments={"artifact_id": victim}
    )
    assert (row["state"], row["code"]) == ("failed", "handler_failed"), row
    sent = json.dumps(finals(stack, "call_hand_victim"))
    assert victim not in sent and STOLEN_PATH not in sent
    audited = await stack.audited(lambda a: a["code"] == "handler_failed" and victim in a["detail"])
    assert "of toolbox" in audited[0]["detail"], audited
    # Its own artifact goes through as the store keeps it: no path, the true size.
    row = await mine.call(
        "call_hand_own", "hostile.hand_artifact", arguments={"artifact_id": own["artifact_id"]}
    )
    assert row["state"] == "succeeded", row
    assert row["output"] == {"artifact": own} and set(own) == REFERENCE and own["size"] == 4
    assert STOLEN_PATH not in json.dumps(finals(stack, "call_hand_own"))

    # The toolbox's artifact is as it was; no actor of the runtime was restarted by any of it.
    assert_whole(stack)
    assert hostile.restarts() == restarts
    # Removing the hostile app takes its artifacts, not the toolbox's.
    await hostile.app("remove", "hostile", "--yes")
    assert set(stored(stack)) == {victim}
    # The files go right after the rows' commit.
    await wait_for(lambda: set(files(stack)) == {victim}, 10, "the hostile app's files gone")
    assert_whole(stack)
