"""The tool router hears of a hand edit of the tool policy from the kernel (inotify), at
once, and is never woken while the file is left alone, whatever else the data dir does."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from actors.tool_router import POLICY_FILE
from actors.tool_router._policy_watch import LOOK_S, changes_of
from contracts import replace_file

# Longer than the fallback's look: a poll would have yielded in it.
QUIET_S = LOOK_S * 1.5
HEARD_S = 5.0  # a change is heard well within this, however loaded the machine


async def test_each_change_of_the_file_is_heard_and_nothing_else(tmp_path: Path) -> None:
    heard: list[float] = []
    news = trio.Event()

    async def listen() -> None:
        nonlocal news
        async for _ in changes_of(tmp_path, POLICY_FILE):
            heard.append(trio.current_time())
            news.set()

    async def wait_heard(count: int) -> None:
        nonlocal news
        with trio.fail_after(HEARD_S):
            while len(heard) < count:
                await news.wait()
                news = trio.Event()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(listen)
        await trio.sleep(0.1)  # the watch is set up before anything changes
        # The rest of the data dir changes: nothing is heard.
        for n in range(20):
            (tmp_path / f"mailbox.db-{n}").write_bytes(b"x" * 100)
            replace_file(tmp_path / "app_ids.json", b"{}")
        (tmp_path / "mailbox.db-0").unlink()
        await trio.sleep(QUIET_S)
        assert heard == []

        # Created and written by hand, replaced atomically, edited in place, deleted.
        (tmp_path / POLICY_FILE).write_text('{"allow": ["*"]}\n')
        await wait_heard(1)
        replace_file(tmp_path / POLICY_FILE, b'{"deny": ["*"]}\n')
        await wait_heard(len(heard) + 1)
        fd = os.open(tmp_path / POLICY_FILE, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"\n")
        os.close(fd)
        await wait_heard(len(heard) + 1)
        os.unlink(tmp_path / POLICY_FILE)
        await wait_heard(len(heard) + 1)

        # Left alone again: not a sound, past the time a poll would have looked.
        before = len(heard)
        await trio.sleep(QUIET_S)
        assert len(heard) == before
        nursery.cancel_scope.cancel()
