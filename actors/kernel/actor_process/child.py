"""Entry point of every actor process: `python -m actors.kernel.actor_process.child TARGET
FD PARENT_PID`.

The process ties its life to the supervisor twice over: a parent-death signal (Linux) and
EOF on its channel. It runs in its own session, so a terminal's Ctrl-C reaches only the
supervisor, which then stops the actors in order.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys

import trio

from .._collector import settle_garbage_collector
from .._own_process import die_with_parent, name_process
from ..wire import Channel
from ._actor import Actor, serve

# The launcher of isolated apps shares it, and must not import this package (trio).
_die_with_parent = die_with_parent


def load_actor(target: str) -> Actor:
    module_name, _, class_name = target.partition(":")
    if not module_name or not class_name:
        raise ValueError(f"actor target {target!r} is not 'module:Class'")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Actor)):
        raise TypeError(f"{target} is not an Actor subclass")
    return cls()


async def _run(actor: Actor, fd: int) -> None:
    channel = Channel.from_fd(fd)
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_signal)
            await serve(actor, channel)
            nursery.cancel_scope.cancel()


def run_actor(target: str, fd: int, parent_pid: int) -> int:
    """Everything an actor process does, whether exec'd or forked from the zygote."""
    _die_with_parent(parent_pid)
    name_process(target.rpartition(":")[2])  # a forked actor would show its zygote's name
    logging.basicConfig(
        force=True,  # a forked actor's parent may have configured its own
        level=os.environ.get("LINEUP_LOG_LEVEL", "WARNING"),
        format=f"%(asctime)s {target.rpartition(':')[2]}[{os.getpid()}] %(levelname)s %(message)s",
    )
    actor = load_actor(target)
    settle_garbage_collector()  # what is loaded lives as long as the process
    trio.run(_run, actor, fd)
    return 0


def main(argv: list[str]) -> int:
    return run_actor(argv[0], int(argv[1]), int(argv[2]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
