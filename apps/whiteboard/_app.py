"""The whiteboard app: one board per conversation, drawn by the user and the agent.

The board is the instance's session data (`_board`), so the user's surface, the agent's
patches and the tools all read and write the same revisioned object, and every write is
made against the revision it read: a write that lost a race reads again and merges again,
and nobody's shapes are overwritten. The agent draws with `lineup.app.state.patch`
envelopes to the board's instance; it reads the board with `board.summary` and takes it
away as a PNG and an SVG with `board.export`, rendered here (`_render`) and kept as
artifacts. `board.save` renders it the same way and asks the runtime's capability gateway
to save it as a file for the user (`file.save`), which the user allows or denies in the
chat.

The app re-checks every stored shape when it reads the board (the surface is untrusted):
one that breaks the contract is never drawn, counted or exported; an agent's patch with
one bad shape is refused whole and recorded in the app's diagnostics (`patch_refused`). A
patch is `{title?, shapes: {id: shape | null}}`, merged: a new id on top, null removes.
`board.export` renders the committed revision and is idempotent, so an export cut short by
a crash runs again and gets the same artifacts. `board.save` runs again too
(`rerun_after_restart`): killed while the user looks at its consent card, it asks again
under the same request and the user's answer ends it; it keeps the board in front while it
asks.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from typing import Any, Final

import trio

from apps.sdk import CallFailed, RuntimeApp, ToolCall, declare_app, tool
from contracts import Code, ContractError

from ._board import KINDS, MAX_TITLE, board_of, check_title, merge, shapes_in_order, summary
from ._render import render_png, render_svg

log = logging.getLogger("lineup.app")

PATCH: Final = "lineup.app.state.patch"
DEFAULT_TITLE: Final = "Whiteboard"
WRITE_ATTEMPTS: Final = 8  # a write that keeps losing races gives up, with its code
MEDIA_TYPES: Final = {"png": "image/png", "svg": "image/svg+xml"}
SAVE_ANSWER_S: Final = 60.0  # how long the user has to answer the consent card
# What the gateway answered, as the tool's error: every refusal is one of a tool's codes.
SAVE_REFUSALS: Final = {
    "permission_denied": Code.PERMISSION_DENIED,
    "policy_denied": Code.PERMISSION_DENIED,
    "cancelled_by_user": Code.CANCELLED_BY_USER,
    "expired": Code.OPERATION_EXPIRED,
}

_REFERENCE = {
    "type": "object",
    "properties": {
        "artifact_id": {"type": "string"},
        "title": {"type": "string"},
        "media_type": {"type": "string"},
        "size": {"type": "integer", "minimum": 0},
    },
    "required": ["artifact_id", "title", "media_type", "size"],
    "additionalProperties": False,
}


def _printable(title: str) -> str:
    """The title as an artifact's, which takes no control characters."""
    return "".join(c for c in title if c.isprintable()) or DEFAULT_TITLE


@declare_app(
    app_scope="whiteboard",
    version="1.0.0",
    title="Whiteboard",
    entrypoints=[
        {
            "id": "board",
            "kind": "contextual",
            "surface": "ui/index.html",
            # On the stage, or the whole window when the user wants room to draw.
            "display_modes": ["stage", "fullscreen"],
        }
    ],
    required_features=[
        "app.lifecycle.v1",
        "app.tools.v1",
        "app.session-data.v1",
        "agent.messages.v1",
        "artifact.create.v1",
        "capability.request.v1",
    ],
    capabilities=["file.save"],
    agent_subscriptions=[
        {"type": PATCH, "scope": "instance"},
        {"type": "lineup.tool.invoke", "scope": "conversation"},
    ],
)
class WhiteboardApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.sdk.agent_messages.subscribe(self._agent_patch, types=(PATCH,))

    async def _agent_patch(self, message: dict[str, Any]) -> None:
        """Merge an agent's patch into its board. A patch that breaks the shapes' contract
        changes nothing and is reported with its code in the app's diagnostics; either way
        it is done with (merging is idempotent, so a replay after a crash is harmless)."""
        # The router delivers a patch only with an instance of this app (its rules).
        instance_id = str(message["instance_id"])
        patch = (message.get("payload") or {}).get("patch")
        try:
            _, revision = await self._write(instance_id, lambda board: merge(board, patch))
            log.info("patch %s merged into %s at revision %d", message["id"], instance_id, revision)
        except (ContractError, CallFailed) as refused:
            log.warning("patch %s refused: %s %s", message["id"], refused.code, refused.detail)
            await self.sdk.diagnostics.event(
                "warning",
                "patch_refused",
                {
                    "message_id": str(message["id"]),
                    "instance_id": instance_id,
                    "code": str(refused.code),
                    "detail": str(refused.detail)[:300],
                },
            )
        await self.sdk.agent_messages.acknowledge(str(message["id"]))

    async def _write(
        self, instance_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> tuple[dict[str, Any], int]:
        """Apply `change(board) -> board` to the board as last committed; what was written,
        with its revision. A write that lost a race with another (`revision_conflict`) is
        made again on the newer board."""
        for _ in range(WRITE_ATTEMPTS):
            current = await self.sdk.session_data.get(instance_id=instance_id)
            board = change(board_of(current["data"], DEFAULT_TITLE))
            try:
                written = await self.sdk.session_data.replace(
                    board, current["revision"], instance_id=instance_id
                )
            except CallFailed as failed:
                if failed.code != Code.REVISION_CONFLICT:
                    raise
                continue
            return board, written["revision"]
        raise ContractError(Code.REVISION_CONFLICT, "the board kept changing while written")

    async def _board(self, call: ToolCall) -> tuple[dict[str, Any], int]:
        snapshot = await self.sdk.session_data.get(instance_id=call.instance_id)
        return board_of(snapshot["data"], DEFAULT_TITLE), snapshot["revision"]

    @tool(
        "board.create",
        title="Open the whiteboard",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE}},
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "instance_id": {"type": "string"},
                "title": {"type": "string"},
                "revision": {"type": "integer", "minimum": 0},
            },
            "required": ["instance_id", "title", "revision"],
            "additionalProperties": False,
        },
        call_model="command",
        risk="low",
        activation_requirement="foreground_required",
        # The board stays in front for the user to draw on.
        launch_policy={"launch": "if_needed", "focus": "foreground", "restore_focus": False},
    )
    async def create(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Brings the conversation's whiteboard to the front, creating it empty if it has
        none. A `title` names it; the shapes already on it stay. Draw on it with
        `lineup.app.state.patch` to its instance: {"patch": {"shapes": {ID: shape | null}}},
        where a shape is {kind: stroke|line|rect|ellipse|text, colour, points: [[x, y]...],
        width?, text?} on a 1000 x 700 board."""
        instance_id = str(call.instance_id)
        title = check_title(arguments["title"]) if "title" in arguments else None

        def titled(board: dict[str, Any]) -> dict[str, Any]:
            return {**board, "title": title} if title else board

        board, revision = await self._write(instance_id, titled)
        return {"instance_id": instance_id, "title": board["title"], "revision": revision}

    @tool(
        "board.summary",
        title="What the whiteboard holds",
        input_schema={"type": "object", "additionalProperties": False},
        output_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "revision": {"type": "integer", "minimum": 0},
                "shape_count": {"type": "integer", "minimum": 0},
                "kinds": {
                    "type": "object",
                    "propertyNames": {"enum": list(KINDS)},
                    "additionalProperties": {"type": "integer", "minimum": 1},
                },
                "texts": {"type": "array", "items": {"type": "string"}},
                "description": {"type": "string"},
            },
            "required": ["title", "revision", "shape_count", "kinds", "texts", "description"],
            "additionalProperties": False,
        },
        call_model="query",
        idempotent=True,
        risk="low",
        launch_policy={"launch": "if_needed", "focus": "background"},
        annotations={"read_only_hint": True},
    )
    async def board_summary(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """The board's title, revision, how many shapes of each kind it holds, its texts,
        and one sentence describing it."""
        board, revision = await self._board(call)
        return summary(board, revision)

    @tool(
        "board.export",
        title="Export the whiteboard",
        input_schema={
            "type": "object",
            "properties": {
                "formats": {
                    "type": "array",
                    "items": {"enum": list(MEDIA_TYPES)},
                    "minItems": 1,
                    "uniqueItems": True,
                }
            },
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "revision": {"type": "integer", "minimum": 0},
                "artifacts": {"type": "array", "items": _REFERENCE},
                "artifact": _REFERENCE,
            },
            "required": ["revision", "artifacts", "artifact"],
            "additionalProperties": False,
        },
        call_model="operation",
        timeout_ms=120_000,
        # The same revision renders to the same pictures: a call cut short by a crash
        # runs again, and its artifacts are the same requests.
        idempotent=True,
        risk="low",
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def export(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Renders the board as last committed to a PNG (1000 x 700; a text is drawn as
        the box it fills) and an SVG, each kept as an artifact: their references, one per
        format asked (both by default), the first of them again as `artifact` (the one
        the chat shows with the call, with its picture and a Save button), and the
        revision drawn."""
        board, revision = await self._board(call)
        shapes = shapes_in_order(board)
        references = []
        formats = list(arguments.get("formats") or MEDIA_TYPES)
        for n, kind in enumerate(formats):
            await call.progress(f"rendering {kind}", percent=round(80 * n / len(formats)))
            if kind == "png":
                # Off the app's loop: its mailbox goes on while a large board is drawn.
                data = await trio.to_thread.run_sync(render_png, shapes)
            else:
                data = render_svg(board["title"], shapes)
            await call.progress("storing", percent=round(80 * (n + 1) / len(formats)))
            reference = await self.sdk.artifacts.create(
                data,
                MEDIA_TYPES[kind],
                f"{_printable(board['title'])}.{kind}",
                conversation_id=call.conversation_id,
            )
            references.append(reference)
        # The runtime hands the agent, and the chat shows, one artifact per result: the
        # first format asked, the PNG unless the agent asked otherwise.
        return {"revision": revision, "artifacts": references, "artifact": references[0]}

    @tool(
        "board.save",
        title="Save the whiteboard as a file",
        input_schema={
            "type": "object",
            "properties": {"format": {"enum": list(MEDIA_TYPES)}},
            "required": ["format"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {"saved": {"const": True}, "name": {"type": "string"}},
            "required": ["saved", "name"],
            "additionalProperties": False,
        },
        call_model="command",
        # The user's answer may take the whole of SAVE_ANSWER_S, and the gateway's word on it
        # comes after.
        timeout_ms=120_000,
        risk="medium",
        # The runtime saves a file only for the app in front, so the board comes forward
        # while the user decides; whatever was in front comes back when the call ends.
        activation_requirement="foreground_required",
        launch_policy={"launch": "if_needed", "focus": "foreground"},
        # Killed while the user decides, the app asks again with the same request: the
        # card the user answers stays this call's, and its answer ends the call.
        rerun_after_restart=True,
    )
    async def save(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Renders the board as last committed (as `board.export` does) and asks the user,
        in the chat, to let it be saved as a file named after the board's title in their
        downloads: {saved: true, name} once they allow it; `permission_denied` when they
        deny it, `cancelled_by_user` when they dismiss it, `operation_expired` when they do
        not answer within a minute. Asked twice, it asks twice (unless the user allowed it
        for the session or always) and saves a second file, its name numbered (`Title
        (1).png`); a call replayed after the app's crash gets the first's answer and file."""
        kind = str(arguments["format"])
        board, _ = await self._board(call)
        shapes = shapes_in_order(board)
        if kind == "png":
            data = await trio.to_thread.run_sync(render_png, shapes)
        else:
            data = render_svg(board["title"], shapes)
        # The gateway keeps only a name's last path component: a title's slash stays a mark.
        name = f"{_printable(board['title']).replace('/', '-').replace(chr(92), '-')}.{kind}"
        answer = await self.sdk.capabilities.request(
            "file.save",
            f"save the whiteboard as {name} in your downloads",
            {"name": name, "data_base64": base64.b64encode(data).decode("ascii")},
            timeout_s=SAVE_ANSWER_S,
        )
        status = str(answer.get("status"))
        if status == "completed":
            return {"saved": True, "name": str(answer["output"]["name"])}
        refusal = SAVE_REFUSALS.get(status, Code.HANDLER_FAILED)
        raise ContractError(refusal, f"file.save: {status} {answer.get('code') or ''}".strip())
