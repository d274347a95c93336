"""Running a capability's effect once (mixed into `CapabilityGatewayActor`).

A request allowed is recorded `running`, with what the effect needs decided first (the place
and name a `file.save` saves under, `_places`; the name and type of the file a `file.open`
was given, `_file_open`), before its provider runs, and `finished` with its outcome after.
A gateway killed between the two finds the request `running` at its next start
(`_resume`): an effect that can be repeated runs again and lands on the same result, any
other ends `in_doubt` and is not run again. An artifact a provider made for the app is kept
by the store under an id derived from the request's key (`MADE_SLOT`), so a repeat gets the
store's first answer and the app never gets the same artifact twice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from actors.kernel import Actor, CallFailed, crash_point, derive_id
from contracts import SCOPE_CHAT, CapabilityResult, Code, ContractError

from . import _files
from ._apps import app_facts
from ._places import PAGE, SavePlaces
from ._provider_base import Effect, NewArtifact, Provider
from ._providers import file_bytes
from ._requests import Pending, audit_row, finished_row, now_ms, result_of

log = logging.getLogger("lineup.capability_gateway")

MADE_SLOT = 3  # the slot of a request's kept artifact (the consent card's are 1 and 2)


class Effects(SavePlaces, Actor):
    """The gateway's effects: started, run, recorded; resumed after a crash."""

    data_dir: Path
    core: dict[str, Any]
    call_timeout: float
    providers: dict[str, Provider]
    counts: dict[str, int]
    write: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    store: Callable[[str, dict[str, Any]], Awaitable[Any]]
    registry: Callable[[], Awaitable[dict[str, Any]]]
    _settle: Callable[[Pending, dict[str, Any], str], Awaitable[None]]

    async def _start(
        self,
        row: dict[str, Any],
        why: str,
        grant: dict[str, Any] | None = None,
        *,
        chosen: tuple[bytes, dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Record the request as started (with the grant that allowed it), run its
        provider, record the outcome: the app's result. `chosen`: the content the user gave
        and what was decided of it (a `file.open`'s file)."""
        content: tuple[bytes, str | None] | None
        prepared: dict[str, Any] | None
        try:
            if chosen is not None:
                data, prepared = chosen
                content = data, str(prepared["media_type"])
            else:
                content = await self._content(row)
                prepared = await self._prepare(row)
        except ContractError as exc:
            finished = finished_row(row, CapabilityResult.FAILED, str(exc.code))
            step = {"requests": [finished], "audit": [audit_row(str(exc.code), row, exc.detail)]}
            if grant is not None:
                step["grants"] = [grant]
            await self.write(step)
            self.counts[CapabilityResult.FAILED.value] += 1
            return result_of(finished)
        started = {**row, "state": "running", "prepared": prepared, "updated_ms": now_ms()}
        step = {"requests": [started], "audit": [audit_row("started", row, why)]}
        if grant is not None:
            step["grants"] = [grant]
        await self.write(step)
        return await self._effect(started, content)

    async def _resume(self, pending: Pending) -> None:
        row = pending.row
        provider = self.providers.get(row["capability"])
        if provider is not None and provider.idempotent:
            try:
                content = await self._content(row)
            except ContractError as exc:
                finished = finished_row(row, CapabilityResult.FAILED, str(exc.code))
                await self.write(
                    {"requests": [finished], "audit": [audit_row(str(exc.code), row, exc.detail)]}
                )
                result = result_of(finished)
            else:
                result = await self._effect(row, content)
        else:
            finished = finished_row(row, CapabilityResult.IN_DOUBT, None)
            detail = "it had started when the gateway stopped; it is not run again"
            await self.write(
                {"requests": [finished], "audit": [audit_row("in_doubt", row, detail)]}
            )
            self.counts[CapabilityResult.IN_DOUBT.value] += 1
            result = result_of(finished)
        await self._settle(pending, result, str(result["status"]))

    async def _effect(
        self, row: dict[str, Any], content: tuple[bytes, str | None] | None
    ) -> dict[str, Any]:
        provider = self.providers[row["capability"]]
        effect = Effect(
            key=row["request_id"],
            app_scope=row["app_scope"],
            input=dict(row["input"] or {}),
            prepared=dict(row["prepared"] or {}),
            content=content[0] if content else None,
            media_type=content[1] if content else None,
        )
        output: dict[str, Any] | None = None
        status, code, served_by = CapabilityResult.COMPLETED, None, "the provider failed"
        try:
            served = await provider.run(effect)
            output, served_by = await self._keep_made(row, served.output), served.by
        except ContractError as exc:  # the app's input, found wanting: its definite code
            log.info("%s for %s refused: %s", row["capability"], row["app_scope"], exc.detail)
            status, code = CapabilityResult.FAILED, str(exc.code)
            served_by = f"the provider refused it ({exc.code})"
        except Exception:  # what went wrong stays in the log: the app learns only `failed`
            log.exception("%s for %s failed", row["capability"], row["app_scope"])
            status, code = CapabilityResult.FAILED, str(Code.FAILED)
        crash_point("capability_gateway.after_effect")
        finished = finished_row(row, status, code, output)
        await self.write(
            {"requests": [finished], "audit": [audit_row(str(status), row, served_by)]}
        )
        self.counts[status.value] += 1
        return result_of(finished)

    async def _keep_made(self, row: dict[str, Any], output: dict[str, Any]) -> dict[str, Any]:
        """The output with each artifact the provider made kept by the store as the app's,
        and named by its reference; the store's answer to a repeat is its first one."""
        kept = dict(output)
        for field, made in output.items():
            if not isinstance(made, NewArtifact):
                continue
            body = {
                "app_scope": row["app_scope"],
                "conversation_id": row["conversation_id"],
                "data": made.data,
                "media_type": made.media_type,
                "title": made.title,
                "replaceable": _replaceable(row),
            }
            try:
                kept[field] = await self.call(
                    "store",
                    "store.artifacts.keep",
                    body,
                    timeout=self.call_timeout * 5,
                    id=derive_id(row["request_id"], MADE_SLOT),
                )
            except CallFailed as exc:  # a quota or a size the app has to know about
                if exc.code in (Code.TOO_LARGE, Code.QUOTA_EXCEEDED):
                    raise ContractError(Code(exc.code), exc.detail) from None
                raise
        return kept

    async def _content(self, row: dict[str, Any]) -> tuple[bytes, str | None] | None:
        """What a provider reads: for `file.save` its own bytes, else the app's own artifact
        its input names (with its media type)."""
        provider = self.providers.get(row["capability"])
        value = row["input"]
        if row["capability"] == "file.save" and "data_base64" in value:
            return file_bytes(value), None
        if provider is None or not provider.reads_artifact or "artifact_id" not in value:
            return None
        try:
            reply = await self.call(
                "store",
                "store.artifacts.read",
                {"artifact_id": value["artifact_id"]},
                timeout=self.call_timeout * 5,
            )
        except CallFailed:
            reply = None
        if reply is None or reply["artifact"]["app_scope"] != row["app_scope"]:
            # Another app's artifact is as unknown to this one as a missing one.
            raise ContractError(Code.ARTIFACT_NOT_FOUND, "no artifact of the app has this id")
        if row["capability"] == "file.save" and not value.get("name"):
            value["name"] = str(reply["artifact"].get("title") or "")
        return bytes(reply["data"]), str(reply["artifact"]["media_type"])

    async def _prepare(self, row: dict[str, Any]) -> dict[str, Any] | None:
        """What the effect needs decided before it is recorded as started: for `file.save`
        the place and the name it saves under (and for a page, the conversation whose page
        it is handed to), so that a repeat after a crash writes the same file in the same
        place; for `notification.show` the app's title, which the notification is shown
        under."""
        if row["capability"] == "notification.show":
            registry = await self.registry()
            return {"app_title": app_facts(registry, row["app_scope"], self.core).title}
        if row["capability"] != "file.save":
            return None
        place = await self._place(row)
        try:
            name = await trio.to_thread.run_sync(
                _files.free_name, self.place_folder(place), str(row["input"].get("name") or "")
            )
        except OSError:  # the downloads directory cannot be made or read: said in the log
            log.exception("no name for %s of %s", row["request_id"], row["app_scope"])
            raise ContractError(Code.FAILED, "the downloads directory cannot be used") from None
        prepared = {"name": name, "place": place}
        if place == PAGE:
            prepared["conversation_id"] = row["conversation_id"]
        return prepared


def _replaceable(row: dict[str, Any]) -> bool:
    """The chat's speech is only heard (its pages and the terminal play it): a long spoken
    conversation lets go of the oldest to keep saying the newest. Any other artifact may be
    handed on (a tool result, a message's recording), so it stays while its app does."""
    return bool(row["app_scope"] == SCOPE_CHAT and row["capability"] == "speech.speak")
