"""`lineup run` meets a data dir it cannot use with one sentence naming the problem and what
to do, a non-zero exit, and no further damage: a read-only data dir, one owned by another
user, damaged or foreign databases, a second runtime; a control socket a killed runtime
left behind does not stop a start. `python -m supervisor` says the same sentences.

Each case is a real `lineup run --headless --no-web --no-demo-agent` on a data dir of its
own; the read-only one is a read-only bind mount in a mount namespace of its own, the one
true refusal for root, whom no file mode stops.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from actors.kernel import MailboxStore
from actors.kernel.supervising._preflight import DataDirUnusable, check_databases
from actors.store import open_db
from tests.cli.test_bad_input import EXCEPTION_NAME
from tests.kernel.helpers import REPO_ROOT, runtime_processes

# An uid no one on the machine has.
STRANGER = 4242

RUN = ("run", "--headless", "--no-web", "--no-demo-agent")


def _lineup(*args: str | Path, prefix: Sequence[str] = ()) -> tuple[int, str]:
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "lineup.cli", *map(str, args)],
        capture_output=True,
        cwd=REPO_ROOT,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"},
        timeout=60,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace")


def _assert_refused(code: int, output: str, expected: str) -> None:
    """A non-zero exit and one sentence with `expected` in it: no traceback, no class name."""
    assert code != 0, output
    assert "Traceback" not in output, output
    assert EXCEPTION_NAME.search(output) is None, output
    said = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(said) == 1, output
    assert expected in said[0], output


def _files(root: Path) -> dict[str, tuple[bytes, int, int, int]]:
    """Every file and directory below `root`, with its bytes, mode, owner and mtime."""
    found = {}
    for path in [root, *sorted(root.rglob("*"))]:
        stat = path.lstat()
        content = path.read_bytes() if path.is_file() else b""
        found[str(path.relative_to(root))] = (content, stat.st_mode, stat.st_uid, stat.st_mtime_ns)
    return found


def _mailbox(data_dir: Path) -> None:
    """A real mailbox with messages in it."""
    store = MailboxStore(data_dir / "mailbox.db")
    store.begin()
    for n in range(200):
        store.insert(
            message_id=f"m{n}",
            recipient="router",
            sender="store",
            type="test.note",
            frame=b"x" * 200,
            inflight=False,
        )
    store.commit()
    store.close()


def _runtime_db(data_dir: Path) -> None:
    """A real runtime.db with conversations in it."""
    db = open_db(data_dir)
    db.executemany(
        "INSERT INTO conversations (conversation_id, agent_id, first_seq, created_ms)"
        " VALUES (?, 'agent', ?, 0)",
        [(f"conv-{n}-{'c' * 100}", n) for n in range(200)],
    )
    db.close()


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(20_000))
    path.with_name(path.name + "-wal").write_bytes(os.urandom(5_000))


Damage = Callable[[Path], None]
DAMAGED_PAIRS: list[tuple[tuple[str, Damage], tuple[str, Damage]]] = [
    (("mailbox.db", _truncate), ("runtime.db", _garbage)),
    (("mailbox.db", _garbage), ("runtime.db", _truncate)),
]


def _start(data_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "lineup.cli", *RUN, "--data-dir", str(data_dir)],
            cwd=REPO_ROOT,
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
        )


def _wait_running(process: subprocess.Popen[bytes], data_dir: Path, log: Path) -> None:
    deadline = time.monotonic() + 45
    while True:
        assert process.poll() is None, log.read_text()[-3000:]
        code, output = _lineup("debug", "status", "--json", "--data-dir", data_dir)
        if code == 0 and json.loads(output)["state"] == "running":
            return
        assert time.monotonic() < deadline, f"the runtime did not start: {output}"
        time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert not runtime_processes(process)


def test_a_read_only_data_dir_is_refused_and_left_untouched(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _mailbox(data_dir)
    before = _files(data_dir)
    read_only = ["unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"']
    code, output = _lineup(*RUN, "--data-dir", data_dir, prefix=[*read_only, str(data_dir)])
    _assert_refused(code, output, f"{data_dir} is read-only (Read-only file system)")
    assert "make it writable" in output
    assert _files(data_dir) == before


def test_a_data_dir_of_another_user_is_refused_and_left_untouched(tmp_path: Path) -> None:
    """The runtime seals its data dir to its own user and keeps there who its apps run as:
    root refuses one a user could rewrite beneath it."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    os.chown(data_dir, STRANGER, STRANGER)
    before = _files(data_dir)
    code, output = _lineup(*RUN, "--data-dir", data_dir)
    _assert_refused(code, output, f"{data_dir} belongs to uid {STRANGER}, not to root (uid 0)")
    assert f"run it as uid {STRANGER}" in output
    assert _files(data_dir) == before


@pytest.mark.parametrize("pair", DAMAGED_PAIRS, ids=["mailbox-cut", "mailbox-garbage"])
def test_damaged_databases_are_kept_aside_whole_and_the_start_refused(
    tmp_path: Path, pair: tuple[tuple[str, Damage], tuple[str, Damage]]
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _mailbox(data_dir)
    _runtime_db(data_dir)
    damaged: dict[str, dict[str, bytes]] = {}
    for name, damage in pair:
        damage(data_dir / name)
        damaged[name] = {
            p.name.removeprefix(name): p.read_bytes() for p in data_dir.glob(f"{name}*")
        }
    code, output = _lineup(*RUN, "--data-dir", data_dir)
    _assert_refused(code, output, "start again to begin without what it held")
    for name, companions in damaged.items():
        assert f"{data_dir / name} is damaged (" in output
        assert not list(data_dir.glob(f"{name}-*")) and not (data_dir / name).exists()
        [aside] = data_dir.glob(f"{name}.corrupt-*[0-9]Z")
        assert f"kept as {aside.name}" in output
        kept = {
            p.name.removeprefix(aside.name): p.read_bytes() for p in data_dir.glob(f"{aside.name}*")
        }
        assert kept == companions  # every byte, the WAL with the database


def test_a_start_after_a_damaged_database_was_kept_aside_begins_anew(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _mailbox(data_dir)
    _garbage(data_dir / "mailbox.db")
    code, output = _lineup(*RUN, "--data-dir", data_dir)
    _assert_refused(code, output, "mailbox.db is damaged (file is not a database)")
    [aside] = data_dir.glob("mailbox.db.corrupt-*[0-9]Z")
    kept = aside.read_bytes()
    log = tmp_path / "run.log"
    process = _start(data_dir, log)
    try:
        _wait_running(process, data_dir, log)
    finally:
        _stop(process)
    assert aside.read_bytes() == kept
    fresh = MailboxStore(data_dir / "mailbox.db", readonly=True)
    try:  # a new mailbox, sound, without what the damaged one held
        assert fresh.message("m0", sender="store") is None
    finally:
        fresh.close()


def test_a_refused_start_in_a_terminal_is_told_at_once(tmp_path: Path) -> None:
    """In a terminal `lineup run` starts the runtime in a child and attaches the chat: a
    child that refused to start is reported as soon as it ends, not at the start's deadline."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _garbage(data_dir / "mailbox.db")
    where = ["--data-dir", str(data_dir)]
    terminal, user_side = os.openpty()
    began = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "lineup.cli", "run", "--no-web", "--no-demo-agent", *where],
            stdin=user_side,
            capture_output=True,
            cwd=REPO_ROOT,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"},
            timeout=60,
            check=False,
        )
    finally:
        os.close(terminal)
        os.close(user_side)
    output = (done.stdout + done.stderr).decode(errors="replace")
    _assert_refused(done.returncode, output, "mailbox.db is damaged (file is not a database)")
    assert time.monotonic() - began < 20, output


def test_a_database_whose_writer_was_killed_mid_write_is_sound(tmp_path: Path) -> None:
    """A runtime killed between commits leaves a hot WAL: it is read through, not taken
    for damage, and nothing is moved."""
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(tmp_path / "mailbox.db")],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
    ) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == b"writing\n"
        writer.send_signal(signal.SIGKILL)
    assert (tmp_path / "mailbox.db-wal").stat().st_size > 0
    before = sorted(p.name for p in tmp_path.iterdir())
    check_databases(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# Writes a mailbox in WAL mode without pause until it is killed; says when it has begun.
_KILLED_WRITER = """
import sys
from actors.kernel import MailboxStore
store = MailboxStore(sys.argv[1])
n = 0
while True:
    store.begin()
    store.insert(message_id=f"m{n}", recipient="r", sender="s", type="t", frame=b"x" * 500,
                 inflight=False)
    store.commit()
    if n == 100:
        print("writing", flush=True)
    n += 1
"""


def test_a_second_damaged_file_kept_aside_replaces_none_kept_before(tmp_path: Path) -> None:
    kept = []
    for content in (b"first " * 1000, b"second " * 1000):
        (tmp_path / "runtime.db").write_bytes(content)
        with pytest.raises(DataDirUnusable, match=r"runtime\.db is damaged"):
            check_databases(tmp_path)
        kept.append(content)
    asides = sorted(tmp_path.glob("runtime.db.corrupt-*"))
    assert sorted(p.read_bytes() for p in asides) == sorted(kept)


def test_a_database_of_something_else_is_refused_and_left_in_place(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    foreign = sqlite3.connect(data_dir / "mailbox.db")
    foreign.execute("CREATE TABLE notes (title TEXT)")
    foreign.execute("INSERT INTO notes VALUES ('mine')")
    foreign.commit()
    foreign.close()
    before = (data_dir / "mailbox.db").read_bytes()
    code, output = _lineup(*RUN, "--data-dir", data_dir)
    _assert_refused(code, output, "mailbox.db is a SQLite database of something else")
    assert (data_dir / "mailbox.db").read_bytes() == before
    assert not list(data_dir.glob("mailbox.db?*"))


def test_a_stale_control_socket_does_not_stop_a_start_and_a_live_runtime_does(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(data_dir / "control.sock"))  # as a killed runtime leaves it: no listener
    left.close()
    log = tmp_path / "run.log"
    process = _start(data_dir, log)
    try:
        _wait_running(process, data_dir, log)
        code, output = _lineup(*RUN, "--data-dir", data_dir)
        _assert_refused(code, output, f"another runtime (pid {process.pid}) is already using")
        done = subprocess.run(
            [sys.executable, "-m", "supervisor", "--data-dir", str(data_dir)],
            capture_output=True,
            cwd=REPO_ROOT,
            text=True,
            timeout=60,
            check=False,
        )
        _assert_refused(done.returncode, done.stderr, f"another runtime (pid {process.pid})")
    finally:
        _stop(process)


def test_the_supervisor_refuses_a_data_dir_too_long_for_its_sockets(tmp_path: Path) -> None:
    data_dir = tmp_path / ("d" * 110)
    done = subprocess.run(
        [sys.executable, "-m", "supervisor", "--data-dir", str(data_dir)],
        capture_output=True,
        cwd=REPO_ROOT,
        text=True,
        timeout=60,
        check=False,
    )
    _assert_refused(done.returncode, done.stderr, "too long a path for the runtime's sockets")
    assert not data_dir.exists()
