"""The app registry: records, operations and the rules an operation must pass.

The app manager is the one source of truth for what is installed and enabled. Every
change is an `AppOperation` (install, enable, disable, update, rollback, remove) that is
observable while it runs (`state`, `step`, `progress`) and ends `succeeded`, `failed`
(nothing changed) or `rolled_back` (it had begun and was undone); never half-done.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Final

from contracts import SCOPE_CHAT, Code, ContractError

# Where a record's signers travel in its row: the store keeps the columns it knows, and the
# manifest column is the app manager's JSON. A dotted key is never a manifest field name.
SIGNERS_KEY: Final = "lineup.signers"
SIGNER_FIELDS: Final = (
    "signer_key_id",
    "signer_public_key",
    "previous_signer_key_id",
    "previous_signer_public_key",
)
RECOVERY_APP: Final = SCOPE_CHAT  # the app everything falls back to; never removed or disabled
OPERATION_KINDS: Final = frozenset({"install", "enable", "disable", "update", "rollback", "remove"})
TERMINAL_STATES: Final = frozenset({"succeeded", "failed", "rolled_back"})


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class AppRecord:
    app_scope: str
    kind: str  # core | installed
    name: str
    installed_version: str
    previous_version: str | None = None
    enabled: bool = False
    install_state: str = "installed"  # installed | updating | failed
    active_instance_count: int = 0
    installed_at_ms: int = field(default_factory=now_ms)
    enabled_at_ms: int | None = None
    bundle_digest: str | None = None
    previous_digest: str | None = None
    manifest: dict[str, Any] | None = None
    # The key that signed each version (its id, and the whole public key in hex): an
    # update must come from the installed version's signer unless the user accepts a new
    # one, and a rollback goes back to the previous version's signer with its code.
    signer_key_id: str | None = None
    signer_public_key: str | None = None
    previous_signer_key_id: str | None = None
    previous_signer_public_key: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> AppRecord:
        values: dict[str, Any] = {f.name: row.get(f.name) for f in dataclasses.fields(cls)}
        manifest = values["manifest"]
        if isinstance(manifest, dict) and SIGNERS_KEY in manifest:
            manifest = dict(manifest)
            signers = manifest.pop(SIGNERS_KEY)
            values["manifest"] = manifest
            if isinstance(signers, dict):
                values.update({name: signers.get(name) for name in SIGNER_FIELDS})
        return cls(**values)

    def to_row(self) -> dict[str, Any]:
        """The row the store keeps: its columns, with the signers inside the manifest's."""
        row = dataclasses.asdict(self)
        signers = {name: row.pop(name) for name in SIGNER_FIELDS}
        if row["manifest"] is not None and any(signers.values()):
            row["manifest"] = {**row["manifest"], SIGNERS_KEY: signers}
        return row

    def public(self) -> dict[str, Any]:
        """The record with the fields the registry promises (and its signers), for the CLI
        and the app-registry app."""
        row = dataclasses.asdict(self)
        row.pop("manifest")
        return row


@dataclass
class AppOperation:
    operation_id: str
    kind: str
    app_scope: str
    state: str = "queued"  # queued | running | succeeded | failed | rolled_back
    step: str = ""
    progress: int = 0
    code: str | None = None
    detail: str | None = None
    request: dict[str, Any] = field(default_factory=dict)
    created_ms: int = field(default_factory=now_ms)
    updated_ms: int = field(default_factory=now_ms)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> AppOperation:
        values: dict[str, Any] = {f.name: row.get(f.name) for f in dataclasses.fields(cls)}
        values["request"] = values["request"] or {}
        return cls(**values)

    def to_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def done(self) -> bool:
        return self.state in TERMINAL_STATES

    def at(self, step: str, progress: int) -> AppOperation:
        return dataclasses.replace(
            self, state="running", step=step, progress=progress, updated_ms=now_ms()
        )

    def ended(self, state: str, code: str | None = None, detail: str | None = None) -> AppOperation:
        return dataclasses.replace(
            self,
            state=state,
            progress=100,
            code=code,
            detail=detail[:500] if detail else detail,
            updated_ms=now_ms(),
        )


def forget_finished(operations: dict[str, AppOperation], keep: int, slack: int) -> bool:
    """Forget the oldest finished `operations` past the newest `keep` once `slack` more
    have finished (running ones stay); whether any went."""
    finished = [op for op in operations.values() if op.done]
    if len(finished) <= keep + slack:
        return False
    finished.sort(key=lambda op: op.created_ms)
    for op in finished[: len(finished) - keep]:
        del operations[op.operation_id]
    return True


def semver_key(version: str) -> tuple[Any, ...]:
    """Semantic Versioning 2.0.0 precedence as a sort key: numbers numerically, a
    pre-release before its release, pre-release fields numeric before alphanumeric, fewer
    fields first; build metadata ignored. `version` is already a valid SemVer."""
    core, _, rest = version.partition("+")[0].partition("-")
    numbers = tuple(int(part) for part in core.split("."))
    if not rest:
        return (numbers, 1, ())
    fields = tuple((0, int(f), "") if f.isdigit() else (1, 0, f) for f in rest.split("."))
    return (numbers, 0, fields)


def core_records(
    existing: dict[str, AppRecord], core: dict[str, dict[str, Any]]
) -> list[AppRecord]:
    """The core apps' records (from their declared manifests, `core`), for those the
    registry does not have yet: always enabled."""
    made = []
    for scope, manifest in core.items():
        if scope not in existing:
            name, version = str(manifest.get("title") or scope), str(manifest["version"])
            made.append(
                AppRecord(scope, "core", name, version, enabled=True, enabled_at_ms=now_ms())
            )
    return made


def check_request(
    kind: str, scope: str, body: dict[str, Any], records: dict[str, AppRecord]
) -> None:
    """Raise `ContractError` if `kind` on `scope` cannot start from the registry as it is."""
    if kind not in OPERATION_KINDS:
        raise ContractError(Code.INVALID_PAYLOAD, f"kind: {kind!r} is not an operation")
    record = records.get(scope)
    if kind == "install":
        if record is not None and record.kind == "core":
            raise ContractError(
                Code.CORE_APP_PROTECTED, f"{scope!r} is a core app; no bundle replaces it"
            )
        if record is not None:
            raise ContractError(
                Code.ALREADY_INSTALLED, f"{scope!r} {record.installed_version} is installed"
            )
        return
    if record is None:
        raise ContractError(Code.APP_NOT_INSTALLED, f"no app {scope!r} is installed")
    if record.kind == "core" and kind in ("update", "rollback", "remove"):
        raise ContractError(
            Code.CORE_APP_PROTECTED, f"{scope!r} is a core app; it cannot be {kind}d"
        )
    if scope == RECOVERY_APP and kind == "disable":
        raise ContractError(Code.CORE_APP_PROTECTED, "chat is the recovery app; it stays enabled")
    if kind == "rollback" and not record.previous_version:
        raise ContractError(
            Code.NO_PREVIOUS_VERSION, f"{scope!r} has no previous version to return to"
        )
    if kind == "remove" and body.get("confirmed") is not True:
        raise ContractError(
            Code.CONFIRMATION_REQUIRED, f"removing {scope!r} needs the user's confirmation"
        )
