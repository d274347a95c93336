"""Actors that the kernel tests run as real processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import struct
import time
from pathlib import Path
from typing import Any

import msgpack
import trio

from actors.kernel import (
    ACK_LATER,
    REPLY_LATER,
    Actor,
    CallFailed,
    Message,
    applied_once,
    ensure_applied_table,
    handles,
)
from contracts import Code, ContractError


class Producer(Actor):
    """Sends `count` numbered messages to `to` on `produce`, in order; with `rate`, at
    about that many messages per second."""

    @handles("produce")
    async def produce(self, msg: Message) -> int:
        body = msg.body
        rate = body.get("rate")
        started = trio.current_time()
        for i, n in enumerate(range(body["start"], body["start"] + body["count"])):
            await self.cast(body["to"], "item", {"n": n, "sender": self.name})
            if rate and i % 50 == 49:
                await trio.sleep_until(started + (i + 1) / rate)
        return int(body["count"])


class Recorder(Actor):
    """Applies each `item` once into its own SQLite file: the independent record.

    Config: `db` (path), `synchronous` (the file's PRAGMA, default FULL), `poison` (an item
    number whose handler raises, or with `poison_mode` "crash" kills the process), and
    `cure_file` (while that file exists the poison is harmless, so a redriven dead letter
    can succeed). It also records the kernel's `kernel.actor_failed` notices.
    """

    async def on_start(self) -> None:
        self.db = sqlite3.connect(self.config["db"], isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={self.config.get('synchronous', 'FULL')}")
        ensure_applied_table(self.db)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS items"
            " (pos INTEGER PRIMARY KEY, id TEXT, sender TEXT, n INTEGER)"
        )
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS notices (pos INTEGER PRIMARY KEY, type TEXT, name TEXT)"
        )
        self.poison = self.config.get("poison")

    def _poisoned(self, n: int) -> bool:
        if self.poison is None or n != self.poison:
            return False
        cure = self.config.get("cure_file")
        return not (cure and os.path.exists(cure))

    @handles("item")
    async def item(self, msg: Message) -> None:
        if self._poisoned(msg.body["n"]):
            mode = self.config.get("poison_mode", "raise")
            if mode == "crash":
                os._exit(3)
            raise RuntimeError(f"poison item {msg.body['n']}")
        with applied_once(self.db, msg.id) as fresh:
            if fresh:
                self.db.execute(
                    "INSERT INTO items (id, sender, n) VALUES (?, ?, ?)",
                    (msg.id, msg.body["sender"], msg.body["n"]),
                )

    @handles("kernel.actor_failed")
    async def actor_failed(self, msg: Message) -> None:
        with applied_once(self.db, msg.id) as fresh:
            if fresh:
                self.db.execute(
                    "INSERT INTO notices (type, name) VALUES (?, ?)", (msg.type, msg.body["name"])
                )

    @handles("count")
    async def count(self, msg: Message) -> int:
        return int(self.db.execute("SELECT count(*) FROM items").fetchone()[0])


class Echo(Actor):
    """Answers calls: `echo` returns its body (or refuses), `tick` counts its handlings."""

    async def on_start(self) -> None:
        self.ticks = 0

    @handles("echo")
    async def echo(self, msg: Message) -> Any:
        if msg.body == "refuse":
            raise ContractError(Code.PERMISSION_DENIED, "asked to refuse")
        return msg.body

    @handles("tick")
    async def tick(self, msg: Message) -> int:
        self.ticks += 1
        return self.ticks


class RawAnswers(Actor):
    """Answers `answer` with the bytes its body's `raw` holds, as they are: an answer no
    packer made, as an app's process could send it."""

    @handles("answer")
    async def answer(self, msg: Message) -> Any:
        reply = {"type": "kernel.reply", "corr": msg.id, "to": msg.sender, "body": msg.body["raw"]}
        await self._connected().send(reply)
        return REPLY_LATER


class Deferring(Actor):
    """Answers `hold` later: the call is held (its handler returns `REPLY_LATER`, so the
    mailbox goes on), and each `release` answers the held calls with its body."""

    async def on_start(self) -> None:
        self.held: list[tuple[str, str]] = []

    def statistics_extra(self) -> dict[str, Any]:
        return {"held": len(self.held)}

    @handles("hold")
    async def hold(self, msg: Message) -> Any:
        self.held.append((msg.sender, msg.id))
        return REPLY_LATER

    @handles("release")
    async def release(self, msg: Message) -> None:
        for caller, request_id in self.held:
            await self.reply(caller, request_id, msg.body)


class Holding(Actor):
    """Holds each `keep` (its handler returns `ACK_LATER`, as the transport holds an
    envelope until its verdict) until `done`; `crash` ends the process abnormally."""

    async def on_start(self) -> None:
        self.kept: list[int] = []

    @handles("keep")
    async def keep(self, msg: Message) -> Any:
        self.kept.append(msg.seq)
        return ACK_LATER

    @handles("done")
    async def done(self, msg: Message) -> None:
        for seq in self.kept:
            self.ack(seq)
        self.kept.clear()

    @handles("crash")
    async def crash(self, msg: Message) -> None:
        os._exit(3)


class CallsOnStart(Actor):
    """Calls `echo` from `on_start`, before it is ready, and answers `started` with the reply:
    rebuilding state by asking another actor is what start hooks are for."""

    async def on_start(self) -> None:
        self.greeting = await self.call("echo", "echo", "hello from on_start", timeout=20)

    @handles("started")
    async def started(self, msg: Message) -> Any:
        return self.greeting


class Caller(Actor):
    """On `do_call`, calls another actor and records the outcome under `key` in its db.

    Body: `to`, `type`, `body`, `key`, optional `id` (the request id, to repeat a request)
    and `timeout`. Outcome rows: (key, "ok", msgpack of the reply body) or (key, "failed",
    the CallFailed code).
    """

    async def on_start(self) -> None:
        self.db = sqlite3.connect(self.config["db"], isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        ensure_applied_table(self.db)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS outcomes (key TEXT PRIMARY KEY, outcome TEXT,"
            " value BLOB, code TEXT, detail TEXT)"
        )

    @handles("do_call")
    async def do_call(self, msg: Message) -> None:
        b = msg.body
        row: tuple[str, bytes | None, str | None, str | None]
        try:
            value = await self.call(
                b["to"], b["type"], b.get("body"), timeout=b.get("timeout", 30.0), id=b.get("id")
            )
            row = ("ok", msgpack.packb(value), None, None)
        except CallFailed as exc:
            row = ("failed", None, exc.code, exc.detail)
        with applied_once(self.db, msg.id) as fresh:
            if fresh:
                self.db.execute(
                    "INSERT INTO outcomes (key, outcome, value, code, detail)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (b["key"], *row),
                )


class Stalled(Recorder):
    """Never finishes an `item` handler until told to resume through a file; then, with a
    `db` in its config, applies items like a Recorder."""

    async def on_start(self) -> None:
        self.resumed = False
        if "db" in self.config:
            await super().on_start()

    @handles("item")
    async def item(self, msg: Message) -> None:
        resume = trio.Path(self.config["resume_file"])
        # The test process creates the file: there is no event to wait on across processes.
        while not self.resumed and not await resume.exists():  # noqa: ASYNC110
            await trio.sleep(0.05)
        self.resumed = True
        if "db" in self.config:
            await super().item(msg)


class Frozen(Actor):
    """On `freeze`, blocks its own event loop: it can no longer notice its channel's EOF,
    so only the parent-death signal can end it when the supervisor dies."""

    @handles("freeze")
    async def freeze(self, msg: Message) -> None:
        time.sleep(3600)  # noqa: ASYNC251 (blocking on purpose)


class IgnoresTerm(Actor):
    async def on_start(self) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


class Lifecycle(Actor):
    """Appends `start NAME` when started and `stop NAME` when stopped to a shared file."""

    async def on_start(self) -> None:
        self._note("start")
        self.nursery.start_soon(self._note_stop)

    async def _note_stop(self) -> None:
        try:
            await trio.sleep_forever()
        finally:
            self._note("stop")

    def _note(self, what: str) -> None:
        with open(self.config["file"], "a") as f:
            f.write(f"{what} {self.name}\n")


class NeverReady(Actor):
    """Its start hook never returns."""

    async def on_start(self) -> None:
        await trio.sleep_forever()


class DeafWhileStarting(Actor):
    """Ignores SIGTERM and never becomes ready: like an app, its pid namespace's init, in
    the moments before it has a handler for the signal."""

    async def on_start(self) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        await trio.sleep_forever()


class ExitsOnStart(Actor):
    """Exits with `code` in its start hook, only in its first incarnation (a marker file)."""

    async def on_start(self) -> None:
        _exit_the_first_time(Path(self.config["marker"]), int(self.config["code"]))


def _exit_the_first_time(marker: Path, code: int) -> None:
    if not marker.exists():
        marker.write_text(str(os.getpid()))
        os._exit(code)


def _raw_frame(obj: Any) -> bytes:
    body: bytes = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(body)) + body


# Raw bytes a misbehaving child writes on its channel, by name (see Misbehaving).
BAD_BYTES = {
    "garbage": struct.pack(">I", 5) + b"\xc1\xc1\xc1\xc1\xc1",
    "oversize": struct.pack(">I", 0x7FFF_FFFF) + b"\x00" * 16,
    "not_a_map": _raw_frame([1, 2, 3]),
    "no_type": _raw_frame({"v": 1, "id": "x", "to": "peer", "body": None}),
    "wrong_types": _raw_frame({"v": 1, "type": "item", "id": 12345, "to": "peer"}),
    "bad_ack": _raw_frame({"type": "kernel.ack", "seqs": ["one", "two"]}),
    "bad_recipient": _raw_frame({"v": 1, "type": "item", "id": "abc", "to": ["peer"]}),
    "spoofed_sender": _raw_frame(
        {"v": 1, "type": "item", "id": "abc", "to": "peer", "from": "supervisor"}
    ),
    "ready_twice": _raw_frame({"type": "kernel.ready"}),
    "forbidden_kernel_type": _raw_frame(
        {"type": "kernel.actor_failed", "body": {"name": "peer", "reason": "lies"}}
    ),
    "app_hold": _raw_frame({"type": "kernel.hold", "seqs": [1]}),
}


class Misbehaving(Actor):
    """On `misbehave` (first attempt only), writes `BAD_BYTES[body]` raw onto its channel.

    The bytes bypass the channel's writer, as a buggy or hostile child would.
    """

    @handles("misbehave")
    async def misbehave(self, msg: Message) -> None:
        if msg.attempt > 1:
            return  # the redelivery after the restart: behave
        assert self._channel is not None
        fd = self._channel._stream.socket.fileno()
        data = BAD_BYTES[msg.body]
        while data:
            data = data[os.write(fd, data) :]
        await trio.sleep_forever()  # the supervisor closes the channel and kills us

    @handles("ping")
    async def ping(self, msg: Message) -> str:
        return "pong"


class Delegator(Actor):
    """Asks the supervisor to start or stop a child (`Actor.supervise`) and records the
    outcome, ok or the error code, as a line of JSON in `config["out"]`."""

    @handles("delegate")
    async def delegate(self, msg: Message) -> None:
        import json

        body = dict(msg.body)
        try:
            result = await self.supervise(body.pop("op"), timeout=30, **body)
            outcome = {"ok": True, "state": result["state"]}
        except CallFailed as exc:
            outcome = {"ok": False, "code": exc.code}
        async with await trio.open_file(self.config["out"], "a") as out:
            await out.write(json.dumps(outcome) + "\n")
