"""The view model an app reads (the SDK's `AppStateAPI`): a fold over its event log.

Per conversation: the timeline (agent messages, the user's own messages with their
delivery state, interaction requests and answers, the agent's tool calls with their state,
the artifact reference a call's result handed the agent and, for a call the runtime keeps
until a deadline, that timer's state and moments; an agent message's speech and the
recording a spoken message of the user's was written out from), the conversation's mode,
the tasks' latest progress (the agent's tasks, and each tool call as a task), and the
interactions still waiting for an answer. It is rebuilt from the log at start and updated
event by event afterwards; both paths run the same `apply`, so what a restarted app shows
is what it showed before.

An app's own view keeps a conversation's newest `KEPT_ITEMS` items and tasks in memory (its
log keeps them all, and the web host's page folds the log itself): what falls out is
settled (an agent's message, a question answered or withdrawn, a call ended, a message of
the user's with its verdict), never what is still open, so the app's answers and stops
find what they need. A fold with the same bound over the same log gives the same view,
so a restarted app still shows what it showed before.

A question leaves the open ones when the user answers it, or when the agent that asked it
withdraws it (`lineup.interaction.withdraw`): its item's state is then `withdrawn`, with the
agent's reason. A withdrawal of anything else changes nothing (`withdraw_refusal` says
why, with a code of the contracts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

# How the user answers a capability consent card (the gateway's answers, by option id).
CONSENT_OPTIONS: tuple[dict[str, str], ...] = (
    {"id": "once", "label": "Allow once"},
    {"id": "session", "label": "Allow until the runtime restarts"},
    {"id": "always", "label": "Always allow"},
    {"id": "deny", "label": "Deny"},
)
RECORD_OPTIONS: tuple[dict[str, str], ...] = (
    {"id": "once", "label": "Record now"},
    {"id": "deny", "label": "Deny"},
)
# Why a withdrawal changed nothing (`contracts.Code` values: this module is read
# where the contracts are not loaded).
NOT_FOUND = "interaction_not_found"
CLOSED = "interaction_closed"
WITHDRAW = "lineup.interaction.withdraw"
# How many items and tasks of a conversation an app's own view keeps in memory; it drops
# the oldest settled ones once a quarter more have come, so a drop is rare and costs one
# pass over what is kept.
KEPT_ITEMS: Final = 500
_OPEN_TOOL_STATES: Final = frozenset({"accepted", "starting", "running", "progress"})
_OPEN_TASK_STATUSES: Final = frozenset({"pending", "running"})
# What the timeline keeps of an artifact a tool call handed the agent.
_ARTIFACT_FIELDS = ("artifact_id", "title", "media_type", "size")
# What a consent card says an app asks, in words, for the capabilities this runtime serves;
# another's card names it as the app's manifest does.
ASKS: Final = {
    "file.save": "asks to save a file on your computer",
    "file.open": "asks you for a file",
    "notification.show": "asks to show you notifications",
    "clipboard.write": "asks to copy text to your clipboard",
    "speech.speak": "asks to speak aloud",
    "speech.transcribe": "asks to write down what was said",
    "audio.record": "asks to record you",
}


def _sender(message: dict[str, Any]) -> str:
    sender = message.get("sender") or {}
    return f"{sender.get('kind', '?')}:{sender.get('id', '?')}"


@dataclass
class ConversationView:
    conversation_id: str
    timeline: list[dict[str, Any]] = field(default_factory=list)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending_interactions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The Interaction App's mode here (`im`, `audio`); None until one was recorded.
    mode: str | None = None
    applied: int = 0  # events folded: 1 after the conversation's first
    keep: int | None = None  # items and tasks kept (None: all of them)
    _index: dict[str, int] = field(default_factory=dict, repr=False)
    _drop_at: int = field(default=0, repr=False)  # the size past which settled ones drop

    def __post_init__(self) -> None:
        if self.keep is not None:
            self._drop_at = self.keep + self.keep // 4

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one event (a row of the log, or a state change of an action)."""
        body = event["body"]
        self.applied += 1
        if event["kind"] == "agent":
            self._agent(event, body)
        elif event["kind"] == "tool":
            self._tool(body)
        elif event["kind"] == "consent":
            self._consent(body)
        elif event["kind"] == "mode":
            self.mode = str(body["mode"])
        elif event["kind"] == "speech":
            self._speech(body)
        else:
            self._action(event, body)
        if self.keep is not None and max(len(self.timeline), len(self.tasks)) > self._drop_at:
            self._drop_settled(self.keep)

    def _drop_settled(self, keep: int) -> None:
        """Keep the newest `keep` items and tasks, and every older one still open; the next
        drop comes after a quarter of `keep` more, whatever stayed open."""
        cut = len(self.timeline) - keep
        if cut > 0:
            self.timeline = [
                item for n, item in enumerate(self.timeline) if n >= cut or _is_open(item)
            ]
            self._index = {str(item["id"]): n for n, item in enumerate(self.timeline)}
        cut = len(self.tasks) - keep
        if cut > 0:
            self.tasks = {
                key: task
                for n, (key, task) in enumerate(self.tasks.items())
                if n >= cut or task.get("status") in _OPEN_TASK_STATUSES
            }
        self._drop_at = max(len(self.timeline), len(self.tasks)) + keep // 4

    def _add(self, item: dict[str, Any]) -> None:
        if item["id"] in self._index:
            return
        self._index[item["id"]] = len(self.timeline)
        self.timeline.append(item)

    def _agent(self, event: dict[str, Any], message: dict[str, Any]) -> None:
        payload = message.get("payload") or {}
        type_ = message["type"]
        base = {"id": message["id"], "sender": _sender(message), "seq": message.get("seq")}
        if message.get("timestamp"):
            base["time"] = message["timestamp"]  # display only: when the agent sent it
        if type_ == "lineup.message":
            self._add(
                {
                    **base,
                    "kind": "message",
                    "text": payload.get("text", ""),
                    "format": payload.get("format", "markdown"),
                    "state": "received",
                }
            )
        elif type_ == "lineup.task.progress":
            task = {key: payload[key] for key in ("status", "percent", "label") if key in payload}
            previous = self.tasks.get(payload["task_id"], {})
            # Display only: the task's name (its id), its last label and when it last moved.
            task["title"] = previous.get("title", payload["task_id"])
            if "label" not in task and "label" in previous:
                task["label"] = previous["label"]
            if message.get("timestamp"):
                task["time"] = message["timestamp"]
            self.tasks[payload["task_id"]] = task
        elif type_ == "lineup.interaction.request":
            interaction = {**payload, "message_id": message["id"]}
            self.pending_interactions[payload["interaction_id"]] = interaction
            self._add(
                {
                    **base,
                    "kind": "interaction",
                    "text": payload.get("prompt", ""),
                    "interaction": interaction,
                    "state": "waiting",
                }
            )
        elif type_ == WITHDRAW and self.withdraw_refusal(message) is None:
            request = self.pending_interactions.pop(payload["interaction_id"])
            item = self.timeline[self._index[request["message_id"]]]
            item["state"] = "withdrawn"
            if payload.get("reason"):
                item["reason"] = payload["reason"]

    def withdraw_refusal(self, message: dict[str, Any]) -> str | None:
        """None if `message` (a withdrawal) closes an open question: one the same agent
        asked in this conversation, never a consent card (the runtime's). Otherwise why it
        changes nothing: no such question of that agent's here, or it is closed already."""
        key = (message.get("payload") or {}).get("interaction_id")
        sender = _sender(message)
        request = self.pending_interactions.get(str(key))
        if (
            request is not None
            and request.get("origin") != "runtime"
            and self.timeline[self._index[request["message_id"]]]["sender"] == sender
        ):
            return None
        asked = any(
            item["kind"] == "interaction"
            and item["sender"] == sender
            and item["interaction"].get("interaction_id") == key
            for item in self.timeline
        )
        return CLOSED if asked else NOT_FOUND

    def _tool(self, step: dict[str, Any]) -> None:
        """An agent's tool call as a timeline item updated in place and as a task."""
        call_id, state = step["call_id"], step["state"]
        # The tool's title and the app's where the router gave them, else their ids.
        tool, app = step.get("title") or step["method"], step.get("app_title") or step["app_scope"]
        label = f"{tool} · {app}"
        task = self.tasks.setdefault(call_id, {"label": label, "status": "pending"})
        if task["status"] in _OPEN_TASK_STATUSES:  # an ended task stays ended
            task["status"] = _TASK_STATUS.get(state, "running")
            if step.get("code") == "cancelled_by_user":
                task["status"] = "cancelled"
        if step.get("percent") is not None:
            task["percent"] = step["percent"]
        elif state == "succeeded":
            task["percent"] = 100
        position = self._index.get(call_id)
        if position is None:
            self._add(
                {"id": call_id, "sender": "runtime:tools", "kind": "tool", "text": label,
                 "shown": label, "state": state}
            )  # fmt: skip
            position = self._index[call_id]
        item = self.timeline[position]
        if item["state"] not in ("succeeded", "failed"):  # the final stays the final
            item["state"] = state if state != "progress" else "running"
        for key in ("percent", "code", "message"):
            if step.get(key) is not None:
                item[key] = step[key]
        if isinstance(step.get("deadline"), dict):  # the runtime's timer: its latest state
            item["deadline"] = dict(step["deadline"])
        reference = step.get("artifact")
        if isinstance(reference, dict):  # what the call handed the agent: never a path
            item["artifact"] = {k: reference.get(k) for k in _ARTIFACT_FIELDS}

    def _consent(self, card: dict[str, Any]) -> None:
        """A capability consent card: a question from the runtime (`origin: runtime`), not
        the agent, answered with one of `CONSENT_OPTIONS`; closed by the runtime once the
        request is decided, whoever or whatever decided it. A card with a `chooser` (what
        a `file.open` takes) is answered by the file the user chooses, or denied; one with a
        `recorder` (what an `audio.record` takes) by recording now (`RECORD_OPTIONS`) or not."""
        key = card["request_id"]
        if card["state"] != "asking":
            self.pending_interactions.pop(key, None)
            position = self._index.get(key)
            if position is not None:
                self.timeline[position]["state"] = str(card.get("outcome") or "answered")
            return
        if key in self._index:
            return
        chooser, recorder = card.get("chooser"), card.get("recorder")
        capability = str(card["capability"])
        asks = ASKS.get(capability, f"asks to use {capability}")
        if chooser:
            asks = "asks you for a file"
        elif recorder:
            asks = "asks to record you"
        prompt = f"{card['app_scope']} {asks}: {card['purpose']}"
        options = [o for o in CONSENT_OPTIONS if not chooser or o["id"] == "deny"]
        if recorder:  # the microphone is asked each time: the yes is a recording now
            options = list(RECORD_OPTIONS)
        interaction = {
            "interaction_id": key,
            "kind": "choice",
            "prompt": prompt,
            "options": [dict(option) for option in options],
            "origin": "runtime",
            "message_id": key,
            "app_scope": card["app_scope"],
            "capability": card["capability"],
            "deadline_ms": card.get("deadline_ms"),
        }
        if isinstance(chooser, dict):
            interaction["chooser"] = dict(chooser)
        if isinstance(recorder, dict):
            interaction["recorder"] = dict(recorder)
        self.pending_interactions[key] = interaction
        self._add(
            {
                "id": key,
                "sender": "runtime:capabilities",
                "kind": "interaction",
                "text": prompt,
                "format": "plain",
                "interaction": interaction,
                "state": "waiting",
            }
        )

    def _speech(self, spoken: dict[str, Any]) -> None:
        """A part of an agent message, spoken (a WAV artifact the chat had made of it): kept
        on the message's item, in the order of the parts."""
        position = self._index.get(str(spoken["message_id"]))
        reference = spoken.get("artifact")
        if position is None or not isinstance(reference, dict):
            return
        item = self.timeline[position]
        parts = [p for p in item.get("speech", []) if p["part"] != spoken["part"]]
        part = {k: reference.get(k) for k in _ARTIFACT_FIELDS}
        part.update(part=spoken["part"], duration_ms=spoken.get("duration_ms"))
        item["speech"] = sorted([*parts, part], key=lambda p: int(p["part"]))

    def _action(self, event: dict[str, Any], action: dict[str, Any]) -> None:
        state = event["state"]
        position = self._index.get(action["id"])
        if position is not None:  # a state change of an action already shown
            self.timeline[position]["state"] = state
            if event.get("code"):
                self.timeline[position]["code"] = event["code"]
            return
        if action["action"] == "send_text":
            text = action.get("text", "")
        elif state == "refused":  # the app's own verdict: never sent, the question unchanged
            text = _answer_text(action.get("response") or {})
        else:
            response = action.get("response") or {}
            interaction_id = str(response.get("interaction_id"))
            self.pending_interactions.pop(interaction_id, None)
            given = {
                key: response[key] for key in ("selected", "confirmed", "text") if key in response
            }
            for item in self.timeline:
                if item.get("interaction", {}).get("interaction_id") == interaction_id:
                    item["state"] = "answered"
                    item["answer"] = given  # what the user gave, shown on the question
            text = _answer_text(response)
        item = {
            "id": action["id"],
            "sender": "user",
            "kind": "message",
            "text": text,
            "format": "plain",
            "state": state,
        }
        if event.get("code"):
            item["code"] = event["code"]
        if isinstance(action.get("audio"), dict):  # spoken: the recording it was written from
            item["audio"] = {k: action["audio"].get(k) for k in _ARTIFACT_FIELDS}
        self._add(item)

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "timeline": self.timeline,
            "tasks": self.tasks,
            "pending_interactions": list(self.pending_interactions.values()),
            "mode": self.mode,
        }


def _is_open(item: dict[str, Any]) -> bool:
    """Whether an item may still change: a question waiting, a tool call not ended, a
    message of the user's waiting for its verdict."""
    if item["kind"] == "interaction":
        return bool(item["state"] == "waiting")
    if item["kind"] == "tool":
        return item["state"] in _OPEN_TOOL_STATES
    return bool(item["sender"] == "user" and item["state"] == "pending")


_TASK_STATUS = {
    "accepted": "pending",
    "starting": "pending",
    "running": "running",
    "progress": "running",
    "succeeded": "succeeded",
    "failed": "failed",
}


def _answer_text(response: dict[str, Any]) -> str:
    kind = response.get("kind")
    if kind == "choice":
        return "chose " + ", ".join(response.get("selected", []))
    if kind == "confirm":
        return "confirmed" if response.get("confirmed") else "declined"
    return str(response.get("text", ""))


class ViewModel:
    """Every conversation's view, for one app, each keeping its newest `keep` items."""

    def __init__(self, keep: int | None = KEPT_ITEMS) -> None:
        self.conversations: dict[str, ConversationView] = {}
        self.keep = keep

    def apply(self, event: dict[str, Any]) -> ConversationView:
        conversation = event["conversation_id"]
        view = self.conversations.get(conversation)
        if view is None:
            view = ConversationView(conversation, keep=self.keep)
            self.conversations[conversation] = view
        view.apply(event)
        return view
