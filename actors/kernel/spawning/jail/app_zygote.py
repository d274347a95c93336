"""The app zygote: a preloaded, secret-free parent that forks installed apps into their jails.

`python -m actors.kernel.spawning.jail.app_zygote SUPERVISOR_PID FD` is started by the
supervisor as an app is: a scrubbed environment, stdin from /dev/null, its own session. It
ties its life to the supervisor, and as root takes the steps that bind it to no app: a
mount namespace of its own in which every directory of the supervisor's first message
`{hide: [DIR...]}` (the data dir; not on its command line, which every app forked from it
shows) is covered, and network and IPC namespaces with nothing in them. It then imports
what every app imports (the interpreter's standard library, trio, msgpack, pydantic,
jsonschema, the SDK, the contracts and the kernel's actor process) and nothing else: never
an app's code, never the runtime's actors; and builds what every app builds on its first
steps (a run of trio, a schema checked against the metaschema), so that it is shared
rather than built again in each app. It knows no token, opens no runtime file and has no
channel to any actor.

It serves the supervisor on FD (a SOCK_SEQPACKET socket, one JSON message each way):

- `launch` {nonce, target, jail}, with the app's channel, the report's pipe and the app's
  log attached (SCM_RIGHTS): it forks, answers `forked` {nonce, pid}, and later `exited`
  {pid, status} (it is the parent, and only a parent can reap);
- the forked child goes back to the host's view of the file system (the one fd the zygote
  keeps of it), takes every step of the jail exactly as the exec'd launcher does
  (`jail_app`: cgroup, namespaces, the app's view with the data dir hidden and its code
  mounted, its uid, rlimits, no_new_privs, its fds) and only then, as the app, imports the
  app and runs it as `actors.kernel.actor_process.child` does. With a pid namespace
  (always, as root) the child stays root outside it as the app's relay, and the app is its
  child: the app is never the zygote's child, runs under a uid of its own, and cannot even
  name the zygote's pid.

Lifetimes chain as with the kernel's zygote: it dies with the supervisor, and the relays
(and so the apps) die with it.

Its `ready` message lists `sys.modules`, and a test holds it to what every app imports.
`ps` names it `app-zygote`, and each app it forks by the app's actor class. A forked child
closes the zygote's socket and wake-up pipe, takes a session of its own, ties its life to
the zygote, makes the log its stdout and stderr, and runs the app as the app's uid, with
the app's environment and a reseeded `random`. A datagram is never merged with another:
each launch gets its own fds. The relay is reaped by the zygote, which reports `exited`
with its status, the app's; the isolation tests try to signal and `ptrace` the zygote from
inside the app, and cannot.

- **No leftovers.** Each fork is a copy of the zygote as it was after its preload: an app
  changes its own copy of every module, its environment, its fds and its tmpfs, never the
  zygote's. A test has one app leave a module global, a module, an environment variable,
  an inheritable fd and files, and the next app forked from the same zygote finds none.
- **Memory.** Forked apps share the zygote's pages until they write them; `lineup debug
  actors` shows each actor's RSS and PSS (a page shared by N processes counts 1/N).
- **Known limits.** Apps forked from one zygote share its address-space layout (ASLR is
  per exec) and its string-hash seed: an app can learn both for the others. `random` is
  reseeded in each child; `secrets` and `os.urandom` draw from the kernel.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import select
import signal
import socket
import sys
import traceback
from typing import Any, Final

import trio
from jsonschema import Draft202012Validator

from actors.kernel._collector import settle_garbage_collector
from actors.kernel.actor_process.child import run_actor

from ..._own_process import die_with_parent, exited_children, name_process, stand_alone
from ._launcher import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    MS_PRIVATE,
    MS_REC,
    AppJail,
    _check,
    _empty_tmpfs,
    _libc,
    _mount,
    jail_app,
)

# What every app imports (with the kernel's actor process, imported above): loaded once
# here, shared by every app forked from here.
PRELOAD: Final = ("apps.sdk._bundled",)
# The rest of the SDK, imported by name on first use (`apps.sdk.__getattr__`).
SDK: Final = "apps.sdk"
MAX_FDS: Final = 3  # a launch's channel, report pipe and log
ZYGOTE_NAME: Final = "app-zygote"  # what `ps` shows; each app takes its actor class's name
# A tool's input schema, of the usual shape (`_warm_up`).
WARM_SCHEMA: Final = {
    "type": "object",
    "properties": {"minutes": {"type": "integer", "minimum": 1}, "label": {"type": "string"}},
    "required": ["minutes"],
    "additionalProperties": False,
}


def _own_view(hidden: list[str]) -> dict[str, str]:
    """As root: a mount namespace of its own with `hidden` covered, and empty network and
    IPC namespaces; an fd of the host's mount namespace is kept for the forked children.
    What was taken, in words."""
    if os.geteuid() != 0:
        return {"view": f"the supervisor's (not root: uid {os.geteuid()})"}
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
    for path in hidden:
        _empty_tmpfs(path, "0000")
    return {
        "view": "a mount namespace of its own, the data dir covered",
        "network": "namespace of its own, no interface up",
    }


def _preload() -> None:
    for module in PRELOAD:
        importlib.import_module(module)
    sdk = importlib.import_module(SDK)
    for name in sdk.__all__:
        getattr(sdk, name)
    _warm_up()
    # What is loaded is permanent: an app's collections never walk it, so they never write
    # to (and copy) the pages every app shares with the zygote.
    settle_garbage_collector()


def _warm_up() -> None:
    """What every app does first, once here: what it builds on first use is then shared,
    not built (and written to) again in each app. A run of trio (its run machinery), a
    tool schema checked against the draft 2020-12 metaschema (as each tool's declaration
    is): ≈0.4 MiB less private memory an app, and its first steps sooner."""
    trio.run(trio.lowlevel.checkpoint)
    Draft202012Validator.check_schema(WARM_SCHEMA, format_checker=None)


def _send(control: socket.socket, message: dict[str, Any]) -> None:
    control.send(json.dumps(message).encode())


def _child(
    request: dict[str, Any],
    fds: list[int],
    zygote_pid: int,
    host_view: int | None,
    plumbing: tuple[socket.socket, int, int],
) -> int:
    """In the forked child: forget the zygote's plumbing, be jailed, run the app."""
    control, wake_r, wake_w = plumbing
    control.close()
    signal.set_wakeup_fd(-1)
    os.close(wake_r)
    os.close(wake_w)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    channel, report, log = fds
    stand_alone(log)
    die_with_parent(zygote_pid)
    if host_view is not None:
        # The jail starts where the exec'd launcher starts: in the host's view, where the
        # app's directory, its code and its cgroup are. It covers the data dir again.
        _check(_libc.setns(host_view, CLONE_NEWNS), "setns (the host's mount namespace)")
        os.close(host_view)
        os.chdir("/")
    jail = AppJail(channel_fd=channel, report_fd=report, **request["jail"])
    env = jail_app(jail, parent_pid=zygote_pid, interpreter=sys.executable)
    # The app now: what an exec'd app starts with, and nothing the zygote had drawn.
    os.environ.clear()
    os.environ.update(env)
    random.seed()
    return run_actor(str(request["target"]), channel, zygote_pid)


def _fork(
    request: dict[str, Any],
    fds: list[int],
    host_view: int | None,
    plumbing: tuple[socket.socket, int, int],
) -> int:
    zygote_pid = os.getpid()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    status = 1
    try:
        status = _child(request, fds, zygote_pid, host_view, plumbing)
    except SystemExit as exc:  # the jail refused (a root that cannot become the app)
        print(exc, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)


def _reap(control: socket.socket) -> None:
    for pid, code in exited_children():
        _send(control, {"type": "exited", "pid": pid, "status": code})


def serve(supervisor_pid: int, control_fd: int) -> None:
    die_with_parent(supervisor_pid)
    name_process(ZYGOTE_NAME)
    control = socket.socket(fileno=control_fd)
    hidden = [str(path) for path in json.loads(control.recv(65536) or b"{}").get("hide", [])]
    # Root leaves the host's view below; its children go back to it by this fd.
    view = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC) if os.geteuid() == 0 else None
    try:
        steps = _own_view(hidden)
    except OSError as exc:
        _send(control, {"type": "unusable", "reason": str(exc)})
        return
    _preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the work
    plumbing = (control, wake_r, wake_w)
    ready = {"type": "ready", "pid": os.getpid(), "steps": steps, "modules": sorted(sys.modules)}
    _send(control, ready)
    while True:
        readable, _, _ = select.select([control.fileno(), wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(control)
        if control.fileno() in readable:
            data, fds, _, _ = socket.recv_fds(control, 65536, MAX_FDS)
            if not data:
                return  # the supervisor is gone
            request = json.loads(data)
            if len(fds) != MAX_FDS:
                for fd in fds:
                    os.close(fd)
                _send(control, {"type": "refused", "nonce": request.get("nonce")})
                continue
            pid = _fork(request, fds, view, plumbing)
            _send(control, {"type": "forked", "nonce": request["nonce"], "pid": pid})


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
