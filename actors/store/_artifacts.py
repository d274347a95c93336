"""Artifacts: bytes an app made, with a media type and a title, kept by the runtime.

An artifact's content is the file `DATA_DIR/artifacts/<artifact_id>`, named by the id the
store mints and never by anything the app chose; its metadata is a row of `artifacts`.
The content is written first (a temporary file, fsynced, renamed into place, the directory
fsynced), then the row is committed with the request's record: a row always names a whole
file. A file without a row (a crash between the rename and the commit, or a removal cut
short) and a temporary file are swept when the store starts, so no half artifact is ever
visible.

Who may do what (the app's scope is the sender the supervisor stamped, never a body field):

- an app creates artifacts of its own, each within `ArtifactLimits` (its config's
  `artifact_limits`); a conversation it names must be one an instance of it is in
  (a live instance in the app manager's registry), else `ownership_mismatch`;
- an app reads and lists its own artifacts; the chat app reads any (it shows them); an id
  that is not the app's own gets `ownership_mismatch` whether it exists or not, so no app
  learns what others made;
- the tool router reads an artifact's metadata (a tool result naming one), the capability
  gateway reads it whole (the user saving it, a provider reading it);
- the capability gateway keeps an artifact a provider made for an app (`store.artifacts.keep`:
  the app named in its body, which only the gateway's door takes), within that app's quotas;
  the conversation it names is kept only when an instance of the app is in it; one kept
  `replaceable` (the chat's speech) makes room for itself by letting go of the app's oldest
  replaceable ones, never of another kind;
- an app's artifacts go with its record when the app is removed (`store.apps.removed`).

Refusals of an app are audited, at most once per sender every `REFUSAL_AUDIT_S` seconds
(with the count since), so a flood costs the store one row.

| table | key | content |
|---|---|---|
| `artifacts` | `artifact_id` | `app_scope`, `instance_id`, `conversation_id`, `title`, |
| | | `media_type`, `size`, `sha256`, `created_ms` |

The file is mode 0600 and named `art_` and a fresh id. A list comes a page (100) at a time,
oldest first, each going on after one of the app's own artifacts (`after`; `next` is the
id to ask after, or null); after another app's it starts from the first, as after an
unknown one. The chat and the capability gateway are told `artifact_not_found` for an id
that does not exist; the tool router's `store.artifacts.meta` answers null. The sweep at
start runs before the store takes any message (tested with the store SIGKILLed at the
crash points `store.artifact_mid_file` and `store.artifact_before_commit`); a removed
app's files go right after the commit that removes its rows.

**Quotas** (`ArtifactLimits`, beside `AppLimits` in `actors/kernel/_specs.py`): an artifact
travels in one message, so it holds at most `max_bytes` (192 KiB, at most 240 KiB: under an
app's packed body of 256 KiB, which the supervisor refuses as `too_large` before the store
sees it), else `too_large`; an app keeps at most `max_count` artifacts (1,000) and
`max_total_bytes` (64 MiB), else `quota_exceeded`; a media type is `type/subtype` in RFC
6838's characters, without parameters, its type one of `media_types` (application, audio,
font, image, model, text, video), and a title 1 to `max_title` characters (200) without
control or format characters, else `invalid_payload`.

An artifact lives as long as its app is installed: across restarts of the app, the store
and the runtime, and while the app is disabled or updated. In a tool result the agent gets
the store's reference, never a path (`actors/tool_router/_artifacts.py`); the chat's
timeline shows it with the call. `lineup artifacts list | show` read `runtime.db`
(`read_artifacts`, `read_artifact`), runtime up or not; saving one is the user's (`lineup
artifacts save`, the page's Save: `capability_gateway.save_artifact`), and a saved copy is
the user's and stays when the app is removed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from actors.app_manager.registry import RegistryReader
from actors.kernel import Actor, ArtifactLimits, Message, crash_point, handles, new_id
from contracts import SCOPE_CHAT, Code, ContractError, fsync_directory, replace_file

from .door import ArtifactCreate, ArtifactId, ArtifactKeep, ArtifactPage

log = logging.getLogger("lineup.store")

ARTIFACTS_DIR: Final = "artifacts"
ARTIFACT_COLUMNS: Final = (
    "artifact_id",
    "app_scope",
    "instance_id",
    "conversation_id",
    "title",
    "media_type",
    "size",
    "sha256",
    "created_ms",
)
# What a reference to an artifact shows (the agent, the chat, a tool result): never a path.
REFERENCE_FIELDS: Final = ("artifact_id", "title", "media_type", "size")
ARTIFACT_ID: Final = re.compile(r"art_[0-9A-Za-z]{26}")  # whole: `fullmatch`
# RFC 6838's restricted names: `type/subtype`, no parameters.
_MEDIA_TYPE: Final = re.compile(
    r"([a-z][a-z0-9]{0,30})/([a-z0-9][a-z0-9!#$&^_.+-]{0,126})", re.IGNORECASE
)
# Instances that are over: a conversation is an app's only while one is not.
REFUSAL_AUDIT_S: Final = 10.0
# Rows in one answer to a list: a row is at most ~4.3 KiB (a title of 1,000 characters of
# four bytes), so a page stays well under the 1 MiB frame.
LIST_PAGE: Final = 100


def is_artifact_id(value: object) -> bool:
    """True for an id of the form the store mints (whether or not an artifact has it)."""
    return isinstance(value, str) and ARTIFACT_ID.fullmatch(value) is not None


def reference(row: dict[str, Any]) -> dict[str, Any]:
    return {key: row[key] for key in REFERENCE_FIELDS}


def artifact_rows(
    db: sqlite3.Connection,
    where: str = "1",
    params: tuple[Any, ...] = (),
    *,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Rows in the order they were made (rowid: the order of their commits)."""
    rows = db.execute(
        f"SELECT {', '.join(ARTIFACT_COLUMNS)} FROM artifacts WHERE {where} ORDER BY rowid"
        + (f" LIMIT {int(limit)}" if limit is not None else ""),
        params,
    )
    return [dict(zip(ARTIFACT_COLUMNS, row, strict=True)) for row in rows]


def artifact_row(db: sqlite3.Connection, artifact_id: str) -> dict[str, Any] | None:
    rows = artifact_rows(db, "artifact_id = ?", (artifact_id,))
    return rows[0] if rows else None


def forget_artifacts(db: sqlite3.Connection, scopes: Iterable[str]) -> None:
    """The rows of these apps' artifacts, inside the caller's transaction; their files go
    with the sweep the caller runs after its commit (`ArtifactTables.sweep_artifacts`)."""
    for scope in scopes:
        db.execute("DELETE FROM artifacts WHERE app_scope = ?", (scope,))


def check_media_type(media_type: str, limits: ArtifactLimits) -> None:
    match = _MEDIA_TYPE.fullmatch(media_type)
    if match is None:
        raise ContractError(
            Code.INVALID_PAYLOAD,
            f"media_type {media_type[:80]!r} is not of the form type/subtype",
        )
    if match.group(1).lower() not in limits.media_types:
        raise ContractError(
            Code.INVALID_PAYLOAD,
            f"media_type {media_type[:80]!r}: the type is not one of"
            f" {', '.join(limits.media_types)}",
        )


def check_title(title: str, limits: ArtifactLimits) -> None:
    if not title or len(title) > limits.max_title:
        raise ContractError(
            Code.INVALID_PAYLOAD, f"title: 1 to {limits.max_title} characters, not {len(title)}"
        )
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in title):
        raise ContractError(Code.INVALID_PAYLOAD, "title: no control or format characters")


def _write_durably(directory: Path, name: str, data: bytes) -> Path:
    """`data` as `directory/name`, whole or not at all (`replace_file`); a crash point
    halfway through the bytes."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    final = directory / name
    replace_file(final, _halves(data))
    return final


def _halves(data: bytes) -> Iterator[bytes]:
    half = len(data) // 2
    yield data[:half]
    crash_point("store.artifact_mid_file")
    yield data[half:]


class ArtifactTables(Actor):
    """The store's handlers for artifacts (mixed into `StoreActor`)."""

    db: sqlite3.Connection
    registry: RegistryReader
    _once: Callable[[Message, Callable[[], Any]], Any]
    _audit: Callable[[str, str, str | None, int | None, str], None]
    artifact_limits: ArtifactLimits

    # -- the store's side: where, how much, what a crash left ----------------------------

    @property
    def artifacts_dir(self) -> Path:
        return Path(str(self.config["data_dir"])) / ARTIFACTS_DIR

    def open_artifacts(self) -> None:
        """At the store's start, before any message: the quotas from its config (a config
        that breaks them stops the start, naming the field), and what a crash left swept."""
        self.artifact_limits = ArtifactLimits.model_validate(
            self.config.get("artifact_limits") or {}
        )
        # sender → (refusals since the last audited one, when that one was audited)
        self.artifact_refusals: dict[str, tuple[int, float]] = {}
        swept = self.sweep_artifacts()
        if swept:
            log.warning("swept %d artifact files no row names (a create cut short)", swept)

    def sweep_artifacts(self) -> int:
        """Remove every file of the artifact directory that no row names (temporary files,
        a create or a removal cut short by a crash); how many went."""
        if not self.artifacts_dir.is_dir():
            return 0
        known = {row[0] for row in self.db.execute("SELECT artifact_id FROM artifacts")}
        swept = 0
        for entry in os.scandir(self.artifacts_dir):
            if entry.name not in known:
                Path(entry.path).unlink(missing_ok=True)
                swept += 1
        if swept:
            fsync_directory(self.artifacts_dir)
        return swept

    def _artifact_refused(self, msg: Message, error: ContractError) -> ContractError:
        """Audit an app's refusal (at most once per sender every `REFUSAL_AUDIT_S`, with the
        count since); the error to raise."""
        refusals = self.artifact_refusals
        count, last = refusals.get(msg.sender, (0, 0.0))
        now = time.monotonic()
        if last and now - last < REFUSAL_AUDIT_S:
            refusals[msg.sender] = (count + 1, last)
            return error
        refusals[msg.sender] = (0, now)
        detail = f"{msg.sender} {msg.type}: {error.detail} ({count + 1} refused)"
        self.db.execute("BEGIN IMMEDIATE")
        self._audit(str(error.code), detail, msg.id, None, msg.sender)
        self.db.execute("COMMIT")
        return error

    def _scope_of(self, msg: Message) -> str:
        """The app a request is from: the sender the supervisor stamped."""
        if not msg.sender.startswith("app."):
            raise ContractError(Code.SENDER_NOT_ALLOWED, f"{msg.type} is an app's to send")
        return msg.sender.removeprefix("app.")

    def _instance_in(self, scope: str, conversation_id: str) -> str | None:
        """The live instance of `scope` in the conversation, the one active last."""
        found = [i for i, c in self.registry.live_instances(scope) if c == conversation_id]
        return found[0] if found else None

    def _check_quota(self, scope: str, size: int, *, make_room: bool = False) -> list[str]:
        """Refuse an artifact of `size` bytes that would not fit the app's quotas. With
        `make_room` (one kept replaceable), the app's oldest replaceable artifacts go first,
        as many as it takes, if they can make room: their ids, whose files go once the
        transaction commits."""
        limits = self.artifact_limits
        if size > limits.max_bytes:
            raise ContractError(
                Code.TOO_LARGE, f"{size} bytes; an artifact holds at most {limits.max_bytes}"
            )
        count, total = self.db.execute(
            "SELECT count(*), coalesce(sum(size), 0) FROM artifacts WHERE app_scope = ?",
            (scope,),
        ).fetchone()
        gone: list[str] = []
        if make_room and (count >= limits.max_count or total + size > limits.max_total_bytes):
            oldest = self.db.execute(
                "SELECT artifact_id, size FROM artifacts WHERE app_scope = ? AND replaceable = 1"
                " ORDER BY rowid",
                (scope,),
            )
            for artifact_id, held in oldest.fetchall():
                if count < limits.max_count and total + size <= limits.max_total_bytes:
                    break
                gone.append(artifact_id)
                count, total = count - 1, total - held
            self.db.executemany("DELETE FROM artifacts WHERE artifact_id = ?", [(g,) for g in gone])
        if count >= limits.max_count:
            raise ContractError(Code.QUOTA_EXCEEDED, f"the app keeps {count} artifacts, its most")
        if total + size > limits.max_total_bytes:
            raise ContractError(
                Code.QUOTA_EXCEEDED,
                f"the app's artifacts would hold {total + size} bytes, over its"
                f" {limits.max_total_bytes}",
            )
        return gone

    def _readable(self, msg: Message, artifact_id: str) -> dict[str, Any]:
        """The row of an artifact the sender may read: its own app's, the chat's (any), or
        the runtime's own actors' (any)."""
        row = artifact_row(self.db, artifact_id) if ARTIFACT_ID.fullmatch(artifact_id) else None
        reads_any = not msg.sender.startswith("app.") or msg.sender == f"app.{SCOPE_CHAT}"
        if not reads_any and (row is None or msg.sender != f"app.{row['app_scope']}"):
            raise ContractError(
                Code.OWNERSHIP_MISMATCH, f"{artifact_id[:80]!r} is not one of this app's"
            )
        if row is None:
            raise ContractError(Code.ARTIFACT_NOT_FOUND, f"no artifact {artifact_id[:80]!r}")
        return row

    # -- handlers ------------------------------------------------------------------------

    def _checked_create(self, msg: Message, kept_for: str | None = None) -> dict[str, Any]:
        """A create's fields once its sender, media type, title and conversation passed:
        the row it makes, but for its id, size, digest and time. `kept_for`: the app the
        capability gateway keeps it for, whose conversation is kept only if it is in it."""
        scope = kept_for or self._scope_of(msg)
        body = msg.body
        media_type, title = str(body["media_type"]), str(body["title"])
        check_media_type(media_type, self.artifact_limits)
        check_title(title, self.artifact_limits)
        conversation = body.get("conversation_id")
        instance = None
        if conversation is not None:
            instance = self._instance_in(scope, str(conversation))
            if instance is None and kept_for is not None:
                conversation = None
            elif instance is None:
                raise ContractError(
                    Code.OWNERSHIP_MISMATCH,
                    f"conversation {str(conversation)[:80]!r} has no instance of {scope}",
                )
        return {
            "app_scope": scope,
            "instance_id": instance,
            "conversation_id": conversation,
            "title": title,
            "media_type": media_type,
        }

    @handles("store.artifacts.create")
    async def artifacts_create(self, msg: Message[ArtifactCreate]) -> Any:
        """Body `data`, `media_type`, `title`, `conversation_id`?; reply the reference
        {artifact_id, title, media_type, size}, once per request."""
        try:
            fields = self._checked_create(msg)
        except ContractError as error:
            raise self._artifact_refused(msg, error) from None
        return self._create(msg, fields)

    @handles("store.artifacts.keep")
    async def artifacts_keep(self, msg: Message[ArtifactKeep]) -> Any:
        """From the capability gateway: a create's body and the `app_scope` it is for; the
        same reference, once per request (a provider's repeat gets the first artifact)."""
        fields = self._checked_create(msg, str(msg.body["app_scope"]))
        return self._create(msg, fields, replaceable=bool(msg.body.get("replaceable")))

    def _create(self, msg: Message, fields: dict[str, Any], *, replaceable: bool = False) -> Any:
        data = bytes(msg.body["data"])
        let_go: list[str] = []

        def apply() -> dict[str, Any]:
            let_go.extend(self._check_quota(fields["app_scope"], len(data), make_room=replaceable))
            row = {
                **fields,
                "artifact_id": f"art_{new_id()}",
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "created_ms": int(time.time() * 1000),
            }
            try:
                path = _write_durably(self.artifacts_dir, row["artifact_id"], data)
            except OSError as exc:  # a full or failing disk: a definite answer, not a retry
                log.exception("artifact %s not written", row["artifact_id"])
                raise ContractError(
                    Code.FAILED, f"the store could not write it: {exc.strerror or exc}"
                ) from None
            try:
                self.db.execute(
                    f"INSERT INTO artifacts ({', '.join(ARTIFACT_COLUMNS)}, replaceable)"
                    f" VALUES ({', '.join('?' * len(ARTIFACT_COLUMNS))}, ?)",
                    (*(row[c] for c in ARTIFACT_COLUMNS), int(replaceable)),
                )
                crash_point("store.artifact_before_commit")
            except BaseException:
                path.unlink(missing_ok=True)  # the row is not written: neither is the file
                raise
            return reference(row)

        try:
            made = self._once(msg, apply)
        except ContractError as error:  # a quota: the transaction wrote nothing
            raise self._artifact_refused(msg, error) from None
        for artifact_id in let_go:  # committed without their rows (a crash: the sweep's)
            (self.artifacts_dir / artifact_id).unlink(missing_ok=True)
        return made

    @handles("store.artifacts.read")
    async def artifacts_read(self, msg: Message[ArtifactId]) -> Any:
        """Body `artifact_id`; reply {artifact: its row, data: its bytes}."""
        artifact_id = str(msg.body["artifact_id"])
        try:
            row = self._readable(msg, artifact_id)
        except ContractError as error:
            if msg.sender.startswith("app."):
                raise self._artifact_refused(msg, error) from None
            raise
        try:
            data = (self.artifacts_dir / row["artifact_id"]).read_bytes()
        except OSError:  # its file was taken from under the store
            log.exception("artifact %s has a row and no readable file", artifact_id)
            raise ContractError(
                Code.ARTIFACT_NOT_FOUND, f"{artifact_id}: its content is gone"
            ) from None
        return {"artifact": row, "data": data}

    @handles("store.artifacts.meta")
    async def artifacts_meta(self, msg: Message[ArtifactId]) -> Any:
        """Body `artifact_id`; reply {artifact: its row, or null}."""
        artifact_id = str(msg.body["artifact_id"])
        found = artifact_row(self.db, artifact_id) if ARTIFACT_ID.fullmatch(artifact_id) else None
        return {"artifact": found}

    @handles("store.artifacts.list")
    async def artifacts_list(self, msg: Message[ArtifactPage]) -> Any:
        """A page of the sender's own artifacts, oldest first, after the one named `after`:
        {artifacts: [row], next: the id to ask after, or null at the end}. A page is
        bounded so that its answer fits a frame whatever the titles."""
        scope = self._scope_of(msg)
        after = msg.body.get("after")
        where, params = "app_scope = ?", [scope]
        if after is not None:  # one of its own (another's is no place to start: no oracle)
            where += (
                " AND rowid > coalesce((SELECT rowid FROM artifacts"
                " WHERE artifact_id = ? AND app_scope = ?), 0)"
            )
            params += [str(after), scope]
        rows = artifact_rows(self.db, where, tuple(params), limit=LIST_PAGE + 1)
        more = len(rows) > LIST_PAGE
        rows = rows[:LIST_PAGE]
        return {"artifacts": rows, "next": rows[-1]["artifact_id"] if more else None}
