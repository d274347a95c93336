"""The web host's files in the data dir (`DATA_DIR/web/`, mode 0700), shared with the
command line that prints the address.

- `endpoint.json`: the port it listens on, its pid and the runtime's run (`boot`), written
  once it listens. A restarted web host of the same run listens on the same port again, so
  an open page reconnects to the address it has.
- `keys/<sha256>`: one file per one-time key (`mint_key`), written by whoever prints an
  address (`lineup run`, `lineup web url`); taken (unlinked) by the first page that shows
  it, so a key opens one browser session once.
- `sessions/<sha256>`: one file per browser session token (the cookie's value). Only
  hashes are kept: what is on disk cannot be replayed as a cookie or a key.

Keys and sessions belong to one run of the runtime: a new run starts with none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Final

WEB_DIR: Final = "web"
ENDPOINT_FILE: Final = "endpoint.json"
LOOPBACK: Final = "127.0.0.1"
_TOKEN_BYTES: Final = 32


def web_dir(data_dir: str | Path) -> Path:
    return Path(data_dir) / WEB_DIR


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` (mode 0600) atomically: a reader sees the old or the new file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    temporary.replace(path)


def start_run(data_dir: str | Path, boot: str) -> tuple[int | None, int | None]:
    """Prepare the web dir for run `boot`: (the port this run listens on already, if a
    previous incarnation of the web host chose one; else the port the last run listened
    on, to try first). A new run forgets every key and session."""
    root = _private_dir(web_dir(data_dir))
    endpoint = read_endpoint(data_dir)
    port = endpoint.get("port") if endpoint is not None else None
    port = port if isinstance(port, int) and not isinstance(port, bool) else None
    if endpoint is not None and endpoint.get("boot") == boot:
        return port, None
    for name in ("keys", "sessions"):
        shutil.rmtree(root / name, ignore_errors=True)
    (root / ENDPOINT_FILE).unlink(missing_ok=True)
    return None, port if endpoint is not None and not endpoint.get("error") else None


def write_endpoint(data_dir: str | Path, port: int, boot: str) -> None:
    record = {"host": LOOPBACK, "port": port, "pid": os.getpid(), "boot": boot}
    _write_private(_private_dir(web_dir(data_dir)) / ENDPOINT_FILE, json.dumps(record))


def write_failure(data_dir: str | Path, port: int, reason: str, boot: str) -> None:
    """Say why the web host could not listen on `port`, for whoever prints its address."""
    record = {"host": LOOPBACK, "port": port, "pid": os.getpid(), "boot": boot, "error": reason}
    _write_private(_private_dir(web_dir(data_dir)) / ENDPOINT_FILE, json.dumps(record))


def read_endpoint(data_dir: str | Path) -> dict[str, Any] | None:
    """What the web host wrote when it began to listen, or None."""
    try:
        record = json.loads((web_dir(data_dir) / ENDPOINT_FILE).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def endpoint_listening(endpoint: dict[str, Any]) -> bool:
    """True while the web host that wrote `endpoint` listens: its process runs, and the
    record is not the one it wrote when it could not listen (that process may still be
    exiting)."""
    if endpoint.get("error"):
        return False
    pid = endpoint.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def mint_key(data_dir: str | Path) -> str:
    """A new one-time key for the web host of the runtime on `data_dir`."""
    key = secrets.token_urlsafe(_TOKEN_BYTES)
    keys = _private_dir(web_dir(data_dir) / "keys")
    _write_private(keys / _digest(key), "")
    return key


def web_url(endpoint: dict[str, Any], key: str) -> str:
    return f"http://{LOOPBACK}:{endpoint['port']}/?key={key}"


def take_key(data_dir: str | Path, key: str) -> bool:
    """True once for a key that was minted: the first taker wins, a second gets False."""
    if not key or len(key) > 128:
        return False
    try:
        (web_dir(data_dir) / "keys" / _digest(key)).unlink()
    except OSError:
        return False
    return True


def new_session(data_dir: str | Path) -> str:
    """A new browser session's token (the cookie's value)."""
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    _write_private(_private_dir(web_dir(data_dir) / "sessions") / _digest(token), "")
    return token


def session_valid(data_dir: str | Path, token: str) -> bool:
    if not token or len(token) > 128:
        return False
    with contextlib.suppress(OSError):
        return (web_dir(data_dir) / "sessions" / _digest(token)).is_file()
    return False
