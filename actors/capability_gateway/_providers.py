"""What this host can do for an app, one provider per capability.

A provider says whether the app must be in the foreground to ask, whether its effect can be
repeated after a crash without the user seeing it twice (`idempotent`), how its input must
look (`check`, before the user is asked anything) and how it runs. A capability without a
provider here is `unsupported_on_host`, whatever the app declared.

- `file.save` (foreground, idempotent): bytes (`data_base64`, or `artifact_id` of one of the
  app's own artifacts) saved where the gateway decided first (`_places`): the folder it was
  given (the user's downloads folder, or `DATA_DIR/downloads/`), or the runtime's downloads
  for the page that shows the conversation, whose browser it is handed to (`_files`); the
  output is the saved file's display name only.
- `file.open` (foreground, not idempotent): the file the user chose for the app
  (`_file_open`), a new artifact of the app (`NewArtifact`); the output is its reference
  (`artifact`), never a path. Kept twice would be two artifacts, so a replay is `in_doubt`.
- `notification.show` (any time, not idempotent): shown by the desktop's notification
  service, else an open page of the web host, else the terminal chat with the bell
  (`_notifications`). Shown twice is seen twice, so a replay is `in_doubt`.
- `clipboard.write` (foreground, idempotent): text handed to `wl-copy` (Wayland) or `xclip`
  (X11), only where one is on PATH and its display is set.
- `speech.speak`, `speech.transcribe` (any time, idempotent): spoken into a WAV artifact of
  the app, and one of its WAV artifacts written out as text, on this host (`_speech`).
- `audio.record` (foreground, not idempotent: a second recording is another one): served
  where a page can record (a web host runs) or a sound server can (`_recording`), which
  runs it rather than a provider's `run`.

Inputs and outputs in detail:

- `file.save`: `input` {`name`, `data_base64`} or {`artifact_id`, `name`?}; the audit row
  of the effect says which place served; output {`name`}, the display name only.
- `file.open`: `input` {`accept`? (up to 16 media types `type/subtype`, `type/*`, or
  extensions such as `.png`; none: any file), `max_bytes`? (at most 192 KiB, the default;
  past it `invalid_payload`)}; the file's type is told from its bytes
  (`contracts/_file_choice.py`: PNG, JPEG, GIF, WebP, PDF, ZIP, gzip, WAV, Ogg, FLAC
  and MP3 by their signature, a declared type the bytes contradict refused, text as its
  text type, other bytes keep a type nothing can check, else `application/octet-stream`);
  output {`artifact`: its reference}.
- `notification.show`: `input` {`text`, `title`?}; output {`shown`}. Never
  `unsupported_on_host`: the terminal's way is always there.
- `clipboard.write`: `input` {`text`}; output {`written`}.
- `speech.speak`: `input` {`text`, at most 200 characters}; output {`artifact`,
  `duration_ms`}. `speech.transcribe`: `input` {`artifact_id`}; output {`text`,
  `duration_ms`}.
- `audio.record`: `input` {`max_seconds`?: 1 to 120, 30 left out}; output {`artifact_id`,
  `title`, `media_type`, `duration_ms`, `size`, `stopped`}; where neither a page nor the
  sound server can record (no web host, no `parec` with a PulseAudio or PipeWire server to
  reach), `unsupported_on_host`.

Anything else (`camera.capture`, …) is `unsupported_on_host`.
"""

from __future__ import annotations

import base64
import binascii
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

import trio

from contracts import file_wanted

from . import _files, _speech
from ._files import Folder
from ._notifications import PageCall, show_on_desktop, show_on_page, summary, write_for_terminal
from ._places import PAGE, HandOver, handed_by, saved_by
from ._provider_base import Effect, NewArtifact, Provider, Served
from ._provider_base import invalid as _invalid
from ._provider_base import text_field as _text
from ._provider_base import with_fields as _object
from ._recording import check_record, terminal_recorder

# How a file.open is served (the card's chooser), in the user's settings.
CHOSEN_BY: Final = "chosen by the user: a file input on the page's card, or /attach in the terminal"
MAX_NOTIFICATION_TEXT: Final = 500
MAX_NOTIFICATION_TITLE: Final = 100
MAX_CLIPBOARD_CHARS: Final = 64 * 1024
MAX_NAME_CHARS: Final = 1024
CLIPBOARD_TIMEOUT_S: Final = 5.0


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


def _file_save(
    data_dir: Path, folder: Folder, hand_over: HandOver | None
) -> Callable[[Effect], Awaitable[Served]]:
    async def run(effect: Effect) -> Served:
        assert effect.content is not None, "the gateway reads the content first"
        # For a page's browser it is kept in the runtime's downloads, where the web host
        # serves it from, and handed to the page; else saved in the folder it was given.
        to_page = effect.prepared.get("place") == PAGE and hand_over is not None
        place = Folder.runtime(data_dir) if to_page else folder
        saved = await trio.to_thread.run_sync(
            _files.save, place, str(effect.prepared["name"]), effect.content, effect.key
        )
        if hand_over is None or not to_page:
            return Served({"name": saved}, saved_by(folder, saved))
        conversation = str(effect.prepared["conversation_id"])
        pages = await hand_over(effect.key, {"conversation_id": conversation, "name": saved})
        return Served({"name": saved}, handed_by(saved, pages))

    return run


# -- file.open ---------------------------------------------------------------------------------


def check_file_open(raw: Any) -> dict[str, Any]:
    """`{accept?, max_bytes?}` (`contracts.file_wanted`)."""
    file_wanted(raw)
    return dict(raw or {})


async def _keep_chosen(effect: Effect) -> Served:
    """The chosen file (the content, its name and type decided by the gateway first), a new
    artifact of the app."""
    assert effect.content is not None, "the gateway gives the chosen file"
    media_type, name = str(effect.prepared["media_type"]), str(effect.prepared["name"])
    chosen = f"{effect.prepared.get('chooser')}: {media_type}, {len(effect.content)} bytes"
    return Served(
        {"artifact": NewArtifact(effect.content, media_type, name)},
        f"the file the user chose in the {chosen}",
    )


# -- notification.show -------------------------------------------------------------------------


def check_notification(raw: Any) -> dict[str, Any]:
    value = _object(raw, {"title", "text"})
    _text(value.get("text"), "text", MAX_NOTIFICATION_TEXT)
    _text(value.get("title"), "title", MAX_NOTIFICATION_TITLE, required=False)
    return value


def _notify(
    data_dir: Path, env: Mapping[str, str], page: PageCall | None
) -> Callable[[Effect], Awaitable[Served]]:
    """The desktop's service, else an open page, else the terminal (`_notifications`)."""

    async def run(effect: Effect) -> Served:
        app_title = str(effect.prepared.get("app_title") or effect.app_scope)
        title, text = str(effect.input.get("title") or ""), str(effect.input["text"])
        service = await show_on_desktop(env, summary(app_title, title), text)
        if service is not None:
            return Served(
                {"shown": True}, f"shown by the desktop's notification service ({service})"
            )
        if page is not None:
            shown_as = await show_on_page(page, effect.key, app_title, effect.input)
            if shown_as:
                how = "a browser notification" if shown_as == "system" else "the page's toast"
                return Served({"shown": True}, f"shown by an open page, as {how}")
        record = {
            "at_ms": int(time.time() * 1000),
            "app_scope": effect.app_scope,
            "app": app_title,
            "request_id": effect.key,
            "title": title,
            "text": text,
        }
        await trio.to_thread.run_sync(write_for_terminal, data_dir, record)
        return Served({"shown": True}, "kept for the terminal chat, shown there with the bell")

    return run


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


def written_by(command: list[str]) -> str:
    """How a clipboard.write is served here, in its audit row."""
    return f"written with {command[0]}"


def _clipboard(command: list[str]) -> Callable[[Effect], Awaitable[Served]]:
    async def run(effect: Effect) -> Served:
        with trio.fail_after(CLIPBOARD_TIMEOUT_S):
            await trio.run_process(
                command,
                stdin=effect.input["text"].encode(),
                capture_stdout=True,
                capture_stderr=True,
            )
        return Served({"written": True}, written_by(command))

    return run


async def _recorded_elsewhere(effect: Effect) -> Served:
    raise AssertionError("a recording is run by the gateway's `_recording`, not a provider")


def served_capabilities(env: Mapping[str, str], *, pages: bool = False) -> frozenset[str]:
    """The names of the capabilities this host serves (what an agent may be offered);
    `pages`: a web host runs, whose pages can record."""
    served = {"file.save", "file.open", "notification.show"}
    if clipboard_command(env) is not None:
        served.add("clipboard.write")
    served.update(_speech.speech_providers(env))
    if pages or terminal_recorder(env) is not None:
        served.add("audio.record")
    return frozenset(served)


def host_providers(
    data_dir: Path,
    env: Mapping[str, str],
    *,
    page: PageCall | None = None,
    hand_over: HandOver | None = None,
    folder: Folder | None = None,
) -> dict[str, Provider]:
    """The capabilities this host serves, by name; `page` asks the web host to show a
    notification on an open page, `hand_over` hands it a file saved for a page (None: the
    runtime runs no web host, whose pages could also record); `file.save` saves into
    `folder` otherwise (the runtime's downloads unless given)."""
    folder = folder or Folder.runtime(data_dir)
    providers = {
        "file.save": Provider(
            True,
            True,
            check_file_save,
            _file_save(data_dir, folder, hand_over),
            reads_artifact=True,
        ),
        "file.open": Provider(True, False, check_file_open, _keep_chosen),
        "notification.show": Provider(
            False, False, check_notification, _notify(data_dir, env, page)
        ),
    }
    command = clipboard_command(env)
    if command is not None:
        providers["clipboard.write"] = Provider(True, True, check_clipboard, _clipboard(command))
    providers.update(_speech.speech_providers(env))
    if page is not None or terminal_recorder(env) is not None:
        providers["audio.record"] = Provider(True, False, check_record, _recorded_elsewhere)
    return providers
