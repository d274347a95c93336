"""Saving bytes for the user into a folder (`Folder`): the runtime's own downloads,
`DATA_DIR/downloads/`, or the user's downloads folder (`user_downloads`: `XDG_DOWNLOAD_DIR`
from the environment or `~/.config/user-dirs.dirs`, else `~/Downloads`), under a name that
is safe to show.

A name comes from an app (or an artifact's title), so it is hostile until proven otherwise:
only its last path component is kept (`/` and `\\` both separate), control and invisible
formatting characters and NUL are dropped, leading dots (a hidden file) and trailing dots
and spaces go, a name the platforms reserve (`CON`, `NUL`, `COM1`, ...) gets a `_` in
front, and it is cut to `MAX_NAME_BYTES` of UTF-8 keeping its extension. What is left empty
is `download`. A name that exists already gets ` (1)`, ` (2)`, ... before its extension:
nothing is ever overwritten.

Every file operation goes through a descriptor of the folder, by a name that is one path
component, never following a symbolic link, so nothing a name says can lead out of it. The
runtime's own folder is itself opened without following a link; the user's may be a link
(to another disk, say): where it points is the user's choice, not an app's. The bytes are written
to a temporary file, fsynced, and linked to their name (a link never replaces a file), then
the directory is fsynced: a reader sees no file or a whole one, also after a crash.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

DOWNLOADS_DIR: Final = "downloads"
MAX_NAME_BYTES: Final = 200
MAX_TRIES: Final = 1000
FALLBACK_NAME: Final = "download"
_TEMPORARY: Final = ".partial-"
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_RESERVED: Final = frozenset(
    {"con", "prn", "aux", "nul"} | {f"com{n}" for n in range(10)} | {f"lpt{n}" for n in range(10)}
)


def safe_name(raw: str) -> str:
    """The display name a raw name is saved under (before any ` (n)` for a clash)."""
    last = raw.replace("\\", "/").split("/")[-1]
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in unicodedata.normalize("NFC", last)
        if ch == " " or unicodedata.category(ch) not in _HIDDEN_CATEGORIES
    )
    name = " ".join(kept.split()).lstrip(".").rstrip(". ")
    if not name:
        return FALLBACK_NAME
    if name.partition(".")[0].lower().rstrip() in _RESERVED:
        name = "_" + name
    return _cut(name)


def _cut(name: str, room: int = MAX_NAME_BYTES) -> str:
    """`name` within `room` bytes of UTF-8, its extension (a short last suffix) kept."""
    if len(name.encode()) <= room:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or len(extension.encode()) > 16:
        stem, extension = name, ""
    tail = f".{extension}" if extension else ""
    budget = room - len(tail.encode())
    cut = stem.encode()[:budget].decode(errors="ignore").rstrip(". ")
    return (cut or FALLBACK_NAME) + tail


def _candidates(name: str) -> Iterator[str]:
    yield name
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        stem, extension = name, ""
    tail = f".{extension}" if extension else ""
    for n in range(1, MAX_TRIES):
        suffix = f" ({n})"
        yield _cut(stem, MAX_NAME_BYTES - len((suffix + tail).encode())) + suffix + tail


_USER_DIRS_LINE: Final = re.compile(r'^\s*XDG_DOWNLOAD_DIR\s*=\s*"([^"]*)"\s*$')


@dataclass(frozen=True)
class Folder:
    """Where files are saved: `path`, and whether it is the runtime's own (`own`: made in
    the data dir, never reached through a link) or the user's."""

    path: Path
    own: bool

    @classmethod
    def runtime(cls, data_dir: Path) -> Folder:
        return cls(Path(data_dir) / DOWNLOADS_DIR, own=True)


def user_downloads(env: Mapping[str, str]) -> Folder:
    """The user's downloads folder, as the desktop names it: `XDG_DOWNLOAD_DIR` from the
    environment, else from `$XDG_CONFIG_HOME/user-dirs.dirs` (`~/.config`), else
    `~/Downloads`. `$HOME` in it is the home; a relative path is under the home."""
    home = Path(env.get("HOME") or Path.home())
    named = env.get("XDG_DOWNLOAD_DIR", "")
    if not named:
        config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for line in (config / "user-dirs.dirs").read_text(encoding="utf-8").splitlines():
                found = _USER_DIRS_LINE.match(line)
                if found:
                    named = found.group(1)
    named = named.replace("$HOME", str(home)).replace("${HOME}", str(home))
    path = Path(named).expanduser() if named else home / "Downloads"
    # The desktop's own rule: a folder that is the home itself is no downloads folder.
    if not path.is_absolute():
        path = home / path
    if path == home:
        path = home / "Downloads"
    return Folder(path, own=False)


def _open_folder(folder: Folder) -> int:
    """A descriptor of the folder (made if missing; the runtime's own never through a
    link)."""
    if not folder.own:
        os.makedirs(folder.path, 0o755, exist_ok=True)
        return os.open(folder.path, os.O_RDONLY | os.O_DIRECTORY)
    root = os.open(folder.path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder.path.name, 0o755, dir_fd=root)
        return os.open(folder.path.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
    finally:
        os.close(root)


def free_name(folder: Folder, raw: str) -> str:
    """The first name for `raw` that no file in the folder has now."""
    directory = _open_folder(folder)
    try:
        for candidate in _candidates(safe_name(raw)):
            if not _exists(candidate, directory):
                return candidate
    finally:
        os.close(directory)
    raise FileExistsError("no free name left")


def _exists(name: str, directory: int) -> bool:
    try:
        os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _same_content(name: str, directory: int, digest: str) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=directory)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as existing:
        return hashlib.file_digest(existing, "sha256").hexdigest() == digest


def save(folder: Folder, name: str, data: bytes, key: str) -> str:
    """Write `data` under `name` (chosen by `free_name` and recorded by the caller first)
    in the folder, or under the next free one when another file took that name
    meanwhile; the name it has. Safe to repeat with the same `key` (a request's id) and
    `name`: a file with the same content under `name` is the one saved, so a replay after a
    crash never writes a second copy."""
    digest = hashlib.sha256(data).hexdigest()
    directory = _open_folder(folder)
    temporary = _TEMPORARY + hashlib.sha256(key.encode()).hexdigest()[:24]
    try:
        if _same_content(name, directory, digest):
            return name
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
            0o644,
            dir_fd=directory,
        )
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        try:
            for candidate in _candidates(name):
                try:
                    os.link(temporary, candidate, src_dir_fd=directory, dst_dir_fd=directory)
                except FileExistsError:
                    continue
                os.fsync(directory)
                return candidate
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=directory)
        raise FileExistsError("no free name left")
    finally:
        os.close(directory)
