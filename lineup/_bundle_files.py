"""What `lineup app build` packs of an app's package: the files the app runs, not the ones
around it (its tests, caches, dotfiles, keys, other bundles).

The rule is one list of patterns, the defaults (`LEFT_OUT`) followed by the lines of the
package's own `.bundleignore`; as in a `.gitignore`, the last pattern that matches a path
decides: a plain pattern leaves it out, `!pattern` keeps it. A pattern ending in `/`
matches directories only (and what a directory left out holds is left out with it); one
holding another `/` (a leading one too) is matched against the path from the package's
root, any other against the name at any depth; `*`, `?` and `[...]` as in `fnmatch`.
Blank lines and lines starting with `#` are skipped.

One thing no pattern brings back: a secret signing key (`lineup app keygen`'s NAME.key) is
never packed, whatever its name.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

IGNORE_FILE: Final = ".bundleignore"
LEFT_OUT: Final = (
    "__pycache__/",  # caches
    "*.pyc",
    "*.pyo",
    ".*",  # dotfiles and dot-directories: .git, .venv, .pytest_cache, .bundleignore
    "tests/",  # tests: the app's users run the app, not its tests
    "test/",
    "test_*.py",
    "*_test.py",
    "conftest.py",
    "*.key",  # a signing key, and bundles built into the package's directory
    "*.bundle",
)


@dataclass(frozen=True)
class _Pattern:
    glob: str
    keep: bool  # a `!` line: the path is packed
    dirs_only: bool
    anchored: bool  # matched against the whole relative path, not the name

    @classmethod
    def parse(cls, line: str) -> _Pattern | None:
        text = line.strip()
        if not text or text.startswith("#"):
            return None
        keep = text.startswith("!")
        text = text.removeprefix("!")
        body = text.rstrip("/")
        glob = body.lstrip("/")  # a leading `/` anchors it to the package's root
        return cls(glob, keep, body != text, "/" in body) if glob else None

    def matches(self, relative: str, is_dir: bool) -> bool:
        if self.dirs_only and not is_dir:
            return False
        target = relative if self.anchored else relative.rsplit("/", 1)[-1]
        return fnmatch.fnmatchcase(target, self.glob)


@dataclass(frozen=True)
class PackageFiles:
    files: dict[str, bytes]  # bundle entry (`app/...`) -> bytes
    left_out: list[str]  # paths from the package's root; a directory's ends in `/`


def _rules(root: Path) -> list[_Pattern]:
    lines = list(LEFT_OUT)
    ignore = root / IGNORE_FILE
    if ignore.is_file():
        lines += ignore.read_text(encoding="utf-8").splitlines()
    return [pattern for line in lines if (pattern := _Pattern.parse(line)) is not None]


def _left_out(rules: list[_Pattern], relative: str, is_dir: bool) -> bool:
    verdict = False
    for pattern in rules:
        if pattern.matches(relative, is_dir):
            verdict = not pattern.keep
    return verdict


def package_files(root: Path) -> PackageFiles:
    """The package's files as bundle entries, and what the rule left out. A symlink, or
    anything but a regular file, among what is packed is refused (`bundle_bad_path`)."""
    from actors.app_manager import BundleError, is_secret_key
    from contracts import Code

    rules = _rules(root)
    files: dict[str, bytes] = {}
    left_out: list[str] = []
    for directory, dirs, names in os.walk(root):
        here = Path(directory)
        kept_dirs = []
        for name in sorted(dirs):
            relative = (here / name).relative_to(root).as_posix()
            if _left_out(rules, relative, is_dir=True):
                left_out.append(f"{relative}/")
            elif (here / name).is_symlink():
                raise BundleError(Code.BUNDLE_BAD_PATH, f"{relative}: a symlinked directory")
            else:
                kept_dirs.append(name)
        dirs[:] = kept_dirs
        for name in sorted(names):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if _left_out(rules, relative, is_dir=False):
                left_out.append(relative)
                continue
            if path.is_symlink() or not path.is_file():
                raise BundleError(Code.BUNDLE_BAD_PATH, f"{relative}: not a regular file")
            data = path.read_bytes()
            if is_secret_key(data):
                left_out.append(relative)
                continue
            files[f"app/{relative}"] = data
    return PackageFiles(files, sorted(left_out))
