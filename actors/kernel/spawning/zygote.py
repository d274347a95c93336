"""The zygote: a preloaded parent that forks actor processes in a few milliseconds.

`python -m actors.kernel.spawning.zygote SUPERVISOR_PID FD TARGET...` imports trio, the kernel and
the given actors (`module:Class`) once, never starts trio itself, and then serves the
supervisor on FD: `spawn` (with the actor's channel fd attached) forks a child that runs the
actor exactly as `actors.kernel.actor_process.child` would; every child's exit is reported back as
`exited` with its wait status, since only the zygote, their parent, can reap them. A fresh
interpreter costs ≈150 ms before an actor can say hello; a fork of this process costs ≈5 ms.

Lifetimes chain: the zygote dies with the supervisor (parent-death signal), and each child
dies with the zygote, so nothing outlives the supervisor. The first zygote of a run is
forked from the supervisor instead (`_prefork`) and serves the same way; either is named
`ZYGOTE_NAME` in `ps`.

A restart after SIGKILL takes about 35 ms (p50). `RuntimeConfig.spawn = "exec"`, and any
child with an environment of its own (as isolated apps have), starts a new interpreter
instead: `python -m actors.kernel.actor_process.child module:Class FD PARENT_PID`
(`_process`). Either way the actor's end of a `socketpair` is its only channel, passed over
the zygote's control socket (`SCM_RIGHTS`) when forked; no actor opens a socket to
another.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import signal
import socket
import sys
import traceback

from .._collector import settle_garbage_collector
from .._own_process import die_with_parent, exited_children, name_process, stand_alone
from ..actor_process.child import run_actor
from ..wire import FrameDecoder, encode

ZYGOTE_NAME = "kernel-zygote"


def _fork_actor(
    request: dict[str, object], fd: int, control: socket.socket, wake: tuple[int, int]
) -> int:
    pid = os.fork()
    if pid:
        return pid
    # The child: forget the zygote's plumbing, then become an ordinary actor process.
    status = 1
    try:
        control.close()
        signal.set_wakeup_fd(-1)
        os.close(wake[0])
        os.close(wake[1])
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        stand_alone(os.open(str(request["log"]), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        status = run_actor(str(request["target"]), fd, os.getppid())
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _reap(control: socket.socket) -> None:
    for pid, code in exited_children():
        control.sendall(encode({"type": "exited", "pid": pid, "status": code}))


def preload(targets: list[str]) -> None:
    """Import what the actors forked from here use: each target's class (a package may
    load its names only on first use) and the whole of the contracts, which every actor
    reads. A target that fails to load fails again in its own child, which reports it."""
    for target in targets:
        module, _, name = target.partition(":")
        with contextlib.suppress(Exception):
            getattr(importlib.import_module(module), name)
    contracts = importlib.import_module("contracts")
    for name in contracts.__all__:
        getattr(contracts, name)


def serve(supervisor_pid: int, control_fd: int, targets: list[str]) -> None:
    die_with_parent(supervisor_pid)
    name_process(ZYGOTE_NAME)
    preload(targets)
    # The preloaded modules are permanent: a child's collections never walk them, so
    # they never write to (and copy) the pages the children share with the zygote.
    settle_garbage_collector()
    control = socket.socket(fileno=control_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the work
    decoder = FrameDecoder()
    control.sendall(encode({"type": "ready", "pid": os.getpid()}))
    while True:
        readable, _, _ = select.select([control.fileno(), wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(control)
        if control.fileno() in readable:
            data, fds, _, _ = socket.recv_fds(control, 65536, 16)
            if not data:
                return  # the supervisor is gone
            requests = decoder.feed(data)
            for request, fd in zip(requests, fds, strict=True):
                pid = _fork_actor(request, fd, control, (wake_r, wake_w))
                os.close(fd)
                control.sendall(encode({"type": "spawned", "pid": pid, "nonce": request["nonce"]}))


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
