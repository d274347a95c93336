"""Running a capability's effect once (mixed into `CapabilityGatewayActor`).

A request allowed is recorded `running`, with what the effect needs decided first (the place
and name a `file.save` saves under, `_places`; the name and type of the file a `file.open`
was given, `_file_open`), before its provider runs, and `finished` with its outcome after.
A gateway killed between the two finds the request `running` at its next start
(`_resume`): an effect that can be repeated runs again and lands on the same result, any
other ends `in_doubt` and is not run again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from actors.contracts import CapabilityResult, Code, ContractError
from actors.kernel import Actor, CallFailed, crash_point, derive_id

from . import _files
from ._places import SavePlaces
from ._providers import Effect, Provider, file_bytes
from ._requests import Pending, audit_row, finished_row, now_ms, result_of

STORE_SLOT = 3  # an effect's call to the store, its id derived from the request's key

log = logging.getLogger("lineup.capability_gateway")


class Effects(SavePlaces, Actor):
    """The gateway's effects: started, run, recorded; resumed after a crash."""

    data_dir: Path
    call_timeout: float
    providers: dict[str, Provider]
    counts: dict[str, int]
    write: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
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
        content: bytes | None
        prepared: dict[str, Any] | None
        try:
            if chosen is not None:
                content, prepared = chosen
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

    async def _effect(self, row: dict[str, Any], content: bytes | None) -> dict[str, Any]:
        provider = self.providers[row["capability"]]
        effect = Effect(
            key=row["request_id"],
            app_scope=row["app_scope"],
            input=dict(row["input"] or {}),
            prepared=dict(row["prepared"] or {}),
            content=content,
            store=lambda type_, body: self.call(
                "store",
                type_,
                body,
                timeout=self.call_timeout * 5,
                id=derive_id(row["request_id"], STORE_SLOT),
            ),
        )
        output: dict[str, Any] | None = None
        status, code = CapabilityResult.COMPLETED, None
        try:
            output = await provider.run(effect)
        except ContractError as exc:  # the store's refusal (a quota): its code, no detail
            log.warning("%s for %s refused: %s", row["capability"], row["app_scope"], exc)
            status, code = CapabilityResult.FAILED, str(exc.code)
        except Exception:  # what went wrong stays in the log: the app learns only `failed`
            log.exception("%s for %s failed", row["capability"], row["app_scope"])
            status, code = CapabilityResult.FAILED, str(Code.FAILED)
        detail = "the provider ran"
        if output is not None:
            detail = await self._ran(row, effect.prepared, output)
        crash_point("capability_gateway.after_effect")
        finished = finished_row(row, status, code, output)
        await self.write({"requests": [finished], "audit": [audit_row(str(status), row, detail)]})
        self.counts[status.value] += 1
        return result_of(finished)

    async def _content(self, row: dict[str, Any]) -> bytes | None:
        """The bytes a `file.save` saves: its own, or one of the app's own artifacts."""
        if row["capability"] != "file.save":
            return None
        value = row["input"]
        if "data_base64" in value:
            return file_bytes(value)
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
        if not value.get("name"):
            value["name"] = str(reply["artifact"].get("title") or "")
        return bytes(reply["data"])

    async def _prepare(self, row: dict[str, Any]) -> dict[str, Any] | None:
        """What the effect needs decided before it is recorded as started: for `file.save`
        the place and the name it saves under, so that a repeat after a crash writes the
        same file in the same place."""
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
        return {"name": name, "place": place}

    async def _ran(
        self, row: dict[str, Any], prepared: dict[str, Any], output: dict[str, Any]
    ) -> str:
        """The audit's words for what the effect did: where a saved file went (handed to
        a page's browser when that is its place), what a chosen file was kept as."""
        if row["capability"] == "file.save":
            return await self._saved_where(row, str(prepared.get("place")), str(output["name"]))
        if row["capability"] == "file.open":
            chosen = f"{prepared.get('chooser')}: {output['media_type']}, {output['size']} bytes"
            return f"the file the user chose in the {chosen}, kept as {output['artifact_id']}"
        return "the provider ran"
