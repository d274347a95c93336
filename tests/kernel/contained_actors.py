"""The actor the containment tests run jailed: it tries to outlive, outgrow and outwrite
its incarnation. Each action answers a `call` with what happened (an errno name, a count)
or, for the ones that end the process, is sent without waiting for an answer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from typing import Any, NoReturn

from actors.kernel import Actor, Message, handles
from actors.kernel.wire import encode


def _linger() -> NoReturn:
    """A child's life: hold what it inherited, forever (until killed)."""
    try:
        while True:
            time.sleep(3600)
    finally:
        os._exit(0)


def _hold(channel: int, parent: int) -> NoReturn:
    """Hold the channel; once the parent is gone, write on it without end."""
    try:
        while os.getppid() == parent:
            time.sleep(0.05)
        frame = encode({"type": "kernel.stats", "nonce": "x", "stats": {}})
        while True:
            os.write(channel, frame)
            time.sleep(0.01)
    finally:
        os._exit(0)


def _write_file(name: str, size: int) -> dict[str, Any]:
    written, error = 0, ""
    chunk = b"y" * 65536
    with open(name, "wb") as f:
        try:
            while written < size:
                written += os.write(f.fileno(), chunk)
        except OSError as exc:
            error = _error(exc)
    return {"written": written, "error": error}


def _error(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc))


class Hostile(Actor):
    @handles("status")
    async def status(self, msg: Message) -> dict[str, Any]:
        """Who it is, and the processes its /proc shows."""
        return {
            "uid": os.getuid(),
            "pid": os.getpid(),
            "visible": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "parent": os.getppid(),
        }

    @handles("double_fork")
    async def double_fork(self, msg: Message) -> int:
        """A daemon: fork, setsid, fork again, the middle one exits. Its pid."""
        read, write = os.pipe()
        if os.fork() == 0:
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                os.close(write)  # the app reads the pipe to its end
                _linger()
            os.write(write, str(grandchild).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            return int(pipe.read())

    @handles("hold_channel")
    async def hold_channel(self, msg: Message) -> int:
        """A child that keeps the channel and, once the app is gone, writes on it."""
        channel = int(sys.argv[2])  # python -m (the child module) TARGET FD PARENT_PID
        me = os.getpid()
        child = os.fork()
        if child == 0:
            _hold(channel, me)
        return child

    @handles("fork_bomb")
    async def fork_bomb(self, msg: Message) -> dict[str, Any]:
        """Fork until refused (at most `limit`): how many, and why it stopped."""
        forked, error = 0, ""
        while forked < msg.body["limit"]:
            try:
                pid = os.fork()
            except OSError as exc:
                error = _error(exc)
                break
            if pid == 0:
                _linger()
            forked += 1
        return {"forked": forked, "error": error}

    @handles("allocate")
    async def allocate(self, msg: Message) -> int:
        """Touch `mib` MiB of memory, 16 at a time."""
        held = [b"x" * (16 << 20) for _ in range(msg.body["mib"] // 16)]
        return len(held)

    @handles("write_file")
    async def write_file(self, msg: Message) -> dict[str, Any]:
        """Write `size` bytes to `name` in its directory: the bytes written, the error."""
        return _write_file(msg.body["name"], msg.body["size"])

    @handles("spew")
    async def spew(self, msg: Message) -> int:
        """Write `mib` MiB to stdout, a line at a time."""
        line = (b"z" * 1023) + b"\n"
        block = line * 64
        for _ in range(msg.body["mib"] * 16):
            os.write(1, block)
        return msg.body["mib"]

    @handles("say")
    async def say(self, msg: Message) -> None:
        os.write(2, msg.body["text"].encode() + b"\n")

    @handles("erase_log")
    async def erase_log(self, msg: Message) -> dict[str, str]:
        """Try to empty or rewind its log through what it holds of it."""
        outcomes = {}
        for name, attempt in {
            "truncate": lambda: os.ftruncate(1, 0),
            "seek": lambda: os.lseek(1, 0, os.SEEK_SET),
            "reopen": lambda: open("/proc/self/fd/1", "w").close(),
        }.items():
            try:
                attempt()
                outcomes[name] = "ok"
            except OSError as exc:
                outcomes[name] = _error(exc)
        with contextlib.suppress(OSError):
            outcomes["stdout"] = os.readlink("/proc/self/fd/1")
        return outcomes
