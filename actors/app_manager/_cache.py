"""The content-addressed bundle cache: `DATA_DIR/bundles/<sha256 of the bundle>/`.

A bundle is an immutable artifact, and one that fails verification never enters
the cache. So an entry appears only whole, only after every check, and is never written
again: the verified contents are written into a temporary directory beside the entries
(same filesystem), made read-only, flushed to disk, and renamed into place in one step. A
reader sees no entry or a complete one, also after a crash; an existing entry is reused.

The bytes extracted are the bytes verified: the bundle file is read once, and nothing is
taken from it again after the checks.

`admit(path, trusted_keys)` verifies (every time, also for a known digest: trust may have
changed), then reuses an existing entry or writes a new one. Files are 0444 and
directories 0555, set with `fchmod`/`chmod`, never left to the umask, which under `umask
077` would make the code its owner's alone and unreadable to the app's uid; a concurrent
admit of the same bytes that loses the rename reuses the winner's entry. `reverify`, before
an app's code runs, checks the entry again as at install and gives every directory and file
of it those modes where it has others. `statistics()` gives entries, admitted, reused,
refused. An install or update refused after its admit (`already_installed`,
`same_version`, `older_version`, `bundle_signer_changed`, or a failed step) removes the
entry it admitted, unless the installed or the previous version of an app uses it
(`Steps._unless_refused`): a refused operation leaves the cache as it found it. Each app
keeps at most two entries, its installed and its previous version; an older one goes once
the registry that no longer names it is committed (and at the app manager's start), and a
removed app's go with it.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import nacl.signing

from contracts import RUNTIME_SDK_FEATURES, Code, fsync_directory

from ._bundle import (
    MANIFEST_NAME,
    SIGNATURE_NAME,
    BundleContents,
    BundleError,
    BundleLimits,
    VerifiedBundle,
    read_bundle_file,
    verify_bundle_data,
    verify_contents,
)

_TEMP_PREFIX: Final = ".tmp-"
_DIGEST: Final = re.compile(r"^[0-9a-f]{64}$")
_FILE_MODE: Final = 0o444
_DIR_MODE: Final = 0o555


@dataclass(frozen=True)
class CachedBundle:
    """A verified bundle in the cache: its files are under `dir`."""

    dir: Path
    bundle: VerifiedBundle
    reused: bool  # the entry was already there (the same bytes were admitted before)


@dataclass(frozen=True)
class CacheStatistics:
    entries: int
    admitted: int
    reused: int
    refused: int


def bundle_cache_dir(data_dir: str | Path) -> Path:
    return Path(data_dir) / "bundles"


def _remove_tree(path: Path) -> None:
    """Removes a (possibly read-only) tree; read-only directories refuse unlinking."""
    if not path.exists():
        return
    for root, dirs, _ in os.walk(path):
        for name in (root, *(os.path.join(root, d) for d in dirs)):
            os.chmod(name, stat.S_IRWXU)
    shutil.rmtree(path)


def _restore_modes(entry: Path) -> None:
    """Gives every directory and file of a cache entry its mode (`_DIR_MODE`, `_FILE_MODE`)
    where it has another, as one written under a umask that cut them has. The bytes are
    not touched: the modes are what lets the app's own uid read the code it runs."""
    for root, _, files in os.walk(entry):  # every directory is a `root` once
        modes = [(root, _DIR_MODE), *((os.path.join(root, f), _FILE_MODE) for f in files)]
        for name, mode in modes:
            info = os.lstat(name)
            if not stat.S_ISLNK(info.st_mode) and stat.S_IMODE(info.st_mode) != mode:
                os.chmod(name, mode)


def _extract(contents: BundleContents, target: Path) -> None:
    entries = {MANIFEST_NAME: contents.manifest, **contents.files}
    if contents.signature is not None:
        entries[SIGNATURE_NAME] = contents.signature
    directories = {target}
    for name, data in entries.items():
        path = target / name
        # The names passed `check_path` already; this guards the guard.
        if not path.resolve().is_relative_to(target.resolve()):
            raise ValueError(f"{name!r} leaves the cache entry")
        path.parent.mkdir(parents=True, exist_ok=True)
        parent = path.parent
        while parent != target:
            directories.add(parent)
            parent = parent.parent
        # Created read-only: the mode only governs later opens, not this descriptor. It is
        # set explicitly too, since the umask cuts the one given to open (077 would leave
        # the code its owner's alone, which the app's own uid is not).
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _FILE_MODE)
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), _FILE_MODE)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    # Deepest first: a directory is flushed after what it holds, then closed for writing.
    for directory in sorted(directories, key=lambda p: len(p.parts), reverse=True):
        fsync_directory(directory)
        os.chmod(directory, _DIR_MODE)


class BundleCache:
    """Verified bundles by content digest, under `root` (`bundle_cache_dir(DATA_DIR)`)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._admitted = self._reused = self._refused = 0

    def entry(self, digest: str) -> Path | None:
        """The directory of the bundle with this SHA-256, if it is in the cache."""
        if not _DIGEST.match(digest):  # a digest from a record is still never a path
            return None
        path = self.root / digest
        return path if path.is_dir() else None

    def reverify(
        self, digest: str, trusted_keys: Mapping[str, nacl.signing.VerifyKey]
    ) -> VerifiedBundle:
        """The cache entry checked again as a bundle is at install (signature by a key
        trusted *now*, every file's hash, the manifest): before its code runs, since
        trust may have changed since it was admitted. `BundleError` if it fails. Its modes
        are restored where they differ (`_restore_modes`)."""
        entry = self.entry(digest)
        if entry is None:
            raise BundleError(Code.BUNDLE_MISSING_FILE, f"no cache entry {digest[:16]}")
        files: dict[str, bytes] = {}
        app = entry / "app"
        for path in sorted(app.rglob("*")):
            if path.is_symlink() or (not path.is_file() and not path.is_dir()):
                raise BundleError(Code.BUNDLE_BAD_PATH, f"{path.relative_to(entry)}: not a file")
            if path.is_file():
                files[path.relative_to(entry).as_posix()] = path.read_bytes()
        signature = entry / SIGNATURE_NAME
        contents = BundleContents(
            manifest=(entry / MANIFEST_NAME).read_bytes(),
            signature=signature.read_bytes() if signature.is_file() else None,
            files=files,
        )
        verified = verify_contents(contents, trusted_keys, digest=digest)
        _restore_modes(entry)
        return verified

    def admit(
        self,
        path: str | Path,
        trusted_keys: Mapping[str, nacl.signing.VerifyKey],
        *,
        limits: BundleLimits | None = None,
        offered_features: frozenset[str] = RUNTIME_SDK_FEATURES,
        expected_scope: str | None = None,
    ) -> CachedBundle:
        """Verifies the bundle at `path` and returns its cache entry, extracting it if new.

        Verification runs every time, also for an entry already present: trust may have
        changed since (a key removed from the trust store), the bytes have not.
        """
        try:
            verified, contents = verify_bundle_data(
                read_bundle_file(path, limits),
                trusted_keys,
                limits=limits,
                offered_features=offered_features,
                expected_scope=expected_scope,
            )
        except BundleError:
            self._refused += 1
            raise
        target = self.root / verified.digest
        if target.is_dir():
            self._reused += 1
            return CachedBundle(target, verified, reused=True)
        self.root.mkdir(parents=True, exist_ok=True)
        temp = Path(
            tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{verified.digest[:16]}-", dir=self.root)
        )
        try:
            _extract(contents, temp)
            os.rename(temp, target)
        except OSError as exc:
            _remove_tree(temp)
            # Someone admitted the same bytes meanwhile: theirs is as good as ours.
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST) and target.is_dir():
                self._reused += 1
                return CachedBundle(target, verified, reused=True)
            raise
        except BaseException:
            _remove_tree(temp)
            raise
        fsync_directory(self.root)
        self._admitted += 1
        return CachedBundle(target, verified, reused=False)

    def remove(self, digest: str) -> bool:
        """Drop an entry that no app record names any more; False if it was not there.

        The entry is renamed aside first, so a crash mid-delete leaves a temp dir (swept
        at the next start), never a half entry under its digest.
        """
        path = self.entry(digest)
        if path is None:
            return False
        aside = Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}rm-", dir=self.root))
        os.chmod(path, stat.S_IRWXU)  # moving a directory rewrites its `..`: it must be writable
        os.rename(path, aside / "entry")
        _remove_tree(aside)
        return True

    def digests(self) -> set[str]:
        """The digests of every entry in the cache."""
        if not self.root.is_dir():
            return set()
        return {p.name for p in self.root.iterdir() if _DIGEST.match(p.name) and p.is_dir()}

    def sweep(self) -> int:
        """Remove what an admit or a remove cut short by a crash left behind."""
        if not self.root.is_dir():
            return 0
        left = [p for p in self.root.iterdir() if p.name.startswith(_TEMP_PREFIX)]
        for path in left:
            _remove_tree(path)
        return len(left)

    def statistics(self) -> CacheStatistics:
        entries = 0
        if self.root.is_dir():
            entries = sum(
                1 for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(_TEMP_PREFIX)
            )
        return CacheStatistics(entries, self._admitted, self._reused, self._refused)
