"""Keeping and reading the runtime's AppServer token (docs/protocol.md §3.1).

The data dir's token is kept in the user's keyring where a Secret Service is on the session
bus (`_keyring`), else in the file `DATA_DIR/.runtime_token`, mode 0600; a token found in
the file once a keyring is there is moved into it. Only the transport reads it, and no app
is ever told where it is (apps get no data dir, no session bus, only their own directory).
A file that others may read is refused, like ssh refuses a readable key.
"""

from __future__ import annotations

import json
import logging
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, cast

from contracts import replace_file

from . import _keyring

log = logging.getLogger("lineup.transport")
T = TypeVar("T")

TOKEN_FILE: Final = ".runtime_token"


class TokenError(Exception):
    pass


def read_token(path: str | Path) -> str:
    """The bare token in `path`, or the runtime token of an AppServer credentials file."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise TokenError(f"cannot read the token file: {exc.strerror}") from None
    if stat.S_IMODE(mode) & 0o077:
        raise TokenError(f"{path.name} may be read by others (mode {stat.S_IMODE(mode):o})")
    if text.startswith("{"):
        try:
            text = str(json.loads(text)["runtime"]["token"])
        except (ValueError, KeyError, TypeError):
            raise TokenError(f"{path.name} is not a credentials file") from None
    if not text:
        raise TokenError(f"{path.name} is empty")
    return text


def write_token(path: str | Path, token: str) -> Path:
    """Write `token` to `path` with mode 0600 (whole and durably: a power cut leaves the old
    token or this one)."""
    path = Path(path)
    replace_file(path, token + "\n", mode=0o600)
    return path


# -- where the data dir's token is kept: the keyring where there is one, else the file --------


@dataclass(frozen=True)
class TokenHome:
    """Where a data dir's token is kept, for `lineup debug status`: `holder` is keyring,
    file or none; `detail` says it for a person."""

    holder: Literal["keyring", "file", "none"]
    detail: str


def _bounded(call: Callable[[], T]) -> T:
    """`call` (a keyring call, which blocks on the bus) in a thread of its own, waited for
    `KEYRING_TIMEOUT_S` at most: a keyring that hangs is a keyring that cannot be used."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except Exception as exc:
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="keyring", daemon=True)
    thread.start()
    thread.join(_keyring.KEYRING_TIMEOUT_S)
    if not outcome:
        raise _keyring.KeyringUnusable(
            f"the keyring did not answer within {_keyring.KEYRING_TIMEOUT_S:.0f} s; see that"
            " its service runs, or unset DBUS_SESSION_BUS_ADDRESS to keep the token in a file"
        )
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return cast(T, value)


def keep_token(data_dir: Path, token: str, env: Mapping[str, str]) -> str:
    """Keep the data dir's token: in the keyring where one is on the session bus and unlocked
    (and then no longer in the file), else in `DATA_DIR/.runtime_token` (0600). Where it went:
    keyring or file."""
    file = Path(data_dir) / TOKEN_FILE
    try:
        if _bounded(lambda: _keyring.write(data_dir, token, env)):
            file.unlink(missing_ok=True)  # the keyring has it: no copy stays behind
            return "keyring"
    except _keyring.KeyringUnusable as exc:
        log.warning("the AppServer token is kept in %s: %s", file.name, exc)
    write_token(file, token)
    return "file"


def load_token(token_file: Path, data_dir: Path | None, env: Mapping[str, str]) -> str:
    """The token the transport presents. A file of the user's own (`token_file` outside the
    data dir) is read as it is. The data dir's own token is the keyring's where there is
    one: a token found in the file is moved there first (the file removed only once the
    keyring gives it back); a locked keyring leaves a file in place and is read from it.
    Raises TokenError with one sentence."""
    token_file = Path(token_file)
    if data_dir is None or token_file != Path(data_dir) / TOKEN_FILE:
        return read_token(token_file)
    try:
        if token_file.exists():
            token = read_token(token_file)
            if _bounded(lambda: _keyring.write(data_dir, token, env)):
                token_file.unlink()
                log.info("the AppServer token moved from %s into the keyring", token_file.name)
            return token
        kept = _bounded(lambda: _keyring.read(data_dir, env))
    except _keyring.KeyringLocked as exc:
        if token_file.exists():  # still there: read from it, moved at a later start
            return read_token(token_file)
        raise TokenError(str(exc)) from None
    except _keyring.KeyringUnusable as exc:
        if token_file.exists():
            return read_token(token_file)
        raise TokenError(str(exc)) from None
    if kept is None:
        raise TokenError(
            f"no AppServer token: neither the keyring nor {TOKEN_FILE} in the data dir has one;"
            f" write it to {token_file} (mode 0600)"
        )
    return kept


def token_home(data_dir: Path, env: Mapping[str, str]) -> TokenHome:
    """Where the data dir's token is kept now, asked without reading it."""
    file = Path(data_dir) / TOKEN_FILE
    try:
        in_keyring = _bounded(lambda: _keyring.holds(data_dir, env))
        locked = in_keyring and _bounded(lambda: _keyring.locked(env))
    except _keyring.KeyringUnusable as exc:
        in_keyring, locked, problem = False, False, str(exc)
    else:
        problem = ""
    if file.exists():
        said = f"in {file} (mode 0600)"
        if in_keyring:
            said += ", also in the keyring: the file is moved there at the next start"
        return TokenHome("file", said + (f"; {problem}" if problem else ""))
    if in_keyring:
        return TokenHome("keyring", "in the keyring" + (" (locked)" if locked else ""))
    return TokenHome(
        "none", f"no token in the keyring nor in {file}" + (f"; {problem}" if problem else "")
    )
