"""Files outside the databases survive a power cut whole, and what was acknowledged survives
it: each write-then-rename goes through `replace_file`, the AppServer's store commits
before its verdicts leave, and the mailbox at `synchronous=NORMAL` is synced before
anything leaves the device.

Real FUSE (the power-cut file system: mounting needs root, as CI runs), real processes
killed with SIGKILL; every cut unmounts and mounts the backing directory again."""

from __future__ import annotations

import ast
import os
import select
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import trio

from bench.power_cut import PowerCutDisk
from contracts import replace_file
from peers.agent import open_agent
from peers.appserver import STORE_FILE, Store, read_credentials, read_endpoint

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("actors", "apps", "contracts", "link", "lineup", "peers", "supervisor.py")
# The renames that do not put a written file in place, each with why it needs no
# `replace_file`: (module, function).
NOT_A_FILE_WRITE = {
    # A verified bundle's tree is renamed into the cache whole; its files and every
    # directory of it are fsynced before, the cache's directory after.
    ("actors/app_manager/_cache.py", "admit"),
    # An entry being removed moves aside first (nothing is written).
    ("actors/app_manager/_cache.py", "remove"),
    # A full log is moved to `NAME.log.1`: a log may lose its tail in a cut.
    ("actors/kernel/spawning/_applog.py", "_rotate"),
    # A damaged database is moved aside whole, and the start refused.
    ("actors/kernel/supervising/_preflight.py", "_move_aside"),
    # The web host's files are this run's alone (its address, one-time keys, sessions): a
    # new run begins without them, and an unreadable address is read as none.
    ("actors/web_host/_state.py", "_write_private"),
}


def test_a_replaced_file_holds_the_old_bytes_or_the_new_after_every_cut(
    disk: PowerCutDisk,
) -> None:
    root = disk.mount_point
    replace_file(root / "app_ids.json", '{"whiteboard": 70001}\n')
    disk.power_cut()
    assert (root / "app_ids.json").read_text() == '{"whiteboard": 70001}\n'

    for seed in (None, 1, 2):
        text = f"token-{seed}\n"
        replace_file(root / ".runtime_token", text, mode=0o600)
        disk.power_cut(seed=seed)
        assert (root / ".runtime_token").read_text() == text
        assert (root / ".runtime_token").stat().st_mode & 0o777 == 0o600
    # No temporary file is left beside it.
    assert sorted(os.listdir(root)) == [".runtime_token", "app_ids.json"]

    # The same write renamed into place with no fsync is gone with the power.
    (root / ".new").write_text("unsynced\n")
    (root / ".new").replace(root / "app_ids.json")
    disk.power_cut()
    assert (root / "app_ids.json").read_text() == '{"whiteboard": 70001}\n'
    disk.unmount()


def _renames(path: Path) -> Iterator[str]:
    """The functions in `path` that call `os.replace`, `os.rename`, or a path's `replace`
    or `rename` (one argument: a string's `replace` takes two, a model's keywords)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    owner = node.func.value
                    by_os = isinstance(owner, ast.Name) and owner.id == "os"
                    one_path = len(node.args) == 1 and not node.keywords
                    if node.func.attr in ("replace", "rename") and (by_os or one_path):
                        yield function.name


def test_every_file_the_product_renames_into_place_goes_through_replace_file() -> None:
    found = set()
    for top in PRODUCT:
        paths = [ROOT / top] if top.endswith(".py") else sorted((ROOT / top).rglob("*.py"))
        for path in paths:
            module = path.relative_to(ROOT).as_posix()
            if module != "contracts/_durable_file.py":
                found |= {(module, function) for function in _renames(path)}
    assert found <= NOT_A_FILE_WRITE, sorted(found - NOT_A_FILE_WRITE)
    assert len(found) >= 3  # the rule still sees the renames it allows


def _write_until_cut(disk: PowerCutDisk, writer_script: str, target: Path, seed: int | None) -> int:
    """Run a writer in a process of its own until it said at least 20 more lines, cut the
    power at that moment and mount again; the last number it said."""
    writer = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name(writer_script)), str(target)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert writer.stdout is not None
    said = b""
    deadline = time.monotonic() + 20
    while said.count(b"\n") < 20:
        assert time.monotonic() < deadline, f"{writer_script} wrote too little in 20 s"
        ready, _, _ = select.select([writer.stdout], [], [], 1)
        if ready:
            said += os.read(writer.stdout.fileno(), 4096)
    disk.power_cut(seed=seed)
    writer.wait()
    said += writer.stdout.read()
    writer.stdout.close()
    return int(said[: said.rindex(b"\n")].split()[-1])


async def test_every_seq_the_appserver_answered_survives_a_cut(disk: PowerCutDisk) -> None:
    directory = disk.mount_point / "appserver"
    command = ["appserver", "--appserver-dir", str(directory), "--port", "0"]
    server = await trio.lowlevel.open_process([sys.executable, "-m", "lineup.cli", *command])
    try:
        with trio.fail_after(30):
            while read_endpoint(directory) is None:  # noqa: ASYNC110 - a file, no event
                await trio.sleep(0.05)
        credentials = read_credentials(directory)
        agent_id = credentials.agent_id
        token = credentials.token_for_agent(agent_id)
        async with open_agent(read_endpoint(directory), agent_id=agent_id, token=token) as agent:
            answered = [(await agent.send_text("conv-1", f"m{n}")).seq for n in range(10)]
        await trio.to_thread.run_sync(disk.power_cut)
    finally:
        server.kill()
        await server.wait()
    store = Store(directory / STORE_FILE)
    try:
        # A peer told seq N may sync from N: the stream a cut leaves holds it.
        assert store.last_seq >= max(answered) == answered[-1]
    finally:
        store.close()


def test_a_normal_mailbox_commit_survives_a_cut_once_the_wal_is_synced(
    disk: PowerCutDisk,
) -> None:
    db = disk.mount_point / "mailbox.db"
    for seed in (None, 5):
        synced = _write_until_cut(disk, "mailbox_writer.py", db, seed)
        reader = sqlite3.connect(db)
        try:
            (kept,) = reader.execute("SELECT count(*) FROM messages").fetchone()
        finally:
            reader.close()
        assert kept >= synced
        if seed is None:
            # Nothing after the last barrier is left: the commits between were not synced.
            assert kept % 5 == 0


def test_an_empty_http_key_left_by_a_cut_is_made_anew(tmp_path: Path) -> None:
    from peers.agent.mcp._serve import http_key

    (tmp_path / "http.key").write_text("")
    key = http_key(tmp_path)
    assert len(key) >= 32
    assert http_key(tmp_path) == key == (tmp_path / "http.key").read_text().strip()
