"""The demo agent's use of the sample apps' tools: the whiteboard, draw-and-guess and voice.

"draw X" makes a board (`board.create`) and draws X on it with a state patch; "what's on
the board" asks `board.summary`; "export the board" asks `board.export`; "let's play" and
"let's draw" start a round of draw-and-guess (`game.start_round`) and report its end;
"record me" asks the voice app for a recording (`voice.request_recording`) and says how
long it is and, where the host wrote it out, what was said. A
tool the conversation's inventory does not offer is answered in a sentence saying which app
to install and enable.

A call may last minutes (a round): each runs in its own task, so the agent keeps answering
meanwhile. Its call id is `call_<step>-<trigger>`, the step and the id of the user's message
that asked for it, and every message sent about it derives its id from that message
(`derive_message_id`: 0 the answer, 1 the call, 2 a notice or the state patch). So the
outcome can be told from the call's final alone: a restarted agent that finds a final in its
inbox, or handles the message again and re-makes the call, sends the same ids, and the
AppServer keeps the first copy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import trio

from contracts import InventoryTool, derive_message_id

from ._client import AgentClient, AgentError, AgentMessage, SubmitRejected
from ._drawings import drawing, word_for

# How long past a tool's own timeout the agent waits for the outcome of a short call.
CALL_GRACE_S: Final = 15.0
ROUND_SECONDS: Final = 90
EXPORTS_NAMED: Final = 4  # a board is exported as a PNG and an SVG


@dataclass(frozen=True, slots=True)
class Step:
    """One kind of request: its tool, the app offering it, and what it asks for."""

    method: str
    app: str
    doing: str  # "I could not <doing>: ..."


STEPS: Final = {
    "draw": Step("board.create", "whiteboard", "draw on the whiteboard"),
    "summary": Step("board.summary", "whiteboard", "look at the whiteboard"),
    "export": Step("board.export", "whiteboard", "export the whiteboard"),
    "round": Step("game.start_round", "draw-and-guess", "play a round of draw-and-guess"),
    "record": Step("voice.request_recording", "voice", "record your voice"),
}
_CALL_ID: Final = re.compile(
    r"call_(draw|summary|export|round|record)-([0-7][0-9A-HJKMNP-TV-Z]{25})"
)
RECORD_PROMPT: Final = "Say what you want me to hear"
RECORD_SECONDS: Final = 30
_BOARD: Final = r"(?:the\s+)?(?:white)?board"
_INTENTS: Final = tuple(
    (intent, re.compile(pattern, re.IGNORECASE))
    for intent, pattern in (
        ("user_draws", r"(?:let'?s|let\s+us)\s+draw|play\s+draw(?:ing)?"),
        ("user_guesses", r"(?:let'?s|let\s+us)\s+play|play(?:\s+a\s+(?:game|round))?"),
        ("summary", rf"(?:what'?s|what\s+is)\s+on\s+{_BOARD}|(?:describe|summari[sz]e)\s+{_BOARD}"),
        ("export", rf"export\s+{_BOARD}"),
        ("record", r"(?:please\s+)?record\s+(?:me|my\s+voice)|(?:let\s+me|i\s+want\s+to)\s+record"),
        ("draw", r"(?:please\s+)?draw\s+(?:me\s+)?(?P<subject>\S.*)"),
    )
)
# Why a call failed, for the codes a user is likely to meet.
_FAILURES: Final = {
    "app_disabled": "the app is disabled",
    "app_not_installed": "the app is not installed",
    "app_start_failed": "the app did not start",
    "tool_not_visible": "the tool is no longer available to me here",
    "stale_inventory_revision": "my list of tools was out of date, so please ask again",
    "foreground_required": "the app has to be in front for that",
    "permission_denied": "permission was refused",
    "policy_denied": "a policy does not allow it",
    "cancelled_by_user": "it was cancelled",
    "rate_limited": "too many requests came at once, so please try again shortly",
    "operation_expired": "it took too long",
    "already_running": "one is already running, and it goes on until its end",
    "handler_failed": "the app ran into a problem",
}
_OUTCOMES: Final = {
    ("user_guesses", "guessed"): "You guessed it: it was **{word}**!",
    ("user_guesses", "gave_up"): "You gave up: it was **{word}**.",
    ("user_guesses", "time_up"): "Time is up: it was **{word}**.",
    ("user_draws", "drawn"): "Thanks for drawing **{word}** ({shapes} shapes)!",
    ("user_draws", "gave_up"): "You gave up drawing **{word}**.",
    ("user_draws", "time_up"): "Time is up for drawing **{word}** ({shapes} shapes).",
}


def intent_of(text: str) -> tuple[str, str] | None:
    """(the intent, its subject) a user's message asks for, or None."""
    said = " ".join(text.replace("\u2019", "'").split()).rstrip(".!?").strip()
    for intent, pattern in _INTENTS:
        match = pattern.fullmatch(said)
        if match is not None:
            return intent, match.groupdict().get("subject") or ""
    return None


class SampleApps:
    """The sample apps' intents for one agent: `handle` starts one, in `nursery`;
    `finished` reacts to a call's final found in the inbox (the call of an earlier run)."""

    def __init__(
        self, client: AgentClient, nursery: trio.Nursery, log: Callable[[str], None]
    ) -> None:
        self.client = client
        self.nursery = nursery
        self._log = log

    async def handle(self, message: AgentMessage, intent: str, subject: str) -> None:
        conversation, trigger = message.conversation_id, message.id
        step_name = "round" if intent in ("user_draws", "user_guesses") else intent
        step = STEPS[step_name]
        tool = self._offered(conversation, step.method)
        self._log(f"{conversation}: {intent} ({'offered' if tool else 'not offered'})")
        if tool is None:
            await self._say(
                conversation,
                trigger,
                f"{step.method} is not offered in this conversation, so I cannot {step.doing}:"
                f" install and enable the {step.app} app, then ask again.",
            )
            return
        arguments: dict[str, Any] = {}
        if step_name == "draw":
            arguments = {"title": subject[:80]}
        elif step_name == "record":
            arguments = {"prompt": RECORD_PROMPT, "max_seconds": RECORD_SECONDS}
        elif step_name == "round":
            word = word_for(trigger)
            arguments = {"mode": intent, "word": word, "seconds": ROUND_SECONDS}
            if intent == "user_guesses":
                arguments["shapes"] = drawing(word)
        self.nursery.start_soon(self._call, conversation, trigger, step_name, tool, arguments)

    def _offered(self, conversation: str, method: str) -> InventoryTool | None:
        inventory = self.client.inventory(conversation)
        return next((t for t in (inventory.tools if inventory else []) if t.method == method), None)

    async def _call(
        self,
        conversation: str,
        trigger: str,
        step_name: str,
        tool: InventoryTool,
        arguments: dict[str, Any],
    ) -> None:
        """Makes the call, waits for its final (a round as long as it lasts, any other call
        its timeout and a grace), then says how it went."""
        step = STEPS[step_name]
        wait = float("inf") if step_name == "round" else tool.timeout_ms / 1000 + CALL_GRACE_S
        final = None
        try:
            call = self.client.call(
                conversation,
                step.method,
                arguments,
                app_scope=tool.app_scope,
                call_id=f"call_{step_name}-{trigger}",
                message_id=derive_message_id(trigger, 1),
            )
            with trio.move_on_after(wait):
                async for event in call:
                    if event.type == "lineup.tool.accepted" and step_name == "round":
                        await self._say(conversation, trigger, _round_on(arguments), index=2)
                final = call.final
        except SubmitRejected as rejected:
            text = f"I could not {step.doing}: the call was refused (`{rejected.code}`)."
            await self._say(conversation, trigger, text)
            return
        except AgentError as ended:
            # The connection ended (the final then waits in the next run's inbox), or the
            # inventory changed under the call: it is not made.
            self._log(f"{conversation}: {step.method} for {trigger}: {ended}")
            return
        if final is None:
            await call.aclose()
            await self._say(conversation, trigger, f"I asked to {step.doing} but got no answer.")
            return
        await self.finished(final)

    async def finished(self, final: AgentMessage) -> bool:
        """Tells the user how a call of these intents ended; False if `final` is not one."""
        match = _CALL_ID.fullmatch(final.call_id or "")
        if match is None:
            return False
        step_name, trigger = match.groups()
        conversation, payload = final.conversation_id, final.payload()
        if final.type == "lineup.tool.error":
            code = payload.code
            why = _FAILURES.get(code, "the runtime refused it")
            text = f"I could not {STEPS[step_name].doing}: {why} (`{code}`)."
            if step_name == "round" and code == "cancelled_by_user":
                text = "The round of draw-and-guess was stopped before its end."
            await self._say(conversation, trigger, text)
            return True
        output: dict[str, Any] = payload.output
        # The output met the app's own schema, which may be looser than what is read here.
        try:
            if step_name == "draw":
                app_scope = final.envelope.scope.app_scope
                text = await self._drawn(conversation, trigger, output, app_scope)
            elif step_name == "summary":
                title, description = _clip(output["title"]), _clip(output["description"], 600)
                text = f"On the board **{title}**: {description}"
            elif step_name == "export":
                text = _exported(output)
            elif step_name == "record":
                text = _recorded(output)
            else:
                text = _round_over(output)
        except (KeyError, TypeError, IndexError, ValueError):
            text = f"The {STEPS[step_name].app} app answered, but not as I expected."
        await self._say(conversation, trigger, text)
        return True

    async def _drawn(
        self, conversation: str, trigger: str, board: dict[str, Any], app_scope: str
    ) -> str:
        """Draws the board's title on the new board, as one state patch of its instance:
        only an instance of the app that made the board (an app that names another app's
        instance gets nothing drawn there on its word)."""
        title, instance = _clip(board["title"]), str(board["instance_id"])
        if instance.partition(":")[0] != app_scope:
            return f"The {app_scope} app named a board that is not its own, so I drew nothing."
        shapes = {f"{trigger}-{n}": shape for n, shape in enumerate(drawing(title), start=1)}
        try:
            await self.client.send_state_patch(
                conversation,
                instance,
                {"shapes": shapes},
                reply_to=trigger,
                message_id=derive_message_id(trigger, 2),
            )
        except SubmitRejected as rejected:
            return f"I made the board **{title}** but could not draw on it (`{rejected.code}`)."
        return f"I drew {title} on the whiteboard: {len(shapes)} shapes on the board **{title}**."

    async def _say(self, conversation: str, trigger: str, text: str, *, index: int = 0) -> None:
        """Sends `text`; one the AppServer refuses for good is logged, the agent goes on."""
        try:
            await self.client.send_markdown(
                conversation, text, reply_to=trigger, message_id=derive_message_id(trigger, index)
            )
        except SubmitRejected as rejected:
            self._log(f"{conversation}: the answer to {trigger} was refused: {rejected.code}")


def _round_on(arguments: dict[str, Any]) -> str:
    seconds = arguments["seconds"]
    if arguments["mode"] == "user_guesses":
        return f"A round of draw-and-guess: guess what I drew, you have {seconds} seconds."
    return f"A round of draw-and-guess: draw the word the game shows you in {seconds} seconds."


def _round_over(output: dict[str, Any]) -> str:
    said = _OUTCOMES.get(
        (output["mode"], output["outcome"]),
        "The round is over ({outcome}): the word was **{word}**.",
    )
    score = output["score"]
    return (
        said.format(
            word=_clip(output["word"], 40),
            outcome=_clip(output["outcome"], 20),
            shapes=len(output.get("shapes", [])),
        )
        + f" Round {int(output['round'])}, score: you {int(score['user'])},"
        f" me {int(score['agent'])}."
    )


def _recorded(output: dict[str, Any]) -> str:
    seconds = max(1, round(int(output["duration_ms"]) / 1000))
    said = f"I got your recording: {seconds} s, **{_clip(output['artifact']['title'])}**."
    if output.get("transcript"):
        said += f" You said: “{_clip(output['transcript'], 300)}”."
    elif "transcript" in output:
        said += " I could not make out any words in it."
    return said


def _clip(value: object, limit: int = 80) -> str:
    """An app's word, at most `limit` characters of it: what it says is its own, its size
    must not decide whether the agent's answer fits in a message."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"


def _exported(output: dict[str, Any]) -> str:
    artifacts = output["artifacts"][:EXPORTS_NAMED]
    if not artifacts:
        return "The board was exported, but no file came of it."
    lines = [
        f"- **{_clip(a['title'])}** (`{_clip(a['artifact_id'])}`, {_clip(a['media_type'])})"
        for a in artifacts
    ]
    return (
        f"I exported the board (revision {output['revision']}):\n\n"
        + "\n".join(lines)
        + "\n\nIn the web page, **Save** under the export saves the first to your downloads;"
        " in a terminal, `lineup artifacts save ID` saves any of them, e.g. "
        f"`lineup artifacts save {_clip(artifacts[0]['artifact_id'])}`."
    )
