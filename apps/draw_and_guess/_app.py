"""The draw-and-guess app: rounds between the user and the agent, one game per conversation.

A round is a deadline operation: `game.start_round` hands its call to the runtime, which
starts it once the game is in front and ends it when its `seconds` have run out (the
runtime's time-up result), even if the app, the tool router or the whole runtime was
killed meanwhile. The app ends it earlier with its own result when the user guesses the
word, presses Done on their drawing or gives up (`sdk.tools.finish_deadline`). One round
at a time per conversation: a new one while one is open is refused by the runtime as it
takes the handover (`already_running`), and the open one goes on; the new round becomes the
instance's only once the runtime's news shows it took it.

The surface shows the instance's session data, which the app writes from its private
record of the round (`_rounds`) each time the round changes: {`round`, `mode`, `word`
(when the user draws it, or once the round has ended), `shapes` (the agent's drawing to
guess, or the user's strokes), `guesses`, `state` (playing, ended), `outcome`?,
`seconds_used`? (of a round the user ended), `ends_at`?, `score`}. The word the user must
guess is in it only once the round has ended. The surface emits `stroke`, `guess`, `done`
and `give_up`; one that does not fit the round (a stroke when the user guesses, a Done when
they have drawn nothing, anything after the end) changes nothing.

A round's end stays on the game's screen, which says how it ended and what the word was,
while the agent has the round's result at once: the game keeps the front (its tool gives
none back) until the user closes it (`close`, its end screen's button, or the page's) or
the agent starts the next round.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Final

from apps.sdk import CallFailed, RuntimeApp, ToolCall, declare_app, tool
from contracts import Code, ContractError

from ._rounds import USER_DRAWS, USER_GUESSES, Rounds, same_word, scored, seconds_between
from ._shapes import BOARD_WIDTH, COLOURS, MAX_STROKE_POINTS, SHAPE, stroke

log = logging.getLogger("lineup.app")

# What a round may hold in points, all shapes told: its session data (at most 128 KiB)
# must take them, at about 10 bytes a point.
MAX_POINTS: Final = 5000
MAX_GUESSES: Final = 50
MAX_GUESS_LENGTH: Final = 80
DEFAULT_SECONDS: Final = 90
WRITE_ATTEMPTS: Final = 5  # a write that lost a race with another: read again, write again

_MOMENT: Final = {"type": "string"}
_SCORE: Final = {
    "type": "object",
    "properties": {
        "user": {"type": "integer", "minimum": 0},
        "agent": {"type": "integer", "minimum": 0},
    },
    "required": ["user", "agent"],
    "additionalProperties": False,
}
# The app's result: the round ended by the user's guess, Done or giving up.
_ROUND: Final = {
    "type": "object",
    "properties": {
        "mode": {"enum": [USER_DRAWS, USER_GUESSES]},
        "word": {"type": "string"},
        "outcome": {"enum": ["drawn", "guessed", "time_up", "gave_up"]},
        "guesses": {"type": "array", "items": {"type": "string"}},
        "shapes": {"type": "array", "items": SHAPE},
        "round": {"type": "integer", "minimum": 1},
        "score": _SCORE,
        "seconds_used": {"type": "integer", "minimum": 0},
    },
    "required": ["mode", "word", "outcome", "guesses", "shapes", "round", "score", "seconds_used"],
    "additionalProperties": False,
}
# The runtime's result: the round's time ran out.
_TIME_UP: Final = {
    "type": "object",
    "properties": {
        "state": {"const": "finished"},
        "started_at": _MOMENT,
        "ends_at": _MOMENT,
        "ended_at": _MOMENT,
        "noticed_at": _MOMENT,
    },
    "required": ["state", "started_at", "ends_at", "ended_at"],
    "additionalProperties": False,
}
_START_ROUND_INPUT: Final = {
    "type": "object",
    "properties": {
        "mode": {"enum": [USER_DRAWS, USER_GUESSES]},
        "word": {"type": "string", "minLength": 1, "maxLength": 40, "pattern": "\\S"},
        "shapes": {"type": "array", "items": SHAPE, "maxItems": 200},
        "seconds": {"type": "integer", "minimum": 15, "maximum": 300},
    },
    "required": ["mode", "word"],
    "additionalProperties": False,
    # The user draws on an empty board: the agent's shapes are for a round the user guesses.
    "if": {"properties": {"mode": {"const": USER_DRAWS}}},
    "then": {"not": {"required": ["shapes"]}},
}


def _event(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    return {"name": name, "payload_schema": schema}


_COORDINATE: Final = {"type": "integer", "minimum": 0, "maximum": BOARD_WIDTH}
SURFACE_EVENTS: Final = [
    _event(
        "stroke",
        {
            "points": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_STROKE_POINTS,
                "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": _COORDINATE},
            },
            "colour": {"enum": list(COLOURS)},
        },
    ),
    _event("guess", {"text": {"type": "string", "minLength": 1, "maxLength": MAX_GUESS_LENGTH}}),
    _event("done", {}),
    _event("give_up", {}),
    _event("close", {}),
]


def _points(shapes: list[dict[str, Any]]) -> int:
    return sum(len(shape["points"]) for shape in shapes)


def _view(record: dict[str, Any]) -> dict[str, Any]:
    """What the surface shows of a round: all but the word the user must guess, until the
    round has ended."""
    drawing = record["mode"] == USER_DRAWS
    shown: dict[str, Any] = {
        "round": record["round"],
        "mode": record["mode"],
        "shapes": record["drawn"] if drawing else record["shapes"],
        "guesses": record["guesses"],
        "state": record["state"],
        "score": record["score"],
    }
    if drawing or record["state"] == "ended":
        shown["word"] = record["word"]
    for name in ("outcome", "ends_at", "seconds_used"):
        if record.get(name) is not None:
            shown[name] = record[name]
    return shown


@declare_app(
    app_scope="draw-and-guess",
    version="0.1.0",
    title="Draw and guess",
    entrypoints=[
        {
            "id": "game",
            "kind": "contextual",
            "surface": "ui/index.html",
            "surface_events": SURFACE_EVENTS,
            "display_modes": ["stage", "fullscreen"],
        }
    ],
    required_features=["app.lifecycle.v1", "app.tools.v1", "app.session-data.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class DrawAndGuessApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self._rounds = Rounds(Path(self.config["app_dir"]))
        self.sdk.tools.on_deadline(self._round_changed)
        self.sdk.surface.on_event("stroke", self._stroke)
        self.sdk.surface.on_event("guess", self._guess)
        self.sdk.surface.on_event("done", self._done)
        self.sdk.surface.on_event("give_up", self._give_up)
        self.sdk.surface.on_event("close", self._close)

    @tool(
        "game.start_round",
        title="Start a round of draw and guess",
        input_schema=_START_ROUND_INPUT,
        output_schema={"type": "object", "anyOf": [_ROUND, _TIME_UP]},
        call_model="operation",
        # Its time-up end is the runtime's: the round is a deadline operation.
        handling="runtime_operation",
        risk="low",
        # The user plays in the game's surface, which stays in front with the round's end
        # until the user closes it or the next round starts.
        activation_requirement="foreground_required",
        launch_policy={"launch": "if_needed", "focus": "foreground", "restore_focus": False},
    )
    async def start_round(self, arguments: dict[str, Any], call: ToolCall) -> Any:
        """Starts a round of `seconds` (default 90). One round at a time: while one is
        open this is refused (`already_running`, saying until when it runs) and that round
        goes on; it ends when the user guesses, draws or gives up, or time runs out. In
        `user_draws` the user draws `word` and presses Done (outcome `drawn`, with what they
        drew); in `user_guesses` the user guesses `word` from the agent's `shapes` (outcome
        `guessed`). They may give up (`gave_up`). When time runs out the result is the
        runtime's {state: finished, started_at, ends_at, ended_at}. The user scores for
        doing their part, the agent when time runs out or the user gives up."""
        if call.instance_id is None:  # a foreground tool's call names its instance
            raise ContractError(Code.FOREGROUND_REQUIRED, "no instance shows the game")
        shapes = list(arguments.get("shapes") or [])
        if _points(shapes) > MAX_POINTS:
            raise ContractError(Code.INVALID_ARGUMENTS, f"shapes: over {MAX_POINTS} points")
        previous = self._rounds.get(call.instance_id) or {}
        seconds = int(arguments.get("seconds", DEFAULT_SECONDS))
        record = {
            "call_id": call.call_id,
            "round": int(previous.get("round", 0)) + 1,
            "mode": arguments["mode"],
            "word": arguments["word"],
            "shapes": shapes,
            "drawn": [],
            "guesses": [],
            "seconds": seconds,
            "score": previous.get("score") or {"user": 0, "agent": 0},
            "state": "playing",
        }
        self._rounds.hand_over(call.instance_id, record)
        return self.sdk.tools.deadline(seconds, display={"round": record["round"]}, alone=True)

    # -- the runtime's news of the round -------------------------------------------------

    async def _round_changed(self, operation: dict[str, Any]) -> None:
        """The runtime started or ended a round: what the surface shows follows. News of an
        older round than the instance's current one changes nothing."""
        instance_id = operation.get("instance_id")
        if not isinstance(instance_id, str):
            return
        record = self._rounds.of_call(instance_id, str(operation["call_id"]))
        if record is None:
            return
        if operation["state"] == "running" and record["state"] == "playing":
            record["started_at"] = operation.get("started_at")
            record["ends_at"] = operation.get("ends_at")
        elif operation["state"] in ("finished", "interrupted") and record["state"] == "playing":
            self._ended(record, operation)
        self._rounds.put(instance_id, record)
        await self._show(instance_id)

    @staticmethod
    def _ended(record: dict[str, Any], operation: dict[str, Any]) -> None:
        """The round's end, as the runtime recorded it: the app's own result if the app
        ended it, time up at its deadline, stopped (no score) if the agent or chat did."""
        decided = record.get("output")
        if operation["state"] == "finished" and operation.get("ended_by") == "app" and decided:
            outcome, score = decided["outcome"], decided["score"]
            record["seconds_used"] = decided["seconds_used"]
        elif operation["state"] == "finished":
            outcome, score = "time_up", scored(record["score"], "time_up")
        else:
            outcome, score = "stopped", record["score"]
        record.update(state="ended", outcome=outcome, score=score)
        record.pop("ends_at", None)

    # -- the user's moves in the surface -------------------------------------------------

    def _playing(self, instance_id: str, mode: str | None = None) -> dict[str, Any] | None:
        """The instance's round while the user may still move in it (of `mode`, if given)."""
        record = self._rounds.get(instance_id)
        if record is None or record["state"] != "playing" or "output" in record:
            return None
        return record if mode is None or record["mode"] == mode else None

    async def _stroke(self, payload: dict[str, Any], instance_id: str) -> None:
        record = self._playing(instance_id, USER_DRAWS)
        if record is None:
            return
        drawn = stroke(payload["points"], payload["colour"])
        if _points(record["drawn"]) + len(drawn["points"]) > MAX_POINTS:
            log.info("a stroke past the %d points of a board is left out", MAX_POINTS)
            return
        record["drawn"] = [*record["drawn"], drawn]
        self._rounds.put(instance_id, record)
        await self._show(instance_id)

    async def _guess(self, payload: dict[str, Any], instance_id: str) -> None:
        record = self._playing(instance_id, USER_GUESSES)
        text = " ".join(str(payload["text"]).split())
        if record is None or not text or len(record["guesses"]) >= MAX_GUESSES:
            return
        record["guesses"] = [*record["guesses"], text]
        self._rounds.put(instance_id, record)
        if same_word(text, record["word"]):
            await self._end(instance_id, record, "guessed")
        else:
            await self._show(instance_id)

    async def _done(self, payload: dict[str, Any], instance_id: str) -> None:
        record = self._playing(instance_id, USER_DRAWS)
        if record is not None and record["drawn"]:
            await self._end(instance_id, record, "drawn")

    async def _give_up(self, payload: dict[str, Any], instance_id: str) -> None:
        record = self._playing(instance_id)
        if record is not None:
            await self._end(instance_id, record, "gave_up")

    async def _close(self, payload: dict[str, Any], instance_id: str) -> None:
        """The user closes the game from its end screen. While a round is playing the game
        stays (giving up ends a round); the instance is the app's own to close."""
        record = self._rounds.get(instance_id)
        if record is not None and record["state"] == "playing":
            return
        try:
            await self.sdk.navigation.close(instance_id)
        except CallFailed as exc:  # closed already
            log.info("the game %s not closed: %s", instance_id, exc.code)

    async def _end(self, instance_id: str, record: dict[str, Any], outcome: str) -> None:
        """End the round now with the app's own result. The result is kept before it is
        sent, so the runtime's news of the end (heard again after a restart) finds it; a
        round that had ended already (its time ran out first) keeps the runtime's end."""
        output = {
            "mode": record["mode"],
            "word": record["word"],
            "outcome": outcome,
            "guesses": record["guesses"],
            "shapes": record["drawn"],
            "round": record["round"],
            "score": scored(record["score"], outcome),
            "seconds_used": seconds_between(
                record.get("started_at"), time.time(), record["seconds"]
            ),
        }
        record["output"] = output
        self._rounds.put(instance_id, record)
        try:
            finished = await self.sdk.tools.finish_deadline(record["call_id"], output)
        except CallFailed as exc:
            log.warning("round %s of %s not ended: %s", record["round"], instance_id, exc.code)
            record.pop("output")
            self._rounds.put(instance_id, record)
            return
        if finished:
            operation = {"state": "finished", "ended_by": "app"}
            self._ended(record, operation)
            self._rounds.put(instance_id, record)
            await self._show(instance_id)

    # -- what the surface shows ----------------------------------------------------------

    async def _show(self, instance_id: str) -> None:
        """Write the instance's session data from its round as the app keeps it now."""
        for _ in range(WRITE_ATTEMPTS):
            try:
                current = await self.sdk.session_data.get(instance_id=instance_id)
                record = self._rounds.get(instance_id)
                if record is None:
                    return
                await self.sdk.session_data.replace(
                    _view(record), current["revision"], instance_id=instance_id
                )
            except CallFailed as exc:
                if exc.code != "revision_conflict":  # the instance closed: nothing shows it
                    log.info("round of %s not shown: %s", instance_id, exc.code)
                    return
            else:
                return
