"""The runtime's messages as its doors declare them: for each actor (and for every app
process, whose door is the SDK's), each message type it takes, who may send it and the
JSON Schema of its body. Read from the declarations themselves (each package's `door.py`),
never restated, so what `lineup protocol messages` prints is what the runtime enforces.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import TypeAdapter

# How the doors name senders that are no single actor.
ANY_APP: Final = "app.*"
OPERATOR: Final = "debug"
_BODY_UNCHECKED: Final = "checked by its handler"


def _doors() -> list[tuple[str, str]]:
    """(recipient, the door's `module:ATTRIBUTE`) for the runtime's actors, the web host
    and the app processes."""
    from actors.runtime_children import APP_DOOR, RUNTIME_CHILDREN, WEB_HOST

    seen: dict[str, str] = {}
    for child in [*RUNTIME_CHILDREN, WEB_HOST]:
        if child.door and not child.name.startswith("app."):
            seen[child.name] = child.door
    seen[ANY_APP] = APP_DOOR
    return list(seen.items())


def body_schema(body: Any) -> dict[str, Any] | None:
    """The JSON Schema of a declared body type; None when the type declares no fields of
    its own (a body the handler reads itself)."""
    if body is None:
        return None
    schema: dict[str, Any] = TypeAdapter(body).json_schema()
    if schema.get("type") == "object" and "properties" not in schema and "$ref" not in schema:
        return None
    return schema


def catalogue() -> list[dict[str, Any]]:
    """Every message type of every door: `to`, `type`, `from` (the senders, the operator
    always among them), `body` (its JSON Schema, or None)."""
    from actors.kernel import load_door

    entries = []
    for recipient, path in _doors():
        door = load_door(path)
        for type_ in sorted(door.accepts):
            rule = door.accepts[type_]
            entries.append(
                {
                    "to": recipient,
                    "type": type_,
                    "from": sorted(rule.senders | {OPERATOR}),
                    "body": body_schema(rule.body),
                }
            )
    return entries


def fields_of(schema: dict[str, Any] | None) -> str:
    """A body's top-level fields in a line: `name` required, `name?` optional."""
    if schema is None:
        return _BODY_UNCHECKED
    definitions = schema.get("$defs", {})
    if "$ref" in schema:
        schema = definitions.get(schema["$ref"].rsplit("/", 1)[-1], schema)
    properties = schema.get("properties")
    if not properties:
        return "no fields" if schema.get("type") == "object" else str(schema.get("type", "any"))
    required = set(schema.get("required", ()))
    return ", ".join(name if name in required else f"{name}?" for name in properties)


MARKDOWN_HEAD: Final = """# Messages between the runtime's processes

Generated from the doors (each package's `door.py`) by `lineup protocol messages
--markdown`; a test holds this file to them. For every actor, and for every app process
(whose door is the SDK's): each message type it takes, who may send it (`debug`, the
operator, may send every type) and its body's top-level fields (`name?` optional; the
JSON Schemas: `lineup protocol messages --json`).
"""


def markdown(entries: list[dict[str, Any]]) -> str:
    """The catalogue as a Markdown page: one table per recipient, in the doors' order."""
    out = [MARKDOWN_HEAD.rstrip("\n")]
    recipients = list(dict.fromkeys(entry["to"] for entry in entries))
    for recipient in recipients:
        title = "each app process (`app.<scope>`)" if recipient == ANY_APP else f"`{recipient}`"
        out += ["", f"## {title}", "", "| type | from | body |", "|---|---|---|"]
        for entry in entries:
            if entry["to"] != recipient:
                continue
            senders = ", ".join("any app" if s == ANY_APP else s for s in entry["from"])
            out.append(f"| `{entry['type']}` | {senders} | {fields_of(entry['body'])} |")
    return "\n".join(out) + "\n"
