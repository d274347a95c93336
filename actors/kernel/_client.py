"""The control socket's client side, blocking, for the CLI: light to import (no trio, no
specs), so a command that only asks a running runtime starts at once."""

from __future__ import annotations

import fcntl
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .wire import FrameDecoder, encode

CONTROL_SOCKET = "control.sock"
UI_SOCKET = "ui.sock"  # served by `_ui_socket`; named here for the error that points to it


def supervisor_pid_alive(data_dir: Path) -> bool:
    """True while some runtime holds the data dir's lock."""
    path = data_dir / "supervisor.lock"
    if not path.exists():
        return False
    with open(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


class ControlError(Exception):
    pass


def _connect(path: Path, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError as exc:
        sock.close()
        raise ControlError(f"no runtime answering on {path}: {exc.strerror or exc}") from None
    return sock


def _read_frames(sock: socket.socket) -> Iterator[dict[str, Any]]:
    decoder = FrameDecoder()
    while True:
        data = sock.recv(65536)
        if not data:
            return
        yield from decoder.feed(data)


def control_request(
    data_dir: Path, request: dict[str, Any], *, timeout: float = 10.0
) -> dict[str, Any]:
    return socket_request(data_dir / CONTROL_SOCKET, request, timeout=timeout)


def ui_request(data_dir: Path, request: dict[str, Any], *, timeout: float = 10.0) -> dict[str, Any]:
    """One request to the UI socket of the runtime on `data_dir`; ControlError if it failed
    or was refused."""
    return socket_request(data_dir / UI_SOCKET, request, timeout=timeout)


def socket_request(path: Path, request: dict[str, Any], *, timeout: float) -> dict[str, Any]:
    """One request to the socket at `path` and its answer; ControlError if it failed."""
    with _connect(path, timeout) as sock:
        try:
            sock.sendall(encode(request))
            for frame in _read_frames(sock):
                if not frame.get("ok"):
                    raise ControlError(str(frame.get("error")))
                frame.pop("type", None)
                frame.pop("ok", None)
                return frame
        except OSError as exc:  # reset by a runtime that died mid-request, or a timeout
            raise ControlError(f"the connection to {path.name} failed: {exc}") from None
    raise ControlError(f"the runtime closed the connection to {path.name} without answering")


def control_stream(data_dir: Path, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    sock = _connect(data_dir / CONTROL_SOCKET, 10.0)
    sock.settimeout(None)
    with sock:
        sock.sendall(encode(request))
        frames = _read_frames(sock)
        first = next(frames, None)
        if first is None or not first.get("ok"):
            raise ControlError(str(first.get("error") if first else "no answer"))
        yield from frames
