"""`lineup debug why ID`: one message followed from the AppServer through the mailboxes to
the app (agent → chat), and an outbox item from the user's chat to the AppServer's verdict,
with the runtime up and again with it stopped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .helpers import CONVERSATION, Stack, wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]


def why(data_dir: Path, message_id: str, *, as_json: bool) -> tuple[int, str]:
    args = ["debug", "why", message_id, "--data-dir", str(data_dir)]
    result = subprocess.run(
        [sys.executable, "-m", "lineup.cli", *args, *(["--json"] if as_json else [])],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "PYTHONPATH": str(REPO_ROOT)},
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stdout


def path_of(data_dir: Path, message_id: str) -> dict[str, Any]:
    code, out = why(data_dir, message_id, as_json=True)
    assert code == 0, out
    value: dict[str, Any] = json.loads(out)
    return value


async def test_why_follows_an_agent_message_to_the_chat(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    envelope = agent.envelope("lineup.message", CONVERSATION, {"text": "hello", "format": "plain"})
    assert (await agent.enqueue(envelope).verdict()).status == "accepted"
    await wait_for(stack.timeline, 30, "the message in the chat")
    message_id = envelope["id"]

    def delivered() -> dict[str, Any] | None:
        # Every hop done in the file: a running supervisor writes acks that came alone
        # with its next batch, or half a second later.
        path = path_of(stack.data_dir, message_id)
        hops = {(h["from"], h["to"], h["type"]): h for h in path["mailbox"]}
        hop = hops.get(("router", "app.chat", "app.deliver"))
        if hop is None or any(h["state"] != "done" for h in path["mailbox"]):
            return None
        return path

    path = await wait_for(delivered, 30, "the delivery to the chat and every hop, done")
    assert path["runtime"] == "running"
    stored = path["store"]["message"]
    assert stored["seq"] >= 1 and stored["conversation_id"] == CONVERSATION
    assert stored["sender_kind"] == "agent" and stored["app_scope"] == "chat"
    hops = [(h["from"], h["to"]) for h in path["mailbox"]]
    # From the transport to the router, stored, then delivered to the chat, in that order.
    assert hops.index(("transport", "router")) < hops.index(("router", "store"))
    assert hops.index(("router", "store")) < hops.index(("router", "app.chat"))
    assert [e["kind"] for e in path["apps"] if e["app"] == "chat"] == ["agent"]
    assert all(h["attempts"] >= 1 for h in path["mailbox"])

    code, text = why(stack.data_dir, message_id, as_json=False)
    assert code == 0
    assert f"seq {stored['seq']}" in text and "router -> app.chat app.deliver [done" in text
    assert "app chat: agent lineup.message" in text

    # Stopped: the same path, from the files.
    assert stack.runtime is not None
    stack.runtime.stop()
    stopped = path_of(stack.data_dir, message_id)
    assert stopped["runtime"] == "stopped"
    assert stopped["mailbox"] == path["mailbox"] and stopped["store"] == path["store"]


async def test_why_follows_an_outbox_item_to_its_verdict(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    await stack.start_agent()
    stack.user_says("hi agent")

    def the_users_item() -> dict[str, Any] | None:
        # Settled in the store, and the verdict applied by the chat (which hears it after).
        for item in stack.outbox():
            path = path_of(stack.data_dir, item["key"])
            outbox = path["store"]["outbox"]
            actions = [e for e in path["apps"] if e["app"] == "chat" and e["kind"] == "action"]
            # The row listed above may predate the settle the path shows: judge the path.
            if outbox["origin"] == "chat" and actions and actions[0]["state"] != "pending":
                return {"key": item["key"], "seq": outbox["seq"], "state": outbox["state"]}
        return None

    item = await wait_for(the_users_item, 30, "the user's message settled and its verdict applied")
    path = path_of(stack.data_dir, item["key"])
    outbox = path["store"]["outbox"]
    assert outbox["state"] == "accepted" and item["seq"] is not None
    assert outbox["seq"] == item["seq"]
    assert [i["seq"] for i in stack.outbox() if i["key"] == item["key"]] == [item["seq"]]
    assert outbox["conversation_id"] == CONVERSATION
    types = [h["type"] for h in path["mailbox"]]
    assert "router.action" in types and "store.outbox.settle" in types
    actions = [e for e in path["apps"] if e["app"] == "chat" and e["kind"] == "action"]
    assert actions and actions[0]["state"] == "accepted"
    code, text = why(stack.data_dir, item["key"], as_json=False)
    assert code == 0
    assert f"accepted as seq {item['seq']}" in text


def test_why_of_an_unknown_id_says_so(tmp_path: Path) -> None:
    (tmp_path / "mailbox.db").write_bytes(b"")
    code, text = why(tmp_path, "NOSUCHID", as_json=False)
    assert code == 1
    assert "nothing in the mailboxes" in text
