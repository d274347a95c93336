"""What the app's interpreter must reach, and how the launcher shows it to the app's uid.

The runtime may be installed anywhere: under /root (mode 0700), in a private home, in a
`mktemp -d` directory, or made under `umask 077`, where every file is the owner's alone.
The app runs as a uid of its own, which is "other" to every one of those files. So the
launcher works out each location the child needs (`needed`) and, in the app's mount
namespace only (nothing on the real file system changes), makes each reachable:

- every directory on the way to it that the app's uid may not search is covered by an
  empty tmpfs (0755), and what is needed below it is mounted back;
- a location its uid may read is mounted back as it is (`Show.as_owner` None): its files
  keep the modes they have, and a file closed to others stays closed;
- a location its uid may not read (owner-only: `umask 077`; for the app's code, any file
  below it too) is mounted back through an idmapped mount that shows the location's owner
  as the app's uid, read-only like the rest of its view. Of an import-path directory (the
  project root) only what Python can import is shown that way (packages with an
  `__init__`, modules, their metadata), never the rest of it: a key or a data dir beside
  the code stays out of its view. An installation (a venv, a Python's prefix) is shown
  whole.

The data dir is covered afterwards wherever it still shows (`--hide`).
"""

from __future__ import annotations

import importlib.machinery
import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

PRIVATE_TMP: Final = ("/tmp", "/var/tmp", "/dev/shm")  # shared, writable by all: covered
_MODULE_SUFFIXES: Final = tuple(importlib.machinery.all_suffixes())
_METADATA_SUFFIXES: Final = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class Show:
    """One thing mounted back at `path` (its real path): all of it, or, with `entries`, an
    empty tmpfs holding only those names of it. `as_owner`: (uid, gid) of the owner the
    app's uid is shown as (an idmapped mount), or None: shown as it is."""

    path: str
    as_owner: tuple[int, int] | None = None
    entries: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ViewPlan:
    covers: tuple[str, ...]  # empty tmpfs first, outermost only
    shows: tuple[Show, ...]  # then these, outer before inner


def needed(interpreter: str, import_path: list[str]) -> tuple[list[str], list[str]]:
    """(installations, import-path directories) the child's interpreter reads, as real
    paths: `interpreter` and every symlink on the way to its file, the shared libraries
    this interpreter has mapped (libpython), its prefixes (the stdlib, the venv), the
    pyvenv.cfg's `home`, and every directory on `import_path` and `sys.path`."""
    installs = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    installs.update(os.path.dirname(hop) for hop in _symlink_hops(interpreter))
    installs.update(os.path.dirname(path) for path in _mapped_files())
    home = _venv_home(sys.prefix)
    if home is not None:
        installs.add(home)
    real_installs = _real_dirs(installs)
    entries = _real_dirs([*import_path, *sys.path])
    return real_installs, [e for e in entries if not any(_within(e, i) for i in real_installs)]


def plan_view(installs: list[str], entries: list[str], *, other_uid: bool) -> ViewPlan:
    """What to cover and what to mount back. `other_uid`: the app runs as a uid of its own,
    to which every file here is "other"; else only the shared temporary dirs are covered
    (it keeps the launcher's uid, which reads what the launcher reads)."""
    locations = [*installs, *entries]
    covers = {p for p in PRIVATE_TMP if os.path.isdir(p) and not os.path.islink(p)}
    for path in locations if other_uid else []:
        blocked = next((a for a in _ancestors(path) if not _searchable(a)), None)
        if blocked is not None:
            covers.add(blocked)
    outer = sorted(c for c in covers if not any(_inside(c, o) for o in covers))
    shows: list[Show] = []
    for path in sorted(set(locations), key=lambda p: (p.count("/"), p)):
        if any(_comes_with(path, show) for show in shows):
            continue
        hidden = any(_within(path, c) for c in outer)
        if not other_uid or _open_to_others(path):
            if hidden:
                shows.append(Show(path))
            continue
        owner = _owner(path)
        if path in installs:
            shows.append(Show(path, owner))
        else:
            shows.append(Show(path, owner, _importable(path)))
    return ViewPlan(tuple(outer), tuple(shows))


def _comes_with(path: str, show: Show) -> bool:
    """`path` is in the app's view once `show` is mounted (all of it, or a shown entry)."""
    if show.entries is None:
        return _within(path, show.path)
    return any(_within(path, os.path.join(show.path, name)) for name in show.entries)


def entry_owner(path: str) -> tuple[int, int] | None:
    """How an entry of a filtered directory, or the app's verified code, is shown: as it is
    when others may read it and, for a directory, every directory and file below it; else
    with its owner shown as the app. A file closed to others below an open directory (as a
    umask of 077 leaves one) would fail the app's import, so every one of them counts."""
    names = [path]
    if os.path.isdir(path) and not os.path.islink(path):
        for root, dirs, files in os.walk(path):
            names += [os.path.join(root, name) for name in dirs + files]
    if all(os.path.islink(name) or _open_to_others(name) for name in names):
        return None
    return _owner(path)


def _importable(directory: str) -> tuple[str, ...]:
    """The names in an import-path directory that Python imports or reads: packages (with
    an `__init__`), modules, `__pycache__`, and distribution metadata."""
    found = []
    for entry in os.scandir(directory):
        name = entry.name
        if entry.is_dir(follow_symlinks=False):
            package = any(
                os.path.exists(os.path.join(entry.path, f"__init__{suffix}"))
                for suffix in _MODULE_SUFFIXES
            )
            if package or name == "__pycache__" or name.endswith(_METADATA_SUFFIXES):
                found.append(name)
        elif entry.is_file(follow_symlinks=False) and name.endswith(_MODULE_SUFFIXES):
            found.append(name)
    return tuple(sorted(found))


def _symlink_hops(path: str) -> list[str]:
    """`path` and every path a symlink on the way leads to, down to the real file."""
    hops, seen = [os.path.abspath(path)], set()
    while os.path.islink(hops[-1]) and hops[-1] not in seen and len(hops) < 40:
        seen.add(hops[-1])
        target = os.readlink(hops[-1])
        hops.append(os.path.normpath(os.path.join(os.path.dirname(hops[-1]), target)))
    hops.append(os.path.realpath(path))
    return hops


def _mapped_files() -> list[str]:
    """The files this interpreter has mapped: its binary, libpython, the C libraries and
    the extension modules it loaded (the child loads the same)."""
    paths = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].startswith("/"):
                    paths.add(fields[5].rstrip("\n").removesuffix(" (deleted)"))
    except OSError:
        return []
    return sorted(p for p in paths if os.path.isfile(p))


def _venv_home(prefix: str) -> str | None:
    """The `home` of a venv's pyvenv.cfg: the directory of the Python it was made from."""
    try:
        with open(os.path.join(prefix, "pyvenv.cfg")) as cfg:
            for line in cfg:
                key, sep, value = line.partition("=")
                if sep and key.strip() == "home":
                    return value.strip()
    except OSError:
        return None
    return None


def _real_dirs(paths: Iterable[str]) -> list[str]:
    found = {os.path.realpath(p) for p in paths if p}
    return sorted(p for p in found if os.path.isdir(p))


def _ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[:n]) for n in range(1, len(parts) + 1)]


def _searchable(path: str) -> bool:
    # The app's uid and gid are its own: on any directory not its own it is "other".
    return bool(os.stat(path).st_mode & stat.S_IXOTH)


def _open_to_others(path: str) -> bool:
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        return mode & (stat.S_IROTH | stat.S_IXOTH) == stat.S_IROTH | stat.S_IXOTH
    return bool(mode & stat.S_IROTH)


def _owner(path: str) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_uid, info.st_gid


def _inside(path: str, parent: str) -> bool:
    return path != parent and path.startswith(parent.rstrip("/") + "/")


def _within(path: str, parent: str) -> bool:
    return path == parent or _inside(path, parent)
