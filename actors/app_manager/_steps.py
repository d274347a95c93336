"""What each registry operation does, step by step, against the bundle cache and the disk.

Each function gets the operation and the registry as they are, does the work that is not a
database write (verify and cache a bundle, delete a private directory) and returns the
rows to write at the end. Every such piece of work is idempotent: a replay after a crash
of the app manager runs the same steps again and arrives at the same rows, so an operation
completes; a step that fails leaves the registry as it was (the operation `failed`), or,
if the registry had already been marked (`updating`), puts it back (`rolled_back`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contracts import Code, ContractError

from ._bundle import (
    MANIFEST_NAME,
    SIGNATURE_NAME,
    VerifiedBundle,
    load_trusted_keys,
    trusted_keys_dir,
)
from ._cache import BundleCache, CachedBundle
from ._registry import AppOperation, AppRecord, check_request, now_ms, semver_key

log = logging.getLogger("lineup.app_manager")


@dataclass
class Outcome:
    """The rows one operation leaves: records to replace or remove, settings to set."""

    records: list[AppRecord] = field(default_factory=list)
    remove_records: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)


class Steps:
    def __init__(self, data_dir: Path, cache: BundleCache) -> None:
        self.data_dir = data_dir
        self.cache = cache

    def _admit(self, op: AppOperation, expected_scope: str | None) -> CachedBundle:
        bundle = op.request.get("bundle")
        if not isinstance(bundle, str) or not bundle:
            raise ContractError(Code.INVALID_PAYLOAD, "bundle: the path of a bundle file is needed")
        try:
            return self.cache.admit(Path(bundle), self._keys(), expected_scope=expected_scope)
        except OSError as exc:
            raise ContractError(
                Code.BUNDLE_UNREADABLE, f"{bundle}: {exc.strerror or exc}"
            ) from None
        except ValueError as exc:  # a key file in the trust store that is not a key
            raise ContractError(Code.BUNDLE_UNTRUSTED_KEY, f"trust store: {exc}") from None

    @contextmanager
    def _unless_refused(
        self, cached: CachedBundle, records: dict[str, AppRecord]
    ) -> Iterator[None]:
        """The cache entry an operation admitted stays only if the operation goes on: when
        it is refused (or fails) after the admit, the entry goes again, unless a version
        in the registry uses it. A refused bundle leaves no trace in the cache; a replay
        after a crash admits it again and decides the same."""
        try:
            yield
        except Exception:
            digest = cached.bundle.digest
            used = {d for r in records.values() for d in (r.bundle_digest, r.previous_digest)}
            if digest not in used:
                try:
                    self.cache.remove(digest)
                except OSError as exc:  # an entry left is unused, never wrong: go on
                    log.warning("could not remove unused cache entry %s: %s", digest, exc)
            raise

    def drop_unused(self, records: dict[str, AppRecord]) -> int:
        """The cache keeps each app's installed and previous version and nothing else: an
        update's older versions and a removed app's go. Called once the registry that no
        longer names them is committed, so a crash never leaves a record without its
        entry; an entry left by a crash is dropped at the next call."""
        used = {d for r in records.values() for d in (r.bundle_digest, r.previous_digest) if d}
        dropped = 0
        for digest in sorted(self.cache.digests() - used):
            try:
                dropped += self.cache.remove(digest)
            except OSError as exc:  # an entry left is unused, never wrong: go on
                log.warning("could not remove unused cache entry %s: %s", digest, exc)
        return dropped

    def _keys(self) -> dict[str, Any]:
        """The trust store as it is now (`DATA_DIR/trusted_keys/*.pub`)."""
        return load_trusted_keys(sorted(trusted_keys_dir(self.data_dir).glob("*.pub")))

    def reverify(self, digest: str | None) -> VerifiedBundle:
        """A cached bundle checked again before its code runs (a launch, a rollback): a key
        removed from the trust store since the install stops it."""
        try:
            return self.cache.reverify(digest or "", self._keys())
        except (OSError, ValueError) as exc:
            raise ContractError(Code.BUNDLE_UNREADABLE, f"cache entry: {exc}") from None

    def manifest_of(self, digest: str | None) -> dict[str, Any] | None:
        entry = self.cache.entry(digest or "")
        if entry is None:
            return None
        manifest: dict[str, Any] = json.loads((entry / MANIFEST_NAME).read_bytes())
        return manifest

    def private_dir(self, scope: str) -> Path:
        return self.data_dir / "apps" / scope

    def _entry_key_id(self, digest: str | None) -> str | None:
        """The key id in a cache entry's signature record: the signer of a version
        installed before signers were recorded."""
        entry = self.cache.entry(digest or "")
        if entry is None:
            return None
        try:
            key_id = json.loads((entry / SIGNATURE_NAME).read_bytes())["key_id"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return key_id if isinstance(key_id, str) else None

    def _check_signer(
        self, op: AppOperation, record: AppRecord, bundle: VerifiedBundle
    ) -> tuple[str | None, str | None]:
        """An update comes from the installed version's signer: another key, even a
        trusted one, is another publisher, who would inherit the app's data and its
        instances. Only the user's explicit `accept_new_signer` admits it. Returns the
        installed version's signer (key id, public key), which becomes the previous one."""
        pinned_id = record.signer_key_id or self._entry_key_id(record.bundle_digest)
        if record.signer_public_key is not None:  # the whole key, not a 64-bit id
            same = bundle.public_key == record.signer_public_key
        else:  # recorded before signers were: the id is all there is; none is no match
            same = pinned_id is not None and bundle.key_id == pinned_id
        if not same and op.request.get("accept_new_signer") is not True:
            raise ContractError(
                Code.BUNDLE_SIGNER_CHANGED,
                f"the update is signed by key {bundle.key_id},"
                f" the installed version by key {pinned_id or 'unknown'}",
            )
        return pinned_id, record.signer_public_key

    # -- the operations ----------------------------------------------------------------------

    def install(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        cached = self._admit(op, op.app_scope or None)
        with self._unless_refused(cached, records):
            return self._install(op, cached, records)

    def _install(
        self, op: AppOperation, cached: CachedBundle, records: dict[str, AppRecord]
    ) -> Outcome:
        manifest = cached.bundle.manifest
        scope = manifest.app_scope
        existing = records.get(scope)
        resumed = op.state == "running" and op.step == "resumed"
        if resumed and existing is not None and existing.bundle_digest == cached.bundle.digest:
            return Outcome(
                [existing], result={"app_scope": scope, "version": cached.bundle.version}
            )
        check_request("install", scope, op.request, records)
        record = AppRecord(
            app_scope=scope,
            kind="installed",
            name=manifest.title or scope,
            installed_version=cached.bundle.version,
            bundle_digest=cached.bundle.digest,
            manifest=manifest.model_dump(mode="json", exclude_none=True),
            signer_key_id=cached.bundle.key_id,
            signer_public_key=cached.bundle.public_key,
        )
        return Outcome([record], result={"app_scope": scope, "version": record.installed_version})

    def update(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        cached = self._admit(op, op.app_scope)
        with self._unless_refused(cached, records):
            return self._update(op, cached, records[op.app_scope])

    def _update(self, op: AppOperation, cached: CachedBundle, record: AppRecord) -> Outcome:
        if cached.bundle.digest == record.bundle_digest:
            if op.step != "resumed":  # the very bundle that is installed
                raise ContractError(Code.SAME_VERSION, f"{op.app_scope}: this bundle is installed")
            done = dataclasses.replace(record, install_state="installed")
            return Outcome([done], result={"version": record.installed_version})
        if cached.bundle.version == record.installed_version:
            raise ContractError(
                Code.SAME_VERSION, f"{op.app_scope} {record.installed_version} is installed"
            )
        if semver_key(cached.bundle.version) < semver_key(record.installed_version):
            raise ContractError(
                Code.OLDER_VERSION,
                f"{cached.bundle.version} is older than the installed {record.installed_version}",
            )
        signer_key_id, signer_public_key = self._check_signer(op, record, cached.bundle)
        updated = dataclasses.replace(
            record,
            installed_version=cached.bundle.version,
            previous_version=record.installed_version,
            bundle_digest=cached.bundle.digest,
            previous_digest=record.bundle_digest,
            install_state="installed",
            manifest=cached.bundle.manifest.model_dump(mode="json", exclude_none=True),
            signer_key_id=cached.bundle.key_id,
            signer_public_key=cached.bundle.public_key,
            previous_signer_key_id=signer_key_id,
            previous_signer_public_key=signer_public_key,
        )
        return Outcome([updated], result={"version": updated.installed_version})

    def rollback(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        record = records[op.app_scope]
        verified = self.reverify(record.previous_digest)
        manifest = self.manifest_of(record.previous_digest)
        if manifest is None:
            raise ContractError(
                Code.BUNDLE_MISSING, f"the bundle of {record.previous_version} is gone"
            )
        # The previous version comes back with the signer it was installed with: its cache
        # entry must still be signed by that key.
        recorded = record.previous_signer_public_key
        recorded_id = record.previous_signer_key_id
        if (recorded is not None and verified.public_key != recorded) or (
            recorded is None and recorded_id is not None and verified.key_id != recorded_id
        ):
            raise ContractError(
                Code.BUNDLE_SIGNER_CHANGED,
                f"the cached {record.previous_version} is signed by key {verified.key_id},"
                f" not by key {recorded_id} it was installed with",
            )
        back = dataclasses.replace(
            record,
            installed_version=str(record.previous_version),
            previous_version=record.installed_version,
            bundle_digest=record.previous_digest,
            previous_digest=record.bundle_digest,
            install_state="installed",
            manifest=manifest,
            signer_key_id=recorded_id or verified.key_id,
            signer_public_key=recorded or verified.public_key,
            previous_signer_key_id=record.signer_key_id,
            previous_signer_public_key=record.signer_public_key,
        )
        return Outcome([back], result={"version": back.installed_version})

    def enable(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        record = records[op.app_scope]
        if record.enabled:
            return Outcome([record])
        return Outcome([dataclasses.replace(record, enabled=True, enabled_at_ms=now_ms())])

    def disable(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        record = records[op.app_scope]
        return Outcome([dataclasses.replace(record, enabled=False)])

    def remove(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        """Runs after the app's instances closed: its private data and its bundles go."""
        record = records[op.app_scope]
        shutil.rmtree(self.private_dir(op.app_scope), ignore_errors=True)
        in_use = {
            digest
            for other in records.values()
            if other.app_scope != op.app_scope
            for digest in (other.bundle_digest, other.previous_digest)
        }
        for digest in (record.bundle_digest, record.previous_digest):
            if digest and digest not in in_use:
                self.cache.remove(digest)
        return Outcome(remove_records=[op.app_scope])
