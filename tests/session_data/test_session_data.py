"""An app's session data through the SDK, with the runtime as a real process tree: get,
replace against a revision, two writers at once, subscribers that miss nothing and see
each revision once, and instances kept apart."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from tests.app_manager.conftest import lineup
from tests.runtime.helpers import CONVERSATION, Stack

from .helpers import SCOPE, notebook_ready, stored, summary

INSTANCE = f"{SCOPE}:{CONVERSATION}"


async def test_get_replace_and_a_stale_write(stack: Stack, notebook: tuple[Path, Path]) -> None:
    note = await notebook_ready(stack, notebook)
    assert await note.get() == {"data": None, "revision": 0}
    assert await note.replace({"title": "first", "items": [1, 2]}, 0) == {"revision": 1}
    assert await note.replace({"title": "second"}, 1) == {"revision": 2}
    # Made from revision 1, after revision 2 was written: refused, and the newer data stays.
    assert await note.replace({"title": "stale"}, 1) == {"refused": "revision_conflict"}
    assert await note.replace({"title": "ahead"}, 7) == {"refused": "revision_conflict"}
    assert await note.get() == {"data": {"title": "second"}, "revision": 2}
    assert stored(stack, INSTANCE) == {"data": {"title": "second"}, "revision": 2}
    row = summary(stack)[INSTANCE]
    assert (row["app_scope"], row["revision"], row["size_bytes"]) == (SCOPE, 2, 18)
    # Empty is a valid object too: that is how an app clears its data.
    assert await note.replace({}, 2) == {"revision": 3}
    assert await note.get() == {"data": {}, "revision": 3}
    # A person sees each instance's revision and size, never the data.
    code, out, err = await _lineup("app", "data", SCOPE, "--json", "--data-dir", stack.data_dir)
    assert code == 0, err
    assert [(r["instance_id"], r["revision"], r["size_bytes"]) for r in json.loads(out)] == [
        (INSTANCE, 3, 2)
    ]
    code, out, err = await _lineup("app", "data", "--data-dir", stack.data_dir)
    assert code == 0, err
    assert INSTANCE in out and "second" not in out
    code, out, err = await _lineup("app", "data", "--data-dir", stack.base / "nowhere")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no runtime data in" in err and "Traceback" not in err


async def test_two_writers_one_wins_and_a_subscriber_sees_each_revision_once(
    stack: Stack, notebook: tuple[Path, Path]
) -> None:
    note = await notebook_ready(stack, notebook)
    await note.ask("note.listen", {"name": "watcher"})
    for _ in range(5):
        race = await note.ask("note.race", {})
        outcomes = race["outcomes"]
        winners = [w for w, outcome in outcomes.items() if "revision" in outcome]
        losers = [w for w, outcome in outcomes.items() if "refused" in outcome]
        assert len(winners) == 1 and len(losers) == 1, outcomes
        assert outcomes[winners[0]] == {"revision": race["read"] + 1}
        assert outcomes[losers[0]] == {"refused": "revision_conflict"}
        assert (await note.get())["data"] == {"writer": winners[0]}
    frames = note.frames("watcher")
    # The snapshot at registration, then each of the five committed revisions, once, in
    # order, each with the data the winner wrote.
    assert [f["revision"] for f in frames] == [0, 1, 2, 3, 4, 5]
    assert frames[0]["data"] is None
    assert all(set(f["data"]) == {"writer"} for f in frames[1:])


async def test_a_subscriber_registered_between_a_get_and_a_replace_misses_nothing(
    stack: Stack, notebook: tuple[Path, Path]
) -> None:
    note = await notebook_ready(stack, notebook)
    rounds = (await note.ask("note.between", {"times": 30}))["rounds"]
    assert len(rounds) == 30
    for n, one in enumerate(rounds):
        written = one["read"] + 1
        assert one["read"] == n
        # Its first frame is the snapshot, taken before or after the replace; either way the
        # replaced revision is seen exactly once, and nothing goes backwards.
        assert one["seen"][0] in (one["read"], written), one
        assert one["seen"].count(written) == 1, one
        assert one["seen"] == sorted(set(one["seen"])), one


async def test_instances_are_kept_apart(stack: Stack, notebook: tuple[Path, Path]) -> None:
    note = await notebook_ready(stack, notebook)
    other = "conv-2"
    await note.agent.client.send_text(other, "hello")
    assert await note.replace({"here": 1}, 0) == {"revision": 1}
    # The same app in another conversation: another instance, its own data and revisions.
    assert await note.get(other) == {"data": None, "revision": 0}
    assert await note.replace({"there": 1}, 0, other) == {"revision": 1}
    assert await note.get() == {"data": {"here": 1}, "revision": 1}
    # The app's process may name any live instance of its own, and no other app's.
    assert await note.get(instance_id=f"{SCOPE}:{other}") == {"data": {"there": 1}, "revision": 1}
    for foreign in ("chat:main", "hostile:conv-1", "notebook"):
        assert await note.get(instance_id=foreign) == {"refused": "ownership_mismatch"}
        refused = await note.replace({"x": 1}, 0, instance_id=foreign)
        assert refused == {"refused": "ownership_mismatch"}
    assert await note.get(instance_id=f"{SCOPE}:made-up") == {"refused": "instance_not_found"}
    # A closed instance is a stale context: refused, its data kept for the next launch.
    code = await _close(stack, f"{SCOPE}:{other}")
    assert code == 0
    stale = await note.replace({"late": 1}, 1, instance_id=f"{SCOPE}:{other}")
    assert stale == {"refused": "instance_not_found"}
    assert await note.get(instance_id=f"{SCOPE}:{other}") == {"refused": "instance_not_found"}
    assert stored(stack, f"{SCOPE}:{other}") == {"data": {"there": 1}, "revision": 1}
    assert await note.get(other) == {"data": {"there": 1}, "revision": 1}  # launched again


async def _lineup(*args: str | Path) -> tuple[int, str, str]:
    """The command line, on a worker thread (the AppServer runs meanwhile)."""
    return await trio.to_thread.run_sync(lambda: lineup(*args))


async def _close(stack: Stack, instance_id: str) -> int:
    code, out, err = await _lineup("app", "close", instance_id, "--data-dir", stack.data_dir)
    assert code == 0, out + err
    return code
