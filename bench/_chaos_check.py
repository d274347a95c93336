"""The chaos soak's checker: what each side recorded, compared after the run.

Pure functions over four independent records, read once the run is over:

- the agent's record (`peers.agent.Recorder`, JSONL): each message it sent (`sent`, or
  `unconfirmed` when the send was cut short and the AppServer's verdict is not known) with
  its id, conversation, type, text or call id and its order in the conversation; each
  message it received (`received`) with its id, type, seq, sender and call id;
- the user's record (`peers.agent.UiRecorder`, JSONL): each text typed into the chat
  (`typed` once the host took it, `unconfirmed` when the UI socket gave no answer);
- the chat timeline per conversation (`lineup chat history --conversation ID --json`);
- the AppServer's record per conversation (`lineup agent history --conversation ID
  --json`): what the runtime sent into the conversation, with ids and seqs.

What each count means:

- agent → user: a message the agent sent (`lineup.message`, `lineup.interaction.request`)
  is *delivered* when the chat timeline shows it: an item with its id, or with its text
  (every text the agent sends in a conversation is distinct, so a copy under a new id is
  found too). It is *lost* when accepted by the AppServer and not shown, *duplicated* once
  for every copy past the first, *reordered* when the timeline shows it after a message
  the agent sent later in the same conversation.
- user → agent: a typed text is *delivered* when the AppServer holds a user's
  `lineup.message` with that text in the conversation, or the agent received one (the
  runtime's promise ends at the AppServer's verdict; what the agent then reads is the
  AppServer's). Texts typed into one conversation are distinct, so the copies of one are
  the distinct message ids carrying it; *reordered* follows the AppServer's seq against
  the order typed.
- tool calls: a call is counted by the final outcomes (`lineup.tool.result` or
  `lineup.tool.error`, distinct message ids) that the agent received or the AppServer
  holds for its call id: `one_final`, `none` or `several`. Check after the calls have had
  time to end.
- an `unconfirmed` send (agent or user) counts as sent only when some side saw it (shown,
  held, or an event of its call): a send that never reached anyone cannot be lost.
- `in_doubt`: capability effects the runtime recorded as in doubt (`in_doubt_effects`):
  reported, never a failure, since the runtime says so honestly instead of guessing.

`check` returns the counts under the keys of `lineup bench chaos --json`, and `failed`:
the names of the counts that must be zero and are not (e.g. `agent_to_user.lost`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from actors.capability_gateway import DB_FILE as GATEWAY_FILE
from actors.capability_gateway import open_readonly as open_gateway_file

# What the agent sends that the chat shows as a timeline item.
SHOWN_TYPES: Final = frozenset({"lineup.message", "lineup.interaction.request"})
FINAL_TYPES: Final = frozenset({"lineup.tool.result", "lineup.tool.error"})
# The counts a sound run keeps at zero, per part.
MUST_BE_ZERO: Final = {
    "agent_to_user": ("lost", "duplicated", "reordered"),
    "user_to_agent": ("lost", "duplicated", "reordered"),
    "tool_calls": ("none", "several"),
}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file; a last line cut short by a crash mid-write is left out
    (its record was never complete, so nothing relied on it)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    records = []
    for number, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(f"{path}: line {number} is not JSON") from None
    return records


def in_doubt_effects(data_dir: Path) -> list[str]:
    """The request ids of the capability effects the runtime in `data_dir` recorded as in
    doubt (read-only, from the capability gateway's file; none when it has none)."""
    path = Path(data_dir) / GATEWAY_FILE
    if not path.exists():
        return []
    db = open_gateway_file(data_dir)
    try:
        rows = db.execute(
            "SELECT request_id FROM capability_requests WHERE status = 'in_doubt'"
            " ORDER BY created_ms, rowid"
        ).fetchall()
    finally:
        db.close()
    return [str(row[0]) for row in rows]


@dataclass
class _Sent:
    """One message a side sent, as the sender knows it."""

    order: int
    confirmed: bool
    copies: set[str] = field(default_factory=set)  # ids under which it was seen
    first_seen: float = float("inf")  # its first copy's position where it arrived


@dataclass
class _Direction:
    sent: int = 0
    delivered: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0

    def add(self, messages: Iterable[_Sent]) -> None:
        seen = []
        for message in messages:
            if not message.confirmed and not message.copies:
                continue
            self.sent += 1
            if message.copies:
                self.delivered += 1
                self.duplicated += len(message.copies) - 1
                seen.append(message)
            else:
                self.lost += 1
        self.reordered += _inversions(seen)

    def as_dict(self) -> dict[str, int]:
        return {
            "sent": self.sent,
            "delivered": self.delivered,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "reordered": self.reordered,
        }


def _inversions(seen: Sequence[_Sent]) -> int:
    """How many arrived after one the sender sent later."""
    latest = -1
    count = 0
    for message in sorted(seen, key=lambda m: m.first_seen):
        if message.order < latest:
            count += 1
        latest = max(latest, message.order)
    return count


def _sender_kind(sender: Any) -> str:
    if isinstance(sender, Mapping):
        return str(sender.get("kind", ""))
    return str(sender).partition(":")[0]


def _by_conversation(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    grouped: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        grouped[str(record["conversation"])].append(record)
    return grouped


def _sends(records: Sequence[Mapping[str, Any]], key: str) -> dict[str, _Sent]:
    """The sends of one conversation by `key` (message id, call id or text); a send
    recorded twice is one, confirmed if either record is."""
    sends: dict[str, _Sent] = {}
    for record in records:
        if record.get("event") not in ("sent", "typed", "unconfirmed"):
            continue
        confirmed = record["event"] != "unconfirmed"
        known = sends.get(str(record[key]))
        if known is None:
            sends[str(record[key])] = _Sent(int(record["order"]), confirmed)
        else:
            known.confirmed = known.confirmed or confirmed
    return sends


def _agent_to_user(
    agent: Sequence[Mapping[str, Any]], chat: Mapping[str, Mapping[str, Any]]
) -> _Direction:
    direction = _Direction()
    shown = [r for r in agent if r.get("type") in SHOWN_TYPES and r.get("event") != "received"]
    for conversation, records in _by_conversation(shown).items():
        sends = _sends(records, "message_id")
        by_text = {str(r.get("text")): str(r["message_id"]) for r in records}
        timeline = chat.get(conversation, {}).get("timeline", [])
        for position, item in enumerate(timeline):
            if _sender_kind(item.get("sender")) != "agent":
                continue
            message_id = str(item.get("id"))
            sent = sends.get(message_id) or sends.get(by_text.get(str(item.get("text")), ""))
            if sent is not None:
                sent.copies.add(message_id)
                sent.first_seen = min(sent.first_seen, position)
        direction.add(sends.values())
    return direction


def _held(
    agent: Sequence[Mapping[str, Any]], appserver: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """What the runtime sent, as the agent received it or the AppServer holds it: one row
    per message id, with its conversation, seq, type, sender kind, call id and text."""
    rows: dict[str, dict[str, Any]] = {}
    for conversation, history in appserver.items():
        for message in history.get("messages", []):
            rows.setdefault(str(message["message_id"]), {**message, "conversation": conversation})
    for record in agent:
        if record.get("event") == "received":
            rows.setdefault(str(record["message_id"]), dict(record))
    return list(rows.values())


def _user_to_agent(
    ui: Sequence[Mapping[str, Any]], held: Sequence[Mapping[str, Any]]
) -> _Direction:
    direction = _Direction()
    user_messages = [
        row
        for row in held
        if row.get("type") == "lineup.message" and _sender_kind(row.get("sender")) == "user"
    ]
    arrived = _by_conversation(user_messages)
    for conversation, records in _by_conversation(ui).items():
        sends = _sends(records, "text")
        for row in arrived.get(conversation, []):
            sent = sends.get(str(row.get("text")))
            if sent is not None:
                sent.copies.add(str(row["message_id"]))
                sent.first_seen = min(sent.first_seen, float(row["seq"]))
        direction.add(sends.values())
    return direction


def _tool_calls(
    agent: Sequence[Mapping[str, Any]], held: Sequence[Mapping[str, Any]]
) -> dict[str, int]:
    calls = _sends([r for r in agent if r.get("type") == "lineup.tool.invoke"], "call_id")
    finals: dict[str, set[str]] = defaultdict(set)
    heard: set[str] = set()
    for row in held:
        call_id = row.get("call_id")
        if call_id is None:
            continue
        heard.add(str(call_id))
        if row.get("type") in FINAL_TYPES:
            finals[str(call_id)].add(str(row["message_id"]))
    counts = {"sent": 0, "one_final": 0, "none": 0, "several": 0}
    for call_id, call in calls.items():
        if not call.confirmed and call_id not in heard:
            continue
        counts["sent"] += 1
        outcomes = len(finals.get(call_id, ()))
        counts["none" if outcomes == 0 else "one_final" if outcomes == 1 else "several"] += 1
    return counts


def check(
    *,
    agent: Sequence[Mapping[str, Any]],
    ui: Sequence[Mapping[str, Any]],
    chat: Mapping[str, Mapping[str, Any]],
    appserver: Mapping[str, Mapping[str, Any]],
    in_doubt: Sequence[str] = (),
) -> dict[str, Any]:
    """The counts of the run, from the agent's and the user's records, each conversation's
    chat view (`chat[conversation]`, as `lineup chat history --json` prints it) and the
    AppServer's record of it (`appserver[conversation]`, as `lineup agent history --json`
    prints it), and the in-doubt capability effects; `failed` names every count that must
    be zero and is not."""
    held = _held(agent, appserver)
    report: dict[str, Any] = {
        "agent_to_user": _agent_to_user(agent, chat).as_dict(),
        "user_to_agent": _user_to_agent(ui, held).as_dict(),
        "tool_calls": _tool_calls(agent, held),
        "in_doubt": len(in_doubt),
    }
    report["failed"] = [
        f"{part}.{count}"
        for part, counts in MUST_BE_ZERO.items()
        for count in counts
        if report[part][count]
    ]
    return report
