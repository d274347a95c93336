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
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.contracts import Code, ContractError

from ._bundle import MANIFEST_NAME, load_trusted_keys, trusted_keys_dir
from ._cache import BundleCache, CachedBundle
from ._registry import AppOperation, AppRecord, Refused, check_request, now_ms, semver_key


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
            raise Refused(Code.INVALID_PAYLOAD, "bundle: the path of a bundle file is needed")
        try:
            return self.cache.admit(Path(bundle), self._keys(), expected_scope=expected_scope)
        except ContractError as exc:
            raise Refused(str(exc.code), exc.detail) from None
        except OSError as exc:
            raise Refused(Code.BUNDLE_UNREADABLE, f"{bundle}: {exc.strerror or exc}") from None
        except ValueError as exc:  # a key file in the trust store that is not a key
            raise Refused(Code.BUNDLE_UNTRUSTED_KEY, f"trust store: {exc}") from None

    def _keys(self) -> dict[str, Any]:
        """The trust store as it is now (`DATA_DIR/trusted_keys/*.pub`)."""
        return load_trusted_keys(sorted(trusted_keys_dir(self.data_dir).glob("*.pub")))

    def reverify(self, digest: str | None) -> None:
        """A cached bundle checked again before its code runs (a launch, a rollback): a key
        removed from the trust store since the install stops it."""
        try:
            self.cache.reverify(digest or "", self._keys())
        except ContractError as exc:
            raise Refused(str(exc.code), exc.detail) from None
        except (OSError, ValueError) as exc:
            raise Refused(Code.BUNDLE_UNREADABLE, f"cache entry: {exc}") from None

    def manifest_of(self, digest: str | None) -> dict[str, Any] | None:
        entry = self.cache.entry(digest or "")
        if entry is None:
            return None
        manifest: dict[str, Any] = json.loads((entry / MANIFEST_NAME).read_bytes())
        return manifest

    def private_dir(self, scope: str) -> Path:
        return self.data_dir / "apps" / scope

    # -- the operations ----------------------------------------------------------------------

    def install(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        cached = self._admit(op, op.app_scope or None)
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
        )
        return Outcome([record], result={"app_scope": scope, "version": record.installed_version})

    def update(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        record = records[op.app_scope]
        cached = self._admit(op, op.app_scope)
        if cached.bundle.digest == record.bundle_digest:
            if op.step != "resumed":  # the very bundle that is installed
                raise Refused(Code.SAME_VERSION, f"{op.app_scope}: this bundle is installed")
            done = dataclasses.replace(record, install_state="installed")
            return Outcome([done], result={"version": record.installed_version})
        if cached.bundle.version == record.installed_version:
            raise Refused(
                Code.SAME_VERSION, f"{op.app_scope} {record.installed_version} is installed"
            )
        if semver_key(cached.bundle.version) < semver_key(record.installed_version):
            raise Refused(
                Code.OLDER_VERSION,
                f"{cached.bundle.version} is older than {record.installed_version}: roll back",
            )
        updated = dataclasses.replace(
            record,
            installed_version=cached.bundle.version,
            previous_version=record.installed_version,
            bundle_digest=cached.bundle.digest,
            previous_digest=record.bundle_digest,
            install_state="installed",
            manifest=cached.bundle.manifest.model_dump(mode="json", exclude_none=True),
        )
        return Outcome([updated], result={"version": updated.installed_version})

    def rollback(self, op: AppOperation, records: dict[str, AppRecord]) -> Outcome:
        record = records[op.app_scope]
        self.reverify(record.previous_digest)
        manifest = self.manifest_of(record.previous_digest)
        if manifest is None:
            raise Refused(Code.BUNDLE_MISSING, f"the bundle of {record.previous_version} is gone")
        back = dataclasses.replace(
            record,
            installed_version=str(record.previous_version),
            previous_version=record.installed_version,
            bundle_digest=record.previous_digest,
            previous_digest=record.bundle_digest,
            install_state="installed",
            manifest=manifest,
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
