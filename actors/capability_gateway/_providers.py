"""What this host can do for an app, one provider per capability.

A provider says whether the app must be in the foreground to ask, whether its effect can be
repeated after a crash without the user seeing it twice (`idempotent`), how its input must
look (`check`, before the user is asked anything) and how it runs. A capability without a
provider here is `unsupported_on_host`, whatever the app declared.

- `file.save` (foreground, idempotent): bytes (`data_base64`, or `artifact_id` of one of the
  app's own artifacts) saved where the gateway decided first (`_places`): the folder it was
  given (the user's downloads folder, or `DATA_DIR/downloads/`), or the runtime's downloads
  for the page that shows the conversation to hand to its browser (`_files`); the output is
  the saved file's display name only.
- `file.open` (foreground, not idempotent): the file the user chose for the app
  (`_file_open`), kept as one of the app's artifacts through the store; the output is its
  reference (`artifact_id`, `name`, `media_type`, `size`), never a path. Kept twice would
  be two artifacts, so a replay is `in_doubt`.
- `notification.show` (any time, not idempotent): a line appended to
  `DATA_DIR/notifications.jsonl`, which the terminal chat shows with the bell
  (`read_notifications`). Shown twice is seen twice, so a replay is `in_doubt`.
- `clipboard.write` (foreground, idempotent): text handed to `wl-copy` (Wayland) or `xclip`
  (X11), only where one is on PATH and its display is set.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import trio

from actors.contracts import Code, ContractError, file_wanted

from . import _files
from ._files import Folder

NOTIFICATIONS_FILE: Final = "notifications.jsonl"
MAX_NOTIFICATION_TEXT: Final = 500
MAX_NOTIFICATION_TITLE: Final = 100
MAX_CLIPBOARD_CHARS: Final = 64 * 1024
MAX_NAME_CHARS: Final = 1024
CLIPBOARD_TIMEOUT_S: Final = 5.0


@dataclass(frozen=True)
class Effect:
    """One run of a provider: the request's key (for idempotence), its app, its input, and
    what the gateway prepared before recording it as started (`prepared`)."""

    key: str
    app_scope: str
    input: dict[str, Any]
    prepared: dict[str, Any]
    content: bytes | None = None
    # The gateway's call to the store (a message type and its body), for an effect that
    # keeps something there: asked under an id of the request's, so asked once.
    store: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None


@dataclass(frozen=True)
class Provider:
    foreground: bool
    idempotent: bool
    check: Callable[[Any], dict[str, Any]]
    run: Callable[[Effect], Awaitable[dict[str, Any]]]


def _invalid(detail: str) -> ContractError:
    return ContractError(Code.INVALID_PAYLOAD, detail)


def _text(value: Any, field: str, limit: int, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise _invalid(f"input.{field}: a non-empty string is needed")
    if len(value) > limit:
        raise _invalid(f"input.{field}: at most {limit} characters")
    return value


def _object(raw: Any, fields: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _invalid("input: an object is needed")
    extra = sorted(set(raw) - fields)
    if extra:
        raise _invalid(f"input.{extra[0][:40]}: not a field of this capability")
    return raw


# -- file.save ---------------------------------------------------------------------------------


def check_file_save(raw: Any) -> dict[str, Any]:
    """`{name, data_base64}` or `{artifact_id, name?}`: exactly one source of bytes."""
    value = _object(raw, {"name", "data_base64", "artifact_id"})
    if ("data_base64" in value) == ("artifact_id" in value):
        raise _invalid("input: give either data_base64 or artifact_id")
    if "artifact_id" in value:
        _text(value["artifact_id"], "artifact_id", 80)
        _text(value.get("name"), "name", MAX_NAME_CHARS, required=False)
        return value
    _text(value.get("name"), "name", MAX_NAME_CHARS)
    if not isinstance(value["data_base64"], str):
        raise _invalid("input.data_base64: a base64 string is needed")
    try:
        base64.b64decode(value["data_base64"], validate=True)
    except binascii.Error:
        raise _invalid("input.data_base64: not valid base64") from None
    return value


def file_bytes(value: dict[str, Any]) -> bytes:
    return base64.b64decode(value["data_base64"], validate=True)


def _file_save(data_dir: Path, folder: Folder) -> Callable[[Effect], Awaitable[dict[str, Any]]]:
    async def run(effect: Effect) -> dict[str, Any]:
        assert effect.content is not None, "the gateway reads the content first"
        # For a page's browser it is kept in the runtime's downloads, where the web host
        # serves it from; else in the folder the gateway was given.
        place = Folder.runtime(data_dir) if effect.prepared.get("place") == "page" else folder
        saved = await trio.to_thread.run_sync(
            _files.save, place, str(effect.prepared["name"]), effect.content, effect.key
        )
        return {"name": saved}

    return run


# -- file.open ---------------------------------------------------------------------------------


def check_file_open(raw: Any) -> dict[str, Any]:
    """`{accept?, max_bytes?}` (`actors.contracts.file_wanted`)."""
    file_wanted(raw)
    return dict(raw or {})


async def _keep_chosen(effect: Effect) -> dict[str, Any]:
    """The chosen file (the content, its name and type decided by the gateway first) kept
    as one of the app's artifacts: its reference."""
    assert effect.content is not None and effect.store is not None, "the gateway gives both"
    body = {
        "app_scope": effect.app_scope,
        "data": effect.content,
        "media_type": str(effect.prepared["media_type"]),
        "title": str(effect.prepared["name"]),
    }
    if effect.prepared.get("conversation_id"):
        body["conversation_id"] = str(effect.prepared["conversation_id"])
    kept = await effect.store("store.artifacts.chosen", body)
    return {
        "artifact_id": kept["artifact_id"],
        "name": kept["title"],
        "media_type": kept["media_type"],
        "size": kept["size"],
    }


# -- notification.show -------------------------------------------------------------------------


def check_notification(raw: Any) -> dict[str, Any]:
    value = _object(raw, {"title", "text"})
    _text(value.get("text"), "text", MAX_NOTIFICATION_TEXT)
    _text(value.get("title"), "title", MAX_NOTIFICATION_TITLE, required=False)
    return value


def _notify(data_dir: Path) -> Callable[[Effect], Awaitable[dict[str, Any]]]:
    def append(line: str) -> None:
        with open(data_dir / NOTIFICATIONS_FILE, "a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())

    async def run(effect: Effect) -> dict[str, Any]:
        record = {
            "at_ms": int(time.time() * 1000),
            "app_scope": effect.app_scope,
            "request_id": effect.key,
            "title": effect.input.get("title") or "",
            "text": effect.input["text"],
        }
        await trio.to_thread.run_sync(append, json.dumps(record, ensure_ascii=False))
        return {"shown": True}

    return run


def read_notifications(data_dir: Path, after: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The notifications written past byte `after` of the file, and where they end: what a
    UI polls to show new ones (each once)."""
    path = Path(data_dir) / NOTIFICATIONS_FILE
    try:
        with open(path, "rb") as source:
            source.seek(after)
            chunk = source.read()
    except OSError:
        return [], after
    whole = chunk[: chunk.rfind(b"\n") + 1]  # a line being written is read next time
    shown = []
    for line in whole.splitlines():
        try:
            shown.append(dict(json.loads(line)))
        except (ValueError, TypeError):
            continue
    return shown, after + len(whole)


# -- clipboard.write ---------------------------------------------------------------------------


def check_clipboard(raw: Any) -> dict[str, Any]:
    value = _object(raw, {"text"})
    _text(value.get("text"), "text", MAX_CLIPBOARD_CHARS)
    return value


def clipboard_command(env: Mapping[str, str]) -> list[str] | None:
    """The command that writes the clipboard on this host, or None where there is none (no
    tool on PATH, or no display for it)."""
    path = env.get("PATH", "")
    if env.get("WAYLAND_DISPLAY") and shutil.which("wl-copy", path=path):
        return ["wl-copy"]
    if env.get("DISPLAY") and shutil.which("xclip", path=path):
        return ["xclip", "-selection", "clipboard"]
    return None


def _clipboard(command: list[str]) -> Callable[[Effect], Awaitable[dict[str, Any]]]:
    async def run(effect: Effect) -> dict[str, Any]:
        with trio.fail_after(CLIPBOARD_TIMEOUT_S):
            await trio.run_process(
                command,
                stdin=effect.input["text"].encode(),
                capture_stdout=True,
                capture_stderr=True,
            )
        return {"written": True}

    return run


def served_capabilities(env: Mapping[str, str]) -> frozenset[str]:
    """The names of the capabilities this host serves (what an agent may be offered)."""
    served = {"file.save", "file.open", "notification.show"}
    if clipboard_command(env) is not None:
        served.add("clipboard.write")
    return frozenset(served)


def host_providers(
    data_dir: Path, env: Mapping[str, str], *, folder: Folder | None = None
) -> dict[str, Provider]:
    """The capabilities this host serves, by name; `file.save` saves into `folder` (the
    runtime's downloads unless given)."""
    folder = folder or Folder.runtime(data_dir)
    providers = {
        "file.save": Provider(True, True, check_file_save, _file_save(data_dir, folder)),
        "file.open": Provider(True, False, check_file_open, _keep_chosen),
        "notification.show": Provider(False, False, check_notification, _notify(data_dir)),
    }
    command = clipboard_command(env)
    if command is not None:
        providers["clipboard.write"] = Provider(True, True, check_clipboard, _clipboard(command))
    return providers
