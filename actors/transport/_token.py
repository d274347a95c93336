"""Reading the runtime's AppServer token (docs/protocol.md §3.1).

The token file lives in the runtime's data dir with mode 0600; only the transport reads it,
and no app is ever told where it is (apps get no data dir, only their own). A file that
others may read is refused, like ssh refuses a readable key.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Final

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
    """Write `token` to `path` with mode 0600 (atomically)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(token + "\n")
    os.replace(tmp, path)
    return path
