"""An artifact made in a tool call: kept by the store (a row and a whole file, named by the
store's id), handed to the agent as a reference and never a path, shown in the chat,
readable by its app and by the chat, listed by the CLI, bounded by its quotas, kept while
the app is disabled and deleted with it when it is removed. Every assertion reads an
independent record: runtime.db, the artifact files, the AppServer's store (what the agent
is given), the chat's log, the CLI's output."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import trio

from tests.app_manager.conftest import lineup
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import Agent, app

from .helpers import assert_whole, chat_reads, cli, files, made, stored, toolbox_with_artifacts

REFERENCE = {"artifact_id", "title", "media_type", "size"}
LIMITS = {"max_bytes": 64 * 1024, "max_total_bytes": 200 * 1024, "max_count": 6}


def _stream_final(stack: Stack, call_id: str) -> str:
    """The final envelope of a call as the AppServer stores it for the agent (its text)."""
    path = stack.appserver_dir / "appserver.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT body FROM messages WHERE type IN ('lineup.tool.result', 'lineup.tool.error')"
        ).fetchall()
    found = [body for (body,) in rows if json.loads(body)["correlation"]["call_id"] == call_id]
    assert len(found) == 1, found
    return str(found[0])


async def _in_stream(stack: Stack, call_id: str) -> str:
    def final() -> str | None:
        try:
            return _stream_final(stack, call_id)
        except AssertionError:
            return None

    return await wait_for(final, 30, f"the final of {call_id} in the agent's stream")


async def _make(agent: Agent, call_id: str, **arguments: Any) -> dict[str, Any]:
    """`box.artifact` with these arguments: its output (the reference, or the refusal)."""
    row = await agent.call(call_id, "box.artifact", arguments=arguments)
    assert row["state"] == "succeeded", row
    return dict(row["output"])


async def _the_chat_shows(stack: Stack, reference: dict[str, Any]) -> None:
    """The chat's timeline shows the reference with the call; so does its history command."""
    shown = await wait_for(
        lambda: next(
            (i for i in stack.timeline() if i["id"] == "call_make" and i.get("artifact")), None
        ),
        30,
        "the call's artifact in the chat's timeline",
    )
    assert shown["artifact"] == reference and shown["state"] == "succeeded"
    code, out, err = lineup(
        "chat", "history", "--conversation", CONVERSATION, "--data-dir", stack.data_dir
    )
    assert code == 0, err
    assert "artifact “Notes” (text/plain, 5,000 bytes)" in out


def _the_cli_lists(stack: Stack, artifact_id: str, sha256: str) -> None:
    """Listed (and by conversation), shown; an unknown id said in one sentence."""
    code, out, err = cli(stack, "list", "--json")
    assert code == 0, err
    assert {r["artifact_id"] for r in json.loads(out)} == set(stored(stack))
    code, out, err = cli(stack, "list", "--conversation", CONVERSATION, "--json")
    assert code == 0, err
    assert [r["artifact_id"] for r in json.loads(out)] == [artifact_id]
    code, out, _ = cli(stack, "list", "--conversation", "conv-elsewhere")
    assert (code, out.strip()) == (0, "no artifacts in conversation 'conv-elsewhere'")
    code, out, err = cli(stack, "show", artifact_id)
    assert code == 0, err
    assert "Notes" in out and "text/plain" in out and sha256 in out
    code, out, err = cli(stack, "show", "art_nothing")
    assert code == 1 and not out
    assert err.startswith("error: no artifact 'art_nothing' in ") and err.count("\n") == 1


def _the_user_saves(stack: Stack, artifact_id: str) -> Path:
    """Saved into downloads under its title, not twice when saved again, under a name of the
    user's made safe; an unknown id said in one sentence. The downloads directory."""
    downloads = stack.data_dir / "downloads"
    code, out, err = cli(stack, "save", artifact_id)
    assert (code, out.strip()) == (0, f"saved as {downloads / 'Notes'}"), err
    assert cli(stack, "save", artifact_id)[:2] == (0, out)
    code, out, err = cli(stack, "save", artifact_id, "--name", "../../escaped.txt", "--json")
    assert code == 0, err
    assert json.loads(out) == {"artifact_id": artifact_id, "name": "escaped.txt", "size": 5000}
    assert sorted(p.name for p in downloads.iterdir()) == ["Notes", "escaped.txt"]
    assert (downloads / "Notes").read_bytes() == made(5000)
    assert not (stack.data_dir.parent / "escaped.txt").exists()
    code, out, err = cli(stack, "save", "art_" + "0" * 26)
    assert code == 1 and not out
    assert err.startswith("error: no artifact 'art_") and err.count("\n") == 1
    saved = [a for a in stack.audit() if a["code"] == "artifact.saved"]
    assert [a["detail"].rsplit(" as ", 1)[1] for a in saved] == ["Notes", "Notes", "escaped.txt"]
    return downloads


async def test_an_artifact_reaches_the_agent_as_a_reference_and_goes_with_its_app(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    agent = await toolbox_with_artifacts(stack, toolbox)
    output = await _make(agent, "call_make", size=5000, media_type="text/plain", title="Notes")
    reference = output["artifact"]
    assert set(reference) == REFERENCE and reference["size"] == 5000
    artifact_id = reference["artifact_id"]

    # The store's record: a row for the toolbox in the call's conversation, a whole file
    # named by the id, the bytes the tool made.
    row = stored(stack)[artifact_id]
    assert (row["app_scope"], row["conversation_id"]) == ("toolbox", CONVERSATION)
    assert row["instance_id"] == f"toolbox:{CONVERSATION}"
    assert row["sha256"] == hashlib.sha256(made(5000)).hexdigest()
    assert files(stack)[artifact_id] == made(5000)
    assert_whole(stack)

    # What the agent is given: the reference and nothing else, no path anywhere.
    text = await _in_stream(stack, "call_make")
    assert json.loads(text)["payload"]["output"] == {"artifact": reference}
    assert str(stack.data_dir) not in text and "artifacts/" not in text

    # Its app reads it back and lists it; the chat reads it too.
    read = (
        await agent.call("call_read", "box.read_artifact", arguments={"artifact_id": artifact_id})
    )["output"]
    assert read["read_sha256"] == row["sha256"] and read["title"] == "Notes"
    listed = (await agent.call("call_list", "box.artifacts"))["output"]
    assert listed == {"ids": [artifact_id]}
    # Listed a page at a time: more than a page, in the order they were made.
    many = await agent.call("call_many", "box.artifacts_many", arguments={"count": 150})
    assert many["output"] == {"made": 150}, many
    listed = (await agent.call("call_list_all", "box.artifacts"))["output"]
    # The store's ids rise in the order it makes them.
    assert listed["ids"] == sorted(listed["ids"]) and listed["ids"][0] == artifact_id
    assert set(listed["ids"]) == set(stored(stack)) and len(listed["ids"]) == 151
    by_chat = await chat_reads(stack, artifact_id)
    assert by_chat["read_sha256"] == row["sha256"] and by_chat["app_scope"] == "toolbox"
    assert (await chat_reads(stack, "art_" + "0" * 26)) == {"refused": "artifact_not_found"}

    await _the_chat_shows(stack, reference)
    _the_cli_lists(stack, artifact_id, row["sha256"])
    downloads = await trio.to_thread.run_sync(_the_user_saves, stack, artifact_id)

    # Kept while the app is disabled; deleted, rows and files, when it is removed.
    kept = set(stored(stack))
    await trio.to_thread.run_sync(app, stack, "disable", "toolbox")
    assert set(stored(stack)) == kept and set(files(stack)) == kept
    await trio.to_thread.run_sync(app, stack, "remove", "toolbox", "--yes")
    assert stored(stack) == {}
    # The files go right after the rows' commit.
    await wait_for(lambda: files(stack) == {}, 10, "the removed app's artifact files gone")
    # What the user saved is the user's: it stays.
    assert (downloads / "Notes").read_bytes() == made(5000)
    assert cli(stack, "list")[1].strip() == "no artifacts"


async def test_oversize_bad_media_types_bad_titles_and_quotas_are_refused(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    agent = await toolbox_with_artifacts(stack, toolbox, limits=LIMITS)
    largest = LIMITS["max_bytes"]
    refusals: dict[str, tuple[dict[str, Any], str]] = {
        "one byte over": ({"size": largest + 1}, "too_large"),
        # Over an app's packed body: the supervisor refuses it before it is stored.
        "over a message": ({"size": 300 * 1024}, "too_large"),
        "no subtype": ({"media_type": "text"}, "invalid_payload"),
        "parameters": ({"media_type": "text/plain; charset=utf-8"}, "invalid_payload"),
        "a path": ({"media_type": "../../etc/passwd"}, "invalid_payload"),
        "a newline after it": ({"media_type": "text/plain\n"}, "invalid_payload"),
        "a type not allowed": ({"media_type": "multipart/mixed"}, "invalid_payload"),
        "empty title": ({"title": ""}, "invalid_payload"),
        "long title": ({"title": "t" * 201}, "invalid_payload"),
        "control in title": ({"title": "red\x1b[31m"}, "invalid_payload"),
        "bidi in title": ({"title": "gpj.\u202eexe"}, "invalid_payload"),
    }
    for n, (label, (change, code)) in enumerate(refusals.items()):
        arguments = {"size": 10, "media_type": "text/plain", "title": "x", **change}
        output = await _make(agent, f"call_refused_{n}", **arguments)
        assert output == {"refused": code}, label
    assert stored(stack) == {} and files(stack) == {}
    audited = [a for a in stack.audit() if a["source"] == "app.toolbox"]
    assert audited and audited[0]["code"] == "too_large"

    # The bytes an app keeps: three of the largest fit, a fourth does not.
    for n in range(3):
        made_ = await _make(agent, f"call_big_{n}", size=largest, media_type="image/png", title="b")
        assert set(made_["artifact"]) == REFERENCE
    assert await _make(agent, "call_big_3", size=largest, media_type="image/png", title="b") == {
        "refused": "quota_exceeded"
    }
    # How many it keeps: six in all.
    for n in range(3):
        assert "artifact" in await _make(
            agent, f"call_small_{n}", size=1, media_type="text/csv", title="s"
        )
    assert await _make(agent, "call_small_3", size=1, media_type="text/csv", title="s") == {
        "refused": "quota_exceeded"
    }
    assert len(stored(stack)) == 6
    assert_whole(stack)
