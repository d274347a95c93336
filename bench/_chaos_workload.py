"""The mixed workload of `lineup bench chaos`, and what each side records of it.

All at once, for the length of the run: the agent sends chat messages into several
conversations (one after the other in each, so each has a definite order), calls the sample
apps' tools (idempotent queries and commands that are not) and follows every call to its
final outcome; a scripted user types messages through the host's UI socket, opens and
closes apps, and the agent reads what the user typed. Once, at the start, the agent asks
the whiteboard to save its board as a file (`board.save`), and the user answers the consent
card through the UI socket a few seconds later, the faults running meanwhile. Every send,
verdict, receipt and final is written to the agent's record (`peers.agent.Recorder`) or the
user's (`peers.agent.UiRecorder`) as it happens, for the checker to compare with the chat
timeline and the AppServer's record after the run.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import trio

TaskStatus = trio.TaskStatus[None]

CONVERSATIONS = ("conv-1", "conv-2", "conv-3")
MESSAGE_EVERY_S = 0.25  # per conversation, agent -> user
TYPE_EVERY_S = 0.5  # the user, across the conversations
CALL_EVERY_S = 1.0
LAUNCH_EVERY_S = 7.0
CARD_READ_S = (3.0, 6.0)  # how long the user looks at the consent card before allowing it
CARD_POLL_S = 0.2  # the chat offers the terminal no event for a new card either
REANSWER_S = 5.0  # a card still open this long after its answer: the answer was lost
# (app scope, method, arguments): the idempotent queries and the commands that are not.
CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("whiteboard", "board.summary", {}),
    ("pomodoro", "pomodoro.status", {}),
    ("whiteboard", "board.create", {"title": "chaos"}),
    ("pomodoro", "pomodoro.start", {"minutes": 1}),
    ("draw-and-guess", "game.start_round", {"mode": "user_draws", "word": "cat", "seconds": 15}),
)
# Calls whose outcome comes at a deadline: made only while that deadline falls before the end.
DEADLINE_S = {"pomodoro.start": 60.0, "game.start_round": 15.0}
# Under power cuts, whose end is not known ahead: the calls that end at once, with the
# whiteboard's session-data replace (`board.create`) and its artifacts (`board.export`).
POWER_CUT_CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("whiteboard", "board.summary", {}),
    ("pomodoro", "pomodoro.status", {}),
    ("whiteboard", "board.create", {"title": "chaos"}),
    ("whiteboard", "board.export", {"formats": ["png"]}),
)


@dataclass(frozen=True)
class Final:
    """A call's final outcome as the agent received it, and when (trio time)."""

    at: float
    method: str
    type: str
    payload: dict[str, Any]


@dataclass
class Tally:
    """What the workload did, for the report."""

    messages: int = 0
    typed: int = 0
    refused_typing: int = 0
    calls: int = 0
    launches: int = 0
    capability: str = "not_asked"  # the save's outcome: allowed, or the final's code
    cards_answered: int = 0
    problems: list[str] = field(default_factory=list)


class Workload:
    def __init__(
        self,
        agent: Any,
        data_dir: Path,
        work: Path,
        rng: random.Random,
        ends_at: float,
        *,
        calls: tuple[tuple[str, str, dict[str, Any]], ...] = CALLS,
    ) -> None:
        from peers.agent import Recorder, UiRecorder

        self.agent = agent
        self.data_dir = data_dir
        self.rng = rng
        self.ends_at = ends_at  # trio time at which nothing new starts
        self.recorder = Recorder(agent, work / "agent.jsonl")
        self.typist = UiRecorder(work / "ui.jsonl")
        self.tally = Tally()
        self.open_calls = 0
        self.choices = calls
        self.finals: list[Final] = []

    def close(self) -> None:
        self.recorder.close()
        self.typist.close()

    # --- start: each conversation made and associated with the runtime ---------------------

    async def open_conversations(self, timeout: float) -> None:
        for conversation in CONVERSATIONS:
            await self._say(conversation)
        with trio.fail_after(timeout):
            while not all(self.agent.inventory(c) for c in CONVERSATIONS):  # noqa: ASYNC110
                await trio.sleep(0.1)  # the client offers no event for a new inventory

    # --- agent -> user -------------------------------------------------------------------

    async def _say(self, conversation: str) -> None:
        text = f"agent {conversation} {self.tally.messages}"
        await self.recorder.send_text(conversation, text)
        self.tally.messages += 1

    async def talk(self, conversation: str) -> None:
        while trio.current_time() < self.ends_at:
            await self._say(conversation)
            await trio.sleep(MESSAGE_EVERY_S)

    # --- tool calls ----------------------------------------------------------------------

    async def calls(self, nursery: trio.Nursery) -> None:
        while trio.current_time() < self.ends_at:
            scope, method, arguments = self.rng.choice(self.choices)
            if trio.current_time() + DEADLINE_S.get(method, 0) < self.ends_at:
                nursery.start_soon(
                    self.call, self.rng.choice(CONVERSATIONS), scope, method, arguments
                )
            await trio.sleep(CALL_EVERY_S)

    async def call(
        self, conversation: str, scope: str, method: str, arguments: Any
    ) -> dict[str, Any] | None:
        """Make one call and wait for its final outcome; its type and payload, or None when
        the AppServer refused the call."""
        from peers.agent import AgentError

        self.open_calls += 1
        try:
            call_id = await self.recorder.call(conversation, method, arguments, app_scope=scope)
            final = await self.recorder.final(call_id)
        except AgentError as exc:  # refused by the AppServer: recorded as such
            self.tally.problems.append(f"{method}: {exc}")
            return None
        finally:
            self.open_calls -= 1
        self.tally.calls += 1
        payload = final.envelope.payload
        payload = payload if isinstance(payload, dict) else {}
        self.finals.append(Final(trio.current_time(), method, final.type, payload))
        return {"type": final.type, "payload": payload}

    # --- a capability the user answers ---------------------------------------------------

    async def capability(self, *, task_status: TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """The agent asks the whiteboard to save its board (`board.save`, which asks the
        runtime for `file.save`); started once the consent card is open in the chat (or the
        call ended without one), so the faults hit while it is open. The user reads the card
        a few seconds, then allows it once through the UI socket, and answers again any card
        of it still open (an answer a fault lost). The outcome is `allowed` when the call's
        one final says saved, else the final's code."""
        shown = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._save, CONVERSATIONS[0], shown)
            await shown.wait()
            task_status.started()

    async def _save(self, conversation: str, shown: trio.Event) -> None:
        async with trio.open_nursery() as user:
            user.start_soon(self._allow, conversation, shown)
            final = await self.call(conversation, "whiteboard", "board.save", {"format": "png"})
            user.cancel_scope.cancel()
        shown.set()
        payload = (final or {}).get("payload") or {}
        if final is None:
            self.tally.capability = "refused_by_appserver"
        elif final["type"] == "lineup.tool.result" and (payload.get("output") or {}).get("saved"):
            self.tally.capability = "allowed"
        else:
            self.tally.capability = str(payload.get("code") or final["type"])
            self.tally.problems.append(f"board.save: {payload.get('message') or payload}")

    async def _allow(self, conversation: str, shown: trio.Event) -> None:
        from lineup.ui_session import UiSession

        session = UiSession(self.data_dir, kind="terminal", session_id="chaos-consent")
        answered: dict[str, float] = {}  # card -> when the user last answered it
        while True:
            card = await trio.to_thread.run_sync(self._open_card, conversation)
            if card is not None and trio.current_time() - answered.get(card, -1e9) > REANSWER_S:
                if not shown.is_set():
                    shown.set()
                    await trio.sleep(self.rng.uniform(*CARD_READ_S))
                body = {
                    "kind": "answer",
                    "conversation_id": conversation,
                    "interaction_id": card,
                    "selected": ["once"],
                }
                if await self._ui(session.act, body):
                    answered[card] = trio.current_time()
                    self.tally.cards_answered += 1
            await trio.sleep(CARD_POLL_S)

    def _open_card(self, conversation: str) -> str | None:
        """The id of a `file.save` consent card open in the chat, as the terminal reads it."""
        import sqlite3

        from apps.chat import history

        try:
            waiting = history(self.data_dir, conversation)["pending_interactions"]
        except (sqlite3.Error, OSError):  # the chat's log mid-write or the disk full
            return None
        return next(
            (
                str(card["interaction_id"])
                for card in waiting
                if card.get("origin") == "runtime" and card.get("capability") == "file.save"
            ),
            None,
        )

    # --- the user ------------------------------------------------------------------------

    async def type(self) -> None:
        from lineup.ui_session import UiSession

        session = UiSession(self.data_dir, kind="terminal", session_id="chaos-user")
        n = 0
        while trio.current_time() < self.ends_at:
            conversation = self.rng.choice(CONVERSATIONS)
            text = f"user {conversation} {n}"
            n += 1
            if await self._ui(self.typist.type, session, conversation, text):
                self.tally.typed += 1
            else:
                # No answer: taken or not, the user cannot tell (recorded `unconfirmed`);
                # the checker counts it only if some side saw it.
                self.tally.refused_typing += 1
            await trio.sleep(TYPE_EVERY_S)

    async def launch_and_close(self) -> None:
        """The user opens an app and closes it again, now and then."""
        from lineup.ui_session import UiSession

        session = UiSession(self.data_dir, kind="terminal", session_id="chaos-launcher")
        while trio.current_time() < self.ends_at:
            await trio.sleep(LAUNCH_EVERY_S)
            scope = self.rng.choice(("whiteboard", "pomodoro"))
            if await self._ui(partial(session.intent, "open_app", app_scope=scope)):
                self.tally.launches += 1
            await trio.sleep(1)
            await self._ui(partial(session.intent, "close_app", app_scope=scope))

    async def _ui(self, request: Callable[..., Any], *args: Any) -> bool:
        """One request through the UI socket; whether the host took it."""
        from actors.kernel import ControlError

        try:
            await trio.to_thread.run_sync(request, *args)
        except (ControlError, OSError):
            return False
        return True


async def finish(workload: Workload, timeout: float) -> bool:
    """Wait for every call in flight to end; whether they all did in `timeout` s."""
    with trio.move_on_after(timeout):
        while workload.open_calls:  # noqa: ASYNC110 (a count, from many tasks)
            await trio.sleep(0.2)
        return True
    return False
