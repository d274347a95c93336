"""`lineup debug why ID`: one message followed through every record the runtime keeps.

Everything is read from files, read-only, so it works with the runtime up or stopped (a
running supervisor writes an ack that came alone with its next batch, or half a second
later: a hop just handled may still read in flight): the
mailbox file (each hop between actors, its attempts and state, a call's reply), the
store's `runtime.db` (a message from the AppServer: its seq and conversation; an outbox
item: its state, seq and refusal code; the audit's verdicts), the tool router's
`tool_router.db` (a tool call by its id or its envelope's), each app's `app.db` (what the
app applied, its ack or the AppServer's verdict on its action) and the logs.

It finds the mailbox rows with that id, those its handler emitted (their ids derive from
it) and those whose frame carries it (an envelope's id inside a body), each with sender,
recipient, state, attempts, failures, dead-letter error and a call's reply; the tool call
the id is, or whose envelope it is (the tool router's envelopes for the agent are the
`transport.submit` messages that carry it); and the lines of `logs/*.log` that name it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

# Most log lines shown: a message that fails in a loop can fill a log.
LOG_LINES = 40


def _read(path: Path, query: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Rows as maps, from a SQLite file opened read-only; [] when it or the table is absent."""
    if not path.exists():
        return []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return []
    try:
        cursor = db.execute(query, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    except sqlite3.Error:
        return []
    finally:
        db.close()


def _store(data_dir: Path, message_id: str) -> dict[str, Any]:
    db = data_dir / "runtime.db"
    like = f'%"id":"{message_id}"%'
    record: dict[str, Any] = {}
    messages = _read(
        db,
        "SELECT id, seq, conversation_id, app_scope, type, sender_kind, sender_id, received_ms"
        " FROM messages WHERE id = ?",
        (message_id,),
    )
    if messages:
        record["message"] = messages[0]
    outbox = _read(
        db,
        "SELECT local_order, key, origin, conversation_id, state, seq, code, detail,"
        " created_ms, settled_ms FROM outbox WHERE key = ? OR envelope LIKE ?",
        (message_id, like),
    )
    if outbox:
        record["outbox"] = outbox[0]
    audit = _read(
        db,
        "SELECT at_ms, code, detail, message_id, seq, source FROM audit"
        " WHERE message_id = ? ORDER BY pos",
        (message_id,),
    )
    if audit:
        record["audit"] = audit
    return record


def _apps(data_dir: Path, message_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    apps = data_dir / "apps"
    if not apps.is_dir():
        return found
    for app_db in sorted(apps.glob("*/app.db")):
        for row in _read(
            app_db,
            "SELECT id, kind, conversation_id, type, state, seq, code, at_ns FROM events"
            " WHERE id = ? ORDER BY pos",
            (message_id,),
        ):
            found.append({"app": app_db.parent.name, **row})
    return found


def _logs(data_dir: Path, message_id: str) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    logs = data_dir / "logs"
    if not logs.is_dir():
        return lines
    for log in sorted(logs.glob("*.log")):
        try:
            with open(log, errors="replace") as handle:
                for number, line in enumerate(handle, 1):
                    if message_id in line:
                        lines.append(
                            {"file": f"logs/{log.name}", "line": number, "text": line.rstrip("\n")}
                        )
        except OSError:
            continue
    return lines[-LOG_LINES:]


def follow(data_dir: Path, message_id: str) -> dict[str, Any]:
    """Everything the runtime's files say about `message_id` (see the module's docstring)."""
    from actors.kernel import message_path
    from actors.tool_router import read_tool_calls_about

    return {
        "id": message_id,
        "mailbox": message_path(data_dir / "mailbox.db", message_id),
        "store": _store(data_dir, message_id),
        "tool_calls": read_tool_calls_about(data_dir, message_id),
        "apps": _apps(data_dir, message_id),
        "logs": _logs(data_dir, message_id),
    }


def found_anything(path: dict[str, Any]) -> bool:
    return any(path.get(key) for key in ("mailbox", "store", "tool_calls", "apps", "logs"))


def render(path: dict[str, Any], when: Any, duration: Any) -> list[str]:
    """The path as lines of text; `when(ms)` prints a local time."""
    out: list[str] = [f"message {path['id']}"]
    store = path["store"]
    message = store.get("message")
    if message:
        sender = f"{message['sender_kind']}:{message['sender_id']}"
        out.append(
            f"  from the AppServer: seq {message['seq']}, {message['type']} from {sender}"
            f" in conversation {message['conversation_id']} for {message['app_scope']},"
            f" received {when(message['received_ms'])}"
        )
    outbox = store.get("outbox")
    if outbox:
        verdict = outbox["state"]
        if outbox.get("seq") is not None:
            verdict += f" as seq {outbox['seq']}"
        if outbox.get("code"):
            verdict += f" ({outbox['code']}: {outbox.get('detail') or ''})"
        origin = f"from {outbox['origin']}" if outbox.get("origin") else "from the runtime"
        out.append(
            f"  outbox item {outbox['local_order']} {origin} in conversation"
            f" {outbox['conversation_id']}: {verdict}, queued {when(outbox['created_ms'])}"
        )
    for entry in store.get("audit", []):
        seq = f" seq {entry['seq']}" if entry.get("seq") is not None else ""
        out.append(
            f"  audit {when(entry['at_ms'])} by {entry['source']}:{seq} {entry['code']}"
            f" {entry.get('detail') or ''}".rstrip()
        )
    for call in path.get("tool_calls", []):
        code = f" ({call['code']}: {call.get('detail') or ''})" if call.get("code") else ""
        out.append(f"  tool call {call['call_id']} {call['method']}: {call['state']}{code}")
    hops = path["mailbox"]
    if hops:
        out.append("  through the mailboxes:")
    for hop in hops:
        role = {"this": "", "emitted": " (emitted by its handler)", "carries": ""}[hop["relation"]]
        attempts = f", {hop['attempts']} attempt{'s' if hop['attempts'] != 1 else ''}"
        failures = f", {hop['failures']} failed" if hop["failures"] else ""
        done = f", done after {duration(hop)}" if hop.get("done_ms") else ""
        out.append(
            f"    {when(hop['created_ms'])} {hop['from']} -> {hop['to']} {hop['type']}"
            f" [{hop['state']}{attempts}{failures}{done}]{role} id {hop['id']}"
        )
        if hop.get("error"):
            out.append(f"      error: {hop['error']}")
        reply = hop.get("reply")
        if reply:
            error = reply.get("error")
            out.append(
                f"      answered: {error.get('code')}: {error.get('detail', '')}"
                if isinstance(error, dict)
                else "      answered: ok"
            )
    for event in path["apps"]:
        seq = f" seq {event['seq']}" if event.get("seq") is not None else ""
        code = f" ({event['code']})" if event.get("code") else ""
        at = when(event["at_ns"] // 1_000_000) if event.get("at_ns") else ""
        out.append(
            f"  app {event['app']}: {event['kind']} {event['type']} {event['state']}{seq}"
            f"{code} {at}".rstrip()
        )
    logs = path["logs"]
    if logs:
        out.append("  in the logs:")
    for line in logs:
        out.append(f"    {line['file']}:{line['line']}: {line['text']}")
    if not found_anything(path):
        out.append("  nothing in the mailboxes, the store, the apps or the logs has this id")
    return out


def as_json(path: dict[str, Any]) -> str:
    return json.dumps(path, indent=2, default=str)
