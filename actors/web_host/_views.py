"""What the page shows, read from the projections the SDK gives the chat and registry
apps, as the command line reads them: the chat app's view of a conversation (folded from
its log, `apps.sdk`), the app registry and the runtime's link state (`actors.store`'s
read-only readers). Nothing here writes, and nothing reaches the AppServer.

Every string an agent or an app wrote is made visible (`apps.chat.visible`: control and
invisible formatting characters written out) before it leaves for the page, which puts it
in the DOM as text only.

The page holds a position: the last log position of the conversation it was sent. After a
reconnect it sends that position back with the ids of its items still in a state that can
change in place (a message waiting for the AppServer's verdict), and gets exactly the
items that differ from what it holds (`ChatFold.changed_since`). From then on its
conversation is followed (`ChatFollower`): each look reads what came after the last one.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from apps.chat import app_dir, artifact_label, refusal_sentence, visible
from apps.sdk import ConversationView, EventLog
from contracts import ContractError, accept_words, file_wanted, size_words

from ._markdown import markdown_tree

LOG_FILE: Final = "app.db"
_ASK_FIELDS: Final = ("kind", "multiple", "confirm_label", "cancel_label", "placeholder", "origin")
_REGISTRY_FIELDS: Final = ("app_scope", "kind", "installed_version", "enabled", "install_state")
# A timer the runtime keeps for a tool call: its state, its moments (UTC, which the page
# puts on the local clock and counts down to) and what is left while it is paused.
_DEADLINE_STATES: Final = frozenset({"running", "paused", "finished", "interrupted"})
_DEADLINE_FIELDS: Final = {
    "ends_at": str,
    "paused_at": str,
    "ended_at": str,
    "remaining_ms": int,
}
RECENT_OPERATIONS: Final = 5


def _shown(value: Any) -> str:
    return visible(value, newlines=False)


def display_item(item: dict[str, Any], order: int, open_ids: set[str]) -> dict[str, Any]:
    """A timeline item as the page renders it (every string visible, Markdown as a tree)."""
    mine = item.get("sender") == "user"
    shown: dict[str, Any] = {
        "id": str(item["id"]),
        "order": order,
        "kind": str(item.get("kind", "message")),
        "from": "you" if mine else _shown(item.get("sender", "?")),
        "mine": mine,
        "state": _shown(item.get("state", "")),
    }
    if item.get("code"):
        shown["code"] = _shown(item["code"])
    text = str(item.get("text", ""))
    if shown["kind"] == "message" and item.get("format") == "markdown":
        shown["md"] = markdown_tree(text)
    else:
        shown["text"] = visible(text)
    interaction = item.get("interaction")
    if shown["kind"] == "interaction" and isinstance(interaction, dict):
        ask: dict[str, Any] = {
            key: _shown(interaction[key]) if isinstance(interaction[key], str) else interaction[key]
            for key in _ASK_FIELDS
            if key in interaction and isinstance(interaction[key], str | bool)
        }
        interaction_id = str(interaction.get("interaction_id"))
        ask["interaction_id"] = interaction_id
        ask["open"] = interaction_id in open_ids
        ask["options"] = [
            {"id": str(option.get("id")), "label": _shown(option.get("label", option.get("id")))}
            for option in interaction.get("options", [])
            if isinstance(option, dict)
        ]
        if isinstance(item.get("answer"), dict):
            ask["answer"] = _answer_shown(item["answer"], interaction)
        chooser = _chooser_shown(interaction.get("chooser"))
        if chooser is not None:
            ask["chooser"] = chooser
        recorder = _recorder_shown(interaction.get("recorder"), interaction.get("app_scope"))
        if recorder is not None:
            ask["recorder"] = recorder
        if item.get("state") in ("recording", "recorded", "not recorded"):
            ask["recording"] = True
        if item.get("state") == "withdrawn":
            ask["withdrawn"] = True
            if item.get("reason"):
                ask["reason"] = _shown(item["reason"])
        shown["ask"] = ask
    if shown["kind"] == "message" and not mine and isinstance(item.get("speech"), list):
        # The message spoken (audio mode), part by part: what the page plays, in order.
        shown["speech"] = [
            {"id": _shown(part.get("artifact_id", "")), "part": int(part.get("part") or 0)}
            for part in item["speech"]
            if isinstance(part, dict)
        ]
    if shown["kind"] == "message" and mine and isinstance(item.get("audio"), dict):
        shown["spoken"] = _shown(item["audio"].get("title", ""))  # the recording's title
    if shown["kind"] == "message" and mine and item.get("state") == "refused":
        sentence = refusal_sentence(item.get("code"))
        if sentence:
            shown["detail"] = sentence
    if shown["kind"] == "tool":
        if isinstance(item.get("percent"), int):
            shown["percent"] = item["percent"]
        if item.get("message"):
            shown["detail"] = visible(item["message"])
        if isinstance(item.get("artifact"), dict):
            shown["artifact"] = _artifact_shown(item["artifact"])
        deadline = item.get("deadline")
        if isinstance(deadline, dict) and deadline.get("state") in _DEADLINE_STATES:
            shown["deadline"] = {"state": deadline["state"]} | {
                key: deadline[key]
                for key, kind in _DEADLINE_FIELDS.items()
                if isinstance(deadline.get(key), kind)
            }
    return shown


def _chooser_shown(chooser: Any) -> dict[str, Any] | None:
    """What a card that asks for a file shows beside its file input: what the app takes
    (`accept`, for the input; `takes` in words) and at most how much (`max_bytes`, `limit`
    in words)."""
    if not isinstance(chooser, dict):
        return None
    try:
        wanted = file_wanted({k: chooser[k] for k in ("accept", "max_bytes") if k in chooser})
    except ContractError:  # not the gateway's shape: no chooser rather than a wrong one
        return None
    return {
        "accept": [_shown(entry) for entry in wanted.accept],
        "max_bytes": wanted.max_bytes,
        "takes": accept_words(wanted.accept),
        "limit": size_words(wanted.max_bytes),
    }


def _recorder_shown(recorder: Any, app_scope: Any) -> dict[str, Any] | None:
    """What a card that asks for a recording shows: for which app, at most how long
    (`max_seconds`) and how much (`max_bytes`)."""
    if not isinstance(recorder, dict):
        return None
    seconds, size = recorder.get("max_seconds"), recorder.get("max_bytes")
    if not (isinstance(seconds, int) and isinstance(size, int)) or seconds < 1 or size < 1:
        return None  # not the gateway's shape: no recorder rather than a wrong one
    return {"max_seconds": seconds, "max_bytes": size, "app": _shown(str(app_scope or ""))}


def _artifact_shown(reference: dict[str, Any]) -> dict[str, Any]:
    """An artifact a tool call handed the agent, as the page shows it: its line, its title
    (a picture's alt text) and declared media type (whether to ask for a preview, which the
    web host decides from the bytes), and its id, which the page only sends back."""
    return {
        "id": _shown(reference.get("artifact_id", "")),
        "label": artifact_label(reference),
        "title": _shown(reference.get("title", "")),
        "media_type": _shown(reference.get("media_type", "")),
    }


def _answer_shown(answer: dict[str, Any], interaction: dict[str, Any]) -> str:
    """The answer the user gave to a question, in the question's own words: the labels of
    the options chosen, the confirm or cancel label, or the text typed."""
    if isinstance(answer.get("selected"), list):
        labels = {
            str(option.get("id")): option.get("label", option.get("id"))
            for option in interaction.get("options", [])
            if isinstance(option, dict)
        }
        return ", ".join(_shown(labels.get(str(key), key)) for key in answer["selected"])
    if isinstance(answer.get("confirmed"), bool):
        key, default = ("confirm_label", "Yes") if answer["confirmed"] else ("cancel_label", "No")
        return _shown(interaction.get(key) or default)
    return visible(str(answer.get("text", "")))


def display_tasks(tasks: dict[str, Any]) -> list[dict[str, Any]]:
    shown = []
    for task_id, task in tasks.items():
        entry = {
            "id": _shown(task_id),
            "title": _shown(task.get("title") or task.get("label") or task_id),
            "label": _shown(task.get("label", "")),
            "status": _shown(task.get("status", "?")),
        }
        if isinstance(task.get("percent"), int | float):
            entry["percent"] = task["percent"]
        shown.append(entry)
    return shown


@dataclass
class ChatFold:
    """A conversation's view folded from the chat app's log, and the items as they were
    at an earlier position of it."""

    pos: int = 0
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    before: dict[str, dict[str, Any]] = field(default_factory=dict)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    mode: str = "im"  # the conversation's mode: `im`, or `audio`

    def changed_since(self, held: dict[str, dict[str, Any]], still_open: set[str]) -> list[Any]:
        """The items that differ from `held`, and those of `still_open` (items the page
        holds that may have changed in place since), in timeline order. An item the page
        was sent as it is, the very object, is not compared again."""
        changed = []
        for key, item in self.items.items():
            before = held.get(key)
            if key in still_open or (before is not item and before != item):
                changed.append(item)
        return changed


def _display_all(view: ConversationView) -> dict[str, dict[str, Any]]:
    open_ids = set(view.pending_interactions)
    return {
        str(item["id"]): display_item(item, order, open_ids)
        for order, item in enumerate(view.timeline)
    }


def fold_chat(data_dir: Path, conversation: str, since: int = 0) -> ChatFold:
    """The chat's view of `conversation` now, and as it was at log position `since`."""
    folded = ChatFold()
    path = app_dir(data_dir)
    view = ConversationView(conversation)
    if not (path / LOG_FILE).exists():
        return folded
    log = EventLog(path, readonly=True)
    held = since == 0  # the page holds nothing: nothing to compare with
    try:
        for event in log.events(conversation_id=conversation):
            if not held and event["pos"] > since:
                folded.before = _display_all(view)
                held = True
            view.apply(event)
            folded.pos = event["pos"]
    finally:
        log.close()
    if not held:  # the page holds everything there is
        folded.before = _display_all(view)
    folded.items = _display_all(view)
    folded.tasks = display_tasks(view.tasks)
    folded.mode = view.mode or "im"
    return folded


class ChatFollower:
    """A page's conversation kept up to date from the chat's log, for the changes after its
    first view. Each look reads the events after the last position it read, and again the
    user's actions it shows pending: the AppServer's verdict is the one change the log
    makes in place that the view shows. An item is put in the page's form again only when
    it changed, so a look costs what changed plus a comparison per item, not a fold of the
    whole conversation (which grows with it: ≈6 µs an item). An agent's message is not
    compared once shown, until a part of it is spoken: the view adds it once and changes it
    only then (`apps.sdk`'s `ConversationView`), and it is most of a long conversation (at
    2,000 items a look then costs ≈1 ms instead of 4-15 on a loaded 2-core machine)."""

    def __init__(self, data_dir: Path, conversation: str) -> None:
        self.path = app_dir(data_dir)
        self.view = ConversationView(conversation)
        self.pos = 0
        self.pending: set[str] = set()  # the user's actions shown pending
        # Item id -> (the view's item as it was shown, its card open, what the page got).
        self.shown: dict[str, tuple[dict[str, Any], bool, dict[str, Any]]] = {}
        # Item id -> what the page got, for the agent's messages: they change only when spoken.
        self.settled: dict[str, dict[str, Any]] = {}

    def look(self) -> ChatFold:
        if (self.path / LOG_FILE).exists():
            log = EventLog(self.path, readonly=True)
            try:
                for event in log.events(conversation_id=self.view.conversation_id, after=self.pos):
                    self.view.apply(event)
                    self.pos = event["pos"]
                    if event["kind"] == "speech":  # the one change an agent's message takes
                        self.settled.pop(str(event["body"].get("message_id")), None)
                for action_id in self.pending:  # applied again: its state, as the SDK does
                    for event in log.events_by_id(action_id):
                        self.view.apply(event)
            finally:
                log.close()
        open_ids = set(self.view.pending_interactions)
        items: dict[str, dict[str, Any]] = {}
        self.pending = set()
        for order, item in enumerate(self.view.timeline):
            key = str(item["id"])
            settled = self.settled.get(key)
            if settled is not None:
                items[key] = settled
                continue
            ask = item.get("interaction")
            is_open = isinstance(ask, dict) and str(ask.get("interaction_id")) in open_ids
            made = self.shown.get(key)
            if made is None or made[1] != is_open or made[0] != item:
                # The view changes its items in place: what was shown is kept as a copy.
                made = (copy.deepcopy(item), is_open, display_item(item, order, open_ids))
                self.shown[key] = made
            items[key] = made[2]
            if item.get("kind") == "message" and item.get("sender") != "user":
                self.settled[key] = made[2]
                del self.shown[key]
            if item.get("sender") == "user" and item.get("state") == "pending":
                self.pending.add(key)
        tasks = display_tasks(self.view.tasks)
        return ChatFold(pos=self.pos, items=items, tasks=tasks, mode=self.view.mode or "im")


def registry(apps: dict[str, Any]) -> dict[str, Any]:
    """The app registry as `lineup app list` reads it (`apps`, as the store's readers give
    it): the apps, the focus stack (the foreground instance last), the default app and the
    last operations with their outcome."""
    records = []
    for row in apps["records"]:
        record = {key: row.get(key) for key in _REGISTRY_FIELDS}
        record["enabled"] = bool(record["enabled"])
        manifest = row.get("manifest")
        if isinstance(manifest, str):
            try:
                manifest = json.loads(manifest)
            except ValueError:
                manifest = None
        title = manifest.get("title") if isinstance(manifest, dict) else None
        record["title"] = _shown(title or row.get("name") or row["app_scope"])
        records.append(record)
    live = {
        i["instance_id"]: i for i in apps["instances"] if i["state"] not in ("closed", "failed")
    }
    stack = [
        {"instance_id": _shown(key), "app_scope": _shown(live[key]["app_scope"])}
        for key in apps["settings"].get("focus_stack", [])
        if key in live
    ]
    # The registry keeps up to a hundred finished operations: only the last are shown (and
    # only they are read, `RegistryReader.apps(operations=...)`).
    recent = [op for op in apps["operations"] if op.get("kind") != "list"][-RECENT_OPERATIONS:]
    operations = [
        {
            "kind": _shown(op.get("kind", "")),
            "app_scope": _shown(op.get("app_scope") or ""),
            "state": _shown(op.get("state", "")),
            "code": _shown(op.get("code") or ""),
            "detail": visible(op.get("detail") or ""),
        }
        for op in recent
    ]
    return {
        "apps": records,
        "focus": stack,
        "default_app": apps["settings"].get("default_app"),
        "operations": operations,
    }


def link_state(record: dict[str, Any] | None) -> str:
    """The runtime's link to the AppServer as the transport last reported it (`record`, as
    the store's readers give it)."""
    return str(record["state"]) if record else "starting"
