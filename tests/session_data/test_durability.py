"""The last committed revision survives everything, and no write counts twice: the store
killed right after committing a replace (before its answer), the store and the app killed
with SIGKILL while the app writes, the whole runtime restarted. The user's removal of the
app deletes its data; disabling it keeps it.

The notebook's `note.count` writes `n` = (the `n` it read) + 1, each replace made from the
revision it read: a replace applied twice would leave `n` behind the revision."""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing
from functools import partial
from pathlib import Path

import trio

from actors.store._session_data import KEEP_ANSWERS
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import app, final_of

from .helpers import SCOPE, Notebook, notebook_ready, stored, summary

INSTANCE = f"{SCOPE}:{CONVERSATION}"


async def _restart(stack: Stack, env: dict[str, str] | None = None) -> None:
    """Stop the runtime and start it again on the same data dir (optionally with `env`)."""
    runtime = stack.runtime
    assert runtime is not None
    await trio.to_thread.run_sync(runtime.stop)
    runtime.start(wait=False, env=env)
    await trio.to_thread.run_sync(runtime.wait_running)
    await stack.wait_lifecycle("online")


def _revision(stack: Stack) -> int:
    return int((stored(stack, INSTANCE) or {"revision": 0})["revision"])


def _reached(stack: Stack, floor: int) -> bool:
    return _revision(stack) >= floor


def _counted(output: dict[str, object], times: int) -> None:
    assert output["revisions"] == list(range(1, times + 1)), output
    assert output["final"] == {"data": {"n": times}, "revision": times}


async def test_a_replace_committed_before_the_store_died_is_answered_once(
    stack: Stack, notebook: tuple[Path, Path], tmp_path: Path
) -> None:
    note = await notebook_ready(stack, notebook)
    once = tmp_path / "crashed"
    once.mkdir()
    crash = {
        "LINEUP_CRASH": "store.session_data_after_commit@3",
        "LINEUP_CRASH_ONCE_DIR": str(once),
    }
    await _restart(stack, crash)
    assert stack.runtime is not None
    restarts = stack.runtime.actors()["store"]["restarts"]
    _counted(await note.ask("note.count", {"times": 6}), 6)
    # The store died once, with the third replace committed and unanswered; its replay
    # answered what the commit said instead of writing again.
    assert (once / "store.session_data_after_commit").exists()
    assert stack.runtime.actors()["store"]["restarts"] == restarts + 1
    assert stored(stack, INSTANCE) == {"data": {"n": 6}, "revision": 6}


async def test_kills_of_the_store_and_the_app_while_it_writes(
    stack: Stack, notebook: tuple[Path, Path]
) -> None:
    note = await notebook_ready(stack, notebook)
    assert await note.replace({"n": 1}, 0) == {"revision": 1}  # the instance is up
    times = 60
    call_id = "call_count_under_kills"
    await note.agent.client.submit(note.agent.invoke(call_id, "note.count", {"times": times - 1}))
    rng = random.Random(11)
    kills = []
    for victim in ("store", f"app.{SCOPE}", "store", f"app.{SCOPE}", "store"):
        # Each kill once a few more revisions are on disk.
        floor = _revision(stack) + rng.randint(2, 6)
        if floor >= times:
            break
        await wait_for(partial(_reached, stack, floor), 60, f"revision {floor}")
        assert stack.kill(victim)
        kills.append(victim)
    assert len(kills) >= 3
    assert stack.runtime is not None
    restarted = stack.runtime.actors()[f"app.{SCOPE}"]["restarts"]
    assert restarted >= kills.count(f"app.{SCOPE}") >= 1
    row = await final_of(stack, call_id, timeout=120)
    assert row["state"] == "succeeded", row
    # Run again after each kill of the app (its tool is idempotent), asking the same ids:
    # what the store had answered it answered again. Every count counted once.
    assert row["output"]["final"] == {"data": {"n": times}, "revision": times}
    assert row["output"]["revisions"] == list(range(2, times + 1))
    assert stored(stack, INSTANCE) == {"data": {"n": times}, "revision": times}
    assert await note.get() == {"data": {"n": times}, "revision": times}


async def test_a_subscription_outlives_a_store_restart(
    stack: Stack, notebook: tuple[Path, Path]
) -> None:
    note = await notebook_ready(stack, notebook)
    await note.ask("note.listen", {"name": "survivor"})
    assert await note.replace({"before": 1}, 0) == {"revision": 1}
    assert stack.kill("store")
    assert await note.replace({"after": 1}, 1) == {"revision": 2}

    def frames() -> list[tuple[int, object]] | None:
        seen = [(f["revision"], f["data"]) for f in note.frames("survivor")]
        return seen if len(seen) >= 3 else None

    assert await wait_for(frames, 30, "three frames") == [
        (0, None),
        (1, {"before": 1}),
        (2, {"after": 1}),
    ]


async def test_a_runtime_restart_keeps_it_disable_keeps_it_remove_deletes_it(
    stack: Stack, notebook: tuple[Path, Path]
) -> None:
    note = await notebook_ready(stack, notebook)
    other = "conv-2"
    await note.agent.client.send_text(other, "hello")
    _counted(await note.ask("note.count", {"times": 3}), 3)
    assert await note.replace({"kept": True}, 0, other) == {"revision": 1}
    await _restart(stack)
    assert await note.get() == {"data": {"n": 3}, "revision": 3}
    assert await note.replace({"n": 4}, 3) == {"revision": 4}
    # Disabled and enabled again: the data was kept for it.
    app(stack, "disable", SCOPE)
    assert set(summary(stack)) == {INSTANCE, f"{SCOPE}:{other}"}
    app(stack, "enable", SCOPE)
    assert await Notebook(note.stack, note.agent).get() == {"data": {"n": 4}, "revision": 4}
    # Removed (the user said yes): its data went with it, and a new install starts empty.
    app(stack, "remove", SCOPE, "--yes")
    assert summary(stack) == {}
    assert stored(stack, INSTANCE) is None


async def test_the_answers_kept_for_redeliveries_are_bounded(
    stack: Stack, notebook: tuple[Path, Path]
) -> None:
    """An app decides how many replaces it sends: the store keeps the answers to its newest
    ones only, and none in the store's general request record."""
    note = await notebook_ready(stack, notebook)
    times = KEEP_ANSWERS + 44
    _counted(await note.ask("note.count", {"times": times}), times)
    path = stack.data_dir / "runtime.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        kept = db.execute(
            "SELECT count(*) FROM app_session_requests WHERE app_scope = ?", (SCOPE,)
        ).fetchone()[0]
        general = db.execute(
            "SELECT count(*) FROM requests WHERE id LIKE ?", (f"app.{SCOPE}/%",)
        ).fetchone()[0]
    assert (kept, general) == (KEEP_ANSWERS, 0)
