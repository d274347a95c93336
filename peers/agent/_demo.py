"""The demo agent: a fixed, deterministic conversation script on `AgentClient`.

When a user asks what it can do, or says something it does not understand, it answers from
the conversation's live inventory: each tool's title and description, and three things to
try (`_offer`). "ask me something" answers in Markdown, runs a small task with progress
steps, then asks a choice (a colour), a confirm (create the board?) and an input (its
name), and reacts to each answer. "focus N" instead starts an N-minute focus
timer (25 without N) through the `pomodoro.start` tool, if the conversation's inventory
lists it, and says how that went: started (the call's `started` progress, with when it
ends) or why not. A spoken message (the user talked in the chat's voice mode: the message
hands over its recording) is read as the host wrote it out: its numbers in words are put in
digits (`_spoken`), and one that says "focus" anywhere asks for the largest number said in
it (`spoken_minutes`), since the recording may hold more than the request. "draw X",
"what's on the board", "export the board", "let's play" and "let's draw" use the sample
apps' tools (`_sample_apps`). Each tool call waits in a task of its own, so the agent
answers other messages meanwhile.

It asks one question at a time. When the user writes a message while one of its questions
is open, the conversation has moved on: a message is never an answer (answers come as
`lineup.interaction.response`, from the question's own buttons, `/1`, `/yes`, `/say`), so
the agent withdraws the question ("the conversation moved on") and then reacts to the
message as usual. An answer to the question that raced its withdrawal is still taken.

No randomness, no network beyond the AppServer, no state beyond the interaction ids and the
question open in each conversation (`_questions`, kept beside the cursor): each step's id
carries what the next step needs, so a restarted demo agent picks any conversation up where
it was. Every message it sends has an id derived from the message it reacts to
(`derive_message_id`), so handling a message twice (a crash before the cursor was saved)
re-sends the same ids and the AppServer keeps the first copy: the user sees each step once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import trio

from contracts import derive_message_id

from ._client import (
    TOOL_FINAL_TYPES,
    AgentClient,
    AgentMessage,
    SubmitRejected,
    TaskStatus,
    ToolCall,
)
from ._offer import ASK_ME, what_i_can_do
from ._questions import OpenQuestions
from ._sample_apps import SampleApps, intent_of
from ._spoken import with_digits

COLOURS: Final = {"red": "Red", "green": "Green", "blue": "Blue"}
# The withdrawal of the open question, derived from the message that moved on past it: far
# from the indices of the reactions to that message (0 the answer, 1 … the script's steps).
WITHDRAW_INDEX: Final = 1000
MOVED_ON: Final = "the conversation moved on"
TASK_STEPS: Final[tuple[tuple[TaskStatus, int, str], ...]] = (
    ("running", 0, "Reading your message"),
    ("running", 50, "Thinking it over"),
    ("succeeded", 100, "Done"),
)


FOCUS_TOOL: Final = "pomodoro.start"
FOCUS_DEFAULT_MINUTES: Final = 25
_FOCUS = re.compile(r"focus(?:\s+(\d{1,4}))?", re.IGNORECASE)
# How long past the tool's own timeout the demo waits for the outcome of a focus call.
FOCUS_GRACE_S: Final = 15.0
# Why a focus timer could not start, for the codes a user is likely to meet.
_FOCUS_FAILURES: Final = {
    "app_disabled": "the Pomodoro app is disabled",
    "app_not_installed": "the Pomodoro app is not installed",
    "app_version_mismatch": "the Pomodoro app has changed since I looked",
    "app_start_failed": "the Pomodoro app did not start",
    "tool_not_visible": "the timer is no longer available to me here",
    "stale_inventory_revision": "my list of tools was out of date, so please ask again",
    "invalid_arguments": "a timer takes 1 to 120 minutes",
    "foreground_required": "the timer has to be in front to start",
    "permission_denied": "permission was refused",
    "policy_denied": "a policy does not allow it",
    "cancelled_by_user": "it was cancelled",
    "rate_limited": "too many requests came at once, so please try again shortly",
    "operation_expired": "it took too long",
    "already_running": "a focus timer is already running, and it goes on until its end",
    "handler_failed": "the Pomodoro app ran into a problem",
}


# What asks the agent what it can do (anything else it does not understand is answered
# the same way, saying so first).
_HELP: Final = frozenset(
    {"help", "hi", "hello", "hey", "what can you do", "what can you do for me", "what now"}
)


def _said(text: str) -> str:
    """A message as the agent matches it: lowercase, one space, no closing punctuation."""
    return " ".join(text.lower().replace("\u2019", "'").split()).rstrip(".!?").strip()


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


class DemoAgent:
    """Reacts to user messages and interaction answers; ignores everything else.

    The interaction ids: `colour.<trigger>` (choice), `create.<trigger>.<colour>` (confirm),
    `name.<trigger>.<colour>` or `note.<trigger>` (input), where `<trigger>` is the id of
    the user's message that started the script.
    """

    def __init__(self, client: AgentClient, *, log: Callable[[str], None] | None = None) -> None:
        self.client = client
        self._log = log or (lambda _line: None)
        self.questions = OpenQuestions(client.state_dir)

    async def run(self) -> None:
        """Handles messages until cancelled; tool calls wait in tasks of the agent's own."""
        async with trio.open_nursery() as calls:
            apps = SampleApps(self.client, calls, self._log)
            while True:
                await self._handle(await self.client.receive(), calls, apps)

    async def _handle(self, message: AgentMessage, calls: trio.Nursery, apps: SampleApps) -> None:
        if message.type == "lineup.message" and message.sender.kind == "user":
            await self._move_on(message)
            payload = message.payload()
            text = payload.text
            typed = _FOCUS.fullmatch(text.strip())
            minutes = int(typed.group(1) or FOCUS_DEFAULT_MINUTES) if typed else None
            if payload.audio is not None:  # spoken: written out by the host
                text = with_digits(text)
                minutes = spoken_minutes(text)
            intent = intent_of(text)
            if minutes is not None:
                calls.start_soon(self._focus, message, minutes)
            elif intent is not None:
                await apps.handle(message, *intent)
            elif _said(text) == ASK_ME:
                await self._start(message)
            else:
                await self._offer(message, understood=_said(text) in _HELP)
        elif message.type == "lineup.interaction.response":
            await self._answer(message)
        elif message.type in TOOL_FINAL_TYPES:  # a call made before a restart has ended
            await apps.finished(message)

    async def _move_on(self, message: AgentMessage) -> None:
        """The user wrote instead of answering: the open question is withdrawn."""
        conversation = message.conversation_id
        question = self.questions.passed_by(conversation, message.seq)
        if question is None:
            return
        try:
            await self.client.withdraw(
                conversation,
                question,
                reason=MOVED_ON,
                reply_to=message.id,
                message_id=derive_message_id(message.id, WITHDRAW_INDEX),
            )
        except SubmitRejected as rejected:  # the question stays; the message is answered
            self._log(f"{conversation}: {question} not withdrawn ({rejected.code})")
            return
        self._log(f"{conversation}: withdrew {question}")
        self.questions.closed(conversation, question)

    async def _offer(self, message: AgentMessage, *, understood: bool) -> None:
        """What it can do here, from the conversation's live inventory."""
        inventory = self.client.inventory(message.conversation_id)
        self._log(f"{message.conversation_id}: said what it can do")
        await self._say(message, what_i_can_do(inventory, understood=understood))

    async def _start(self, message: AgentMessage) -> None:
        client, conversation, trigger = self.client, message.conversation_id, message.id
        text = message.payload().text
        self._log(f"{conversation}: user said {text!r}")
        await client.send_markdown(
            conversation,
            f"**Hello!** You wrote:\n\n{_quote(text)}\n\nLet me show you what I can do.",
            reply_to=trigger,
            message_id=derive_message_id(trigger, 0),
        )
        for index, (status, percent, label) in enumerate(TASK_STEPS, start=1):
            await client.send_task_progress(
                conversation,
                f"demo.{trigger}",
                status,
                percent=percent,
                label=label,
                message_id=derive_message_id(trigger, index),
            )
        await client.ask_choice(
            conversation,
            "Which colour should the board be?",
            COLOURS,
            interaction_id=f"colour.{trigger}",
            reply_to=trigger,
            message_id=derive_message_id(trigger, len(TASK_STEPS) + 1),
        )
        self.questions.asked(conversation, f"colour.{trigger}", message.seq)

    async def _focus(self, message: AgentMessage, minutes: int) -> None:
        """Starts a focus timer through the pomodoro app, if the inventory offers it, and
        tells the user the outcome. The call's ids derive from the message, so handling it
        again after a restart re-makes the same call and reports its outcome once."""
        conversation, trigger = message.conversation_id, message.id
        inventory = self.client.inventory(conversation)
        tool = next(
            (t for t in (inventory.tools if inventory else []) if t.method == FOCUS_TOOL), None
        )
        self._log(f"{conversation}: focus {minutes} ({'offered' if tool else 'not offered'})")
        if tool is None:
            await self._say(
                message,
                "Pomodoro is not available in this conversation, so I cannot start a timer.",
            )
            return
        invoke_id = derive_message_id(trigger, 1)
        call = self.client.call(
            conversation,
            FOCUS_TOOL,
            {"minutes": minutes},
            app_scope=tool.app_scope,
            call_id=f"call_{invoke_id}",
            message_id=invoke_id,
        )
        outcome = None
        try:
            with trio.move_on_after(tool.timeout_ms / 1000 + FOCUS_GRACE_S):
                outcome = await _started_or_final(call)
        except SubmitRejected as rejected:
            text = f"I could not start a focus timer: the call was refused (`{rejected.code}`)."
            await self._say(message, text)
            return
        if outcome is None or outcome.type == "lineup.tool.progress":
            await call.aclose()  # a timer that runs ends later: the runtime's to end
        if outcome is None:
            text = f"I asked for a {minutes}-minute focus timer but got no answer in time."
        elif outcome.type == "lineup.tool.progress":
            text = (
                f"Your {minutes}-minute focus timer has started, until {outcome.payload().ends_at}."
            )
        elif outcome.type == "lineup.tool.result":
            ends_at = outcome.payload().output.get("ends_at")
            until = f", until {ends_at}" if isinstance(ends_at, str) else ""
            text = f"Your {minutes}-minute focus timer has started{until}."
        else:
            code = outcome.payload().code
            why = _FOCUS_FAILURES.get(code, "the runtime refused it")
            text = f"I could not start a {minutes}-minute focus timer: {why} (`{code}`)."
        await self._say(message, text)

    async def _say(self, reply_to: AgentMessage, text: str) -> None:
        """The first reaction to `reply_to`: a Markdown message (derived index 0)."""
        await self.client.send_markdown(
            reply_to.conversation_id,
            text,
            reply_to=reply_to.id,
            message_id=derive_message_id(reply_to.id, 0),
        )

    async def _answer(self, message: AgentMessage) -> None:
        answer = message.payload()
        step, _, rest = answer.interaction_id.partition(".")
        trigger, _, colour = rest.partition(".")
        conversation, follow_up = message.conversation_id, derive_message_id(message.id, 1)
        self._log(f"{conversation}: answer to {answer.interaction_id}")
        self.questions.closed(conversation, answer.interaction_id)
        if step == "colour" and answer.kind == "choice":
            choice = answer.selected[0]
            if choice not in COLOURS:
                await self._say(message, f"I don't know the colour `{choice}`.")
                return
            await self._say(message, f"You picked **{COLOURS[choice]}**.")
            await self.client.ask_confirm(
                conversation,
                f"Shall I create a {choice} board now?",
                confirm_label="Create it",
                cancel_label="Not now",
                interaction_id=f"create.{trigger}.{choice}",
                reply_to=message.id,
                message_id=follow_up,
            )
            self.questions.asked(conversation, f"create.{trigger}.{choice}", message.seq)
        elif step == "create" and answer.kind == "confirm" and colour in COLOURS:
            if answer.confirmed:
                await self._say(message, "Great, let's do it.")
                prompt, ask_id = "What should the board be called?", f"name.{trigger}.{colour}"
            else:
                await self._say(message, "No problem, no board then.")
                prompt, ask_id = "Anything I should remember?", f"note.{trigger}"
            await self.client.ask_input(
                conversation,
                prompt,
                placeholder="Sprint 12" if answer.confirmed else None,
                interaction_id=ask_id,
                reply_to=message.id,
                message_id=follow_up,
            )
            self.questions.asked(conversation, ask_id, message.seq)
        elif step == "name" and answer.kind == "input" and colour in COLOURS:
            name = answer.text.strip() or "Untitled"
            await self._say(message, f"Done: the {colour} board **{name}** is ready.")
        elif step == "note" and answer.kind == "input":
            note = answer.text.strip()
            await self._say(message, f"Noted:\n\n{_quote(note)}" if note else "Nothing to note.")


def spoken_minutes(text: str) -> int | None:
    """The minutes a spoken message asks a focus timer for (its numbers in digits), or None
    when it does not say "focus" (or a word it begins). The largest number said: the
    recording may end in the middle of a request said again, and a number cut short
    ("twenty" of "twenty five") is never larger than the whole one."""
    if not re.search(r"\bfocus", text, re.IGNORECASE):  # "focused" too, as it may be heard
        return None
    said = [int(number) for number in re.findall(r"\b\d{1,4}\b", text)]
    return max(said) if said else FOCUS_DEFAULT_MINUTES


async def _started_or_final(call: ToolCall) -> AgentMessage:
    """The call's `started` progress with its end (a deadline the runtime keeps), or its
    final if that comes first: only then may the agent say the timer has started."""
    async for event in call:
        if event.type == "lineup.tool.progress":
            progress = event.payload()
            if progress.stage == "started" and progress.ends_at:
                return event
    assert call.final is not None
    return call.final


async def run_demo_agent(
    url: str,
    *,
    agent_id: str,
    token: str,
    state_dir: Path | None = None,
    log: Callable[[str], None] | None = None,
    task_status: trio.TaskStatus[AgentClient] = trio.TASK_STATUS_IGNORED,
    **options: Any,
) -> None:
    """The demo agent with its own connection, until cancelled: what `lineup run` starts
    beside an embedded AppServer. `nursery.start` returns the running `AgentClient`."""
    client = AgentClient(url, agent_id=agent_id, token=token, state_dir=state_dir, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(client.run)
        nursery.start_soon(DemoAgent(client, log=log).run)
        task_status.started(client)
