"""A file the user chose for an app (mixed into `CapabilityGatewayActor`): the yes to a
`file.open` request.

A `file.open` card has no allow answers: it carries the chooser (what the app takes, in
`chooser`: `accept` and `max_bytes`), and the user's choice is the yes. The user's side
sends it, `capability_gateway.file_chosen`, from the host (the terminal chat's `/attach
PATH`) or the web host (the file input of the page's card, uploaded under a one-time token
bound to the request): the request's key, the file's name, the type its chooser declared,
its bytes, and which chooser it came from.

The gateway takes it only for a request of that capability that is waiting for the user.
The file's type is decided from its bytes and checked against the request's input
(`contracts.chosen_type`): a file too large (`too_large`) or of a type the app does
not take, or whose bytes contradict its declared type (`unsupported_media_type`), is
refused with a sentence for the user and audited `capability.file_refused`; the card stays
open for another choice. A file taken starts the effect: a new artifact of the app, kept
by the store as any artifact a provider makes (`_effects`, `store.artifacts.keep`), audited
as any effect. No grant covers a `file.open` (each needs the user's choice) and no grant
is recorded for one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from actors.kernel import Actor, Message, handles
from contracts import CapabilityResult, Code, ContractError, chosen_type, file_wanted

from ._files import safe_name
from ._requests import Pending, audit_row, finished_row, result_of
from .door import FileChosen

FILE_OPEN: Final = "file.open"
# Capabilities whose yes is something the user chooses: no grant covers them, their card
# offers no allow answer, and their chooser is on the card.
CHOSEN_BY_THE_USER: Final = frozenset({FILE_OPEN})
CHOOSERS: Final = {"web": "web page", "terminal": "terminal chat"}


def chooser_of(row: dict[str, Any]) -> dict[str, Any] | None:
    """What a consent card carries for the user to choose with, if anything."""
    if row["capability"] != FILE_OPEN:
        return None
    return file_wanted(row["input"]).as_card()


class FileChoices(Actor):
    """The gateway's handler for a file the user chose."""

    open: dict[str, Pending]
    counts: dict[str, int]
    loaded: Any
    write: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    _settle: Callable[[Pending, dict[str, Any], str], Awaitable[None]]
    if TYPE_CHECKING:  # the gateway's own (`Effects._start`), which this mixin calls

        async def _start(
            self,
            row: dict[str, Any],
            why: str,
            grant: dict[str, Any] | None = None,
            *,
            chosen: tuple[bytes, dict[str, Any]] | None = None,
        ) -> dict[str, Any]: ...

    _changed_since: Callable[[dict[str, Any]], Awaitable[tuple[CapabilityResult, str] | None]]

    @handles("capability_gateway.file_chosen")
    async def file_chosen(self, msg: Message[FileChosen]) -> Any:
        """`request_id` (the gateway's key), `name`, `media_type` (declared; may be empty),
        `data`, `chooser` (web, terminal) → {`status`, `code`?} of the request; a file
        refused, or a request not waiting for one, is a `ContractError` whose detail is the
        sentence for the user."""
        await self.loaded.wait()
        body = msg.body
        key = str(body["request_id"])
        pending = self.open.get(key)
        waiting = pending is not None and pending.row["state"] == "asking"
        if pending is None or not waiting or pending.row["capability"] != FILE_OPEN:
            raise ContractError(
                Code.INVALID_STATE,
                "No app is waiting for this file any more: the request was answered or ended.",
            )
        row = pending.row
        name = safe_name(str(body["name"]))
        data = bytes(body["data"])
        chooser = CHOOSERS[str(body["chooser"])]
        try:
            media_type = chosen_type(file_wanted(row["input"]), name, str(body["media_type"]), data)
        except ContractError as refused:
            detail = f"in the {chooser}: {refused.detail}"
            await self.write({"audit": [audit_row("file_refused", row, detail)]})
            raise
        row["state"] = "deciding"  # before any await: the deadline no longer applies
        changed = await self._changed_since(row)
        if changed is not None:
            status, why = changed
            finished = finished_row(row, status, None)
            await self.write({"requests": [finished], "audit": [audit_row(str(status), row, why)]})
            self.counts[status.value] += 1
            result = result_of(finished)
        else:
            prepared = {"name": name, "media_type": media_type, "chooser": chooser}
            result = await self._start(
                row, f"the user chose {name} in the {chooser}", chosen=(data, prepared)
            )
        await self._settle(pending, result, "answered")
        answer = {"status": result["status"]}
        if "code" in result:
            answer["code"] = result["code"]
        return answer
