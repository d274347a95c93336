"""The terminal chat: the chat app's timeline on screen, the user's lines into its input.

It reads what the chat app shows (its own log, `apps.chat.history`) and writes only as a UI
session of the host actor (`lineup.ui_session`): the host checks and audits each action
and hands it to the chat app as its durable input. It never talks to the AppServer, the
store or the agent, and it holds no operator power: it uses the runtime's UI socket only
(the runtime's state included), never the control socket. Lines typed:

    any text        send it as a message
    /1, /2, ...     pick that option of the waiting choice
    /yes, /no       answer the waiting confirmation
    /say TEXT       answer the waiting input request with TEXT
    /quit           leave (the runtime keeps running)
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType

from actors.kernel import ControlError, ui_request
from apps.chat import history, render

from .debug_cmd import runtime_lifecycle
from .ui_session import UiSession

POLL_S = 0.2  # how often the screen catches up with the chat app's log


def render_new(view: dict[str, Any], seen: dict[str, str]) -> list[RenderableType]:
    """Lines for timeline items not shown yet, or whose state changed since (`seen`: id →
    state, updated in place), then the task progress and what waits for an answer. Agent
    Markdown comes as a safe renderable (no raw HTML, links written out)."""
    lines: list[RenderableType] = []
    for item in view["timeline"]:
        key, state = item["id"], item.get("state", "")
        if seen.get(key) == state:
            continue
        first = key not in seen
        seen[key] = state
        who = "you" if item["sender"] == "user" else item["sender"]
        if first and item.get("format") == "markdown":
            lines.append(f"[{who}]  ({state})")
            lines.append(render(item.get("text", ""), "markdown"))
        elif first:
            lines.append(f"[{who}] {item.get('shown', item.get('text', ''))}  ({state})")
        else:
            lines.append(f"  ↳ {item.get('shown', '')[:40]} … now {state}")
    for task_id, task in view.get("tasks", {}).items():
        marker = f"task:{task_id}:{task.get('status')}:{task.get('percent')}"
        if marker not in seen:
            seen[marker] = ""
            lines.append(
                f"  [task] {task.get('label', task_id)}: {task.get('percent', 0)} %"
                f" ({task.get('status')})"
            )
    for waiting in view.get("pending_interactions", []):
        marker = f"ask:{waiting['interaction_id']}"
        if marker in seen:
            continue
        seen[marker] = ""
        lines.append(f"  ? {waiting.get('prompt', '')}")
        if waiting["kind"] == "choice":
            for n, option in enumerate(waiting.get("options", []), start=1):
                lines.append(f"     /{n} {option.get('label', option.get('id'))}")
        elif waiting["kind"] == "confirm":
            lines.append("     /yes or /no")
        else:
            lines.append("     /say TEXT")
    return lines


def parse_line(line: str, view: dict[str, Any], conversation: str) -> dict[str, Any] | str:
    """The `app.input` body for a typed line, or a message saying why there is none."""
    text = line.strip()
    if not text:
        return "nothing to send"
    if not text.startswith("/"):
        return {"kind": "send", "conversation_id": conversation, "text": text}
    waiting = view.get("pending_interactions", [])
    command, _, rest = text[1:].partition(" ")
    kinds = {"yes": "confirm", "no": "confirm", "say": "input"}
    wanted = "choice" if command.isdigit() else kinds.get(command)
    if wanted is None:
        return f"unknown command /{command}"
    request = next((w for w in reversed(waiting) if w["kind"] == wanted), None)
    if request is None:
        return f"no {wanted} is waiting for an answer"
    body: dict[str, Any] = {
        "kind": "answer",
        "conversation_id": conversation,
        "interaction_id": request["interaction_id"],
    }
    if wanted == "choice":
        options = request.get("options", [])
        if not 1 <= int(command) <= len(options):
            return f"pick 1 to {len(options)}"
        body["selected"] = [options[int(command) - 1]["id"]]
    elif wanted == "confirm":
        body["confirmed"] = command == "yes"
    else:
        body["text"] = rest
    return body


def attach(data_dir: Path, conversation: str, *, stop: threading.Event | None = None) -> int:
    """Run the terminal chat until /quit, end of input, or `stop`."""
    console = Console(highlight=False)
    stop = stop or threading.Event()
    seen: dict[str, str] = {}
    session = UiSession(data_dir)
    try:
        session.open()
        session.intent("foreground", app_scope="chat")
    except ControlError as exc:
        console.print(f"the runtime is not answering: {exc}", style="red")
        return 1
    console.print(f"chat {conversation} — type a message; /quit leaves", style="bold")

    def show() -> None:
        while not stop.is_set():
            view = history(data_dir, conversation)
            for line in render_new(view, seen):
                console.print(line, markup=False)
            state = _lifecycle(data_dir)
            if seen.get("lifecycle") != state:
                seen["lifecycle"] = state
                console.print(f"  (runtime {state})", style="dim")
            stop.wait(POLL_S)

    painter = threading.Thread(target=show, daemon=True)
    painter.start()
    try:
        for line in sys.stdin:
            if line.strip() == "/quit":
                break
            body = parse_line(line, history(data_dir, conversation), conversation)
            if isinstance(body, str):
                console.print(f"  ({body})", style="yellow")
                continue
            try:
                session.act(body)
            except ControlError as exc:
                console.print(f"  (not sent: {exc})", style="red")
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        painter.join(timeout=2)
        with contextlib.suppress(ControlError):
            session.intent("background", app_scope="chat", timeout=2)
            session.close(timeout=2)
    return 0


def _lifecycle(data_dir: Path) -> str:
    try:
        status = ui_request(data_dir, {"type": "status"}, timeout=2)
    except ControlError:
        return "stopped"
    return runtime_lifecycle(data_dir, status)


def wait_for_runtime(data_dir: Path, timeout: float) -> bool:
    """True once the runtime on `data_dir` answers on its UI socket."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ui_request(data_dir, {"type": "status"}, timeout=2)
        except ControlError:
            time.sleep(0.1)
        else:
            return True
    return False
