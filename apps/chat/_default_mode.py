"""The mode a new conversation starts in, the user's setting (`lineup settings mode`), kept
by the chat in its private directory (`settings.json`, replaced whole and durably, so a
reader sees the old setting or the new one).

A conversation keeps the mode it was given: changing this setting changes no conversation
that has begun. One that began while the setting was `im` has no mode recorded and is `im`;
one that begins while it is `audio` has `audio` recorded at its first event.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from contracts import replace_file

SETTINGS_FILE: Final = "settings.json"
MODES: Final = ("im", "audio")
DEFAULT: Final = "im"


def read_default_mode(app_dir: str | Path) -> str:
    """The setting, or `im` when none was set (or the file cannot be used)."""
    try:
        kept = json.loads((Path(app_dir) / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DEFAULT
    mode = kept.get("default_mode") if isinstance(kept, dict) else None
    return mode if mode in MODES else DEFAULT


def write_default_mode(app_dir: str | Path, mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"default_mode: one of {', '.join(MODES)}")
    folder = Path(app_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    replace_file(folder / SETTINGS_FILE, json.dumps({"default_mode": mode}))
