"""The terminal chat: the chat app's timeline on screen, the user's lines into its input.

It reads what the chat app shows (its own log, `apps.chat.history`) and writes only as a UI
session of the host actor (`lineup.ui_session`): the host checks and audits each action
and hands it to the chat app as its durable input. It never talks to the AppServer, the
store or the agent, and it holds no operator power: it uses the runtime's UI socket only
(the runtime's state included), never the control socket. `/help` lists what can be typed
(`COMMANDS`).

Every open question has a short id (`q1`, `q2`, ... in the order the agent asked them, so
an id stays the same while the question is open, across restarts too). With one question
open, `/2`, `/yes` or `/say TEXT` answer it; with several, the answer names the question
(`/q2 1`, `/q1 yes`, `/q3 some text`). A line that cannot be an answer (extra words, an
empty answer, the wrong kind) is refused with a hint and nothing is sent. `/stop` stops the
recording the runtime makes from the sound server, while one runs (the host passes it to
the capability gateway); else the agent's running tool call (naming it when several run):
the chat app passes the user's stop to the runtime, which ends the call
`cancelled_by_user`. An app's request for a capability
is a question too, asked by the runtime: `/1` ... answer it, `/dismiss` closes it without
deciding; one that asks for a file is answered with `/attach PATH`, the file read here and
sent as bytes with its name. A question the agent withdrew is no longer open: it takes no
answer and is not counted by `/1`, `/yes` or `/say`. An app's notification that neither the
desktop nor an open page showed is printed as a line, with the bell. `/mode audio` puts the
conversation in voice mode: the agent's messages are spoken, and played here where a sound
server is there (`_voice_lines`); `/mode im` goes back to text.

Everything the agent or an app wrote (messages, prompts, options, task labels, codes) is
untrusted: it is printed as text, never as console markup, with control and invisible
formatting characters shown visibly (`apps.chat.visible`).

`lineup run` on a terminal runs the runtime headless in a child process (its log in
`logs/runtime.log`) and this chat in the foreground (`lineup chat attach` is this chat
alone). It opens a UI session, says `foreground`, reads what the chat app shows and sends
each typed line as a `host.ui.action`; on leaving it says `background` and closes the
session. A card that asks for a file says what the app takes; `/attach PATH` (`~` is the
home folder) reads the file here and says in one sentence what is wrong with a folder, a
missing or unreadable file, or one too large or of a type the app does not take
(`contracts.chosen_type`), and sends its bytes and name, never its path
(`host.file.chosen`). `lineup run` starts the runtime with `user_downloads`: a file an app
saves while no page shows its conversation goes into the user's downloads folder
(`XDG_DOWNLOAD_DIR` from the environment or `~/.config/user-dirs.dirs`, else
`~/Downloads`), not the data dir's.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rich.console import Console, RenderableType
from rich.control import Control
from rich.segment import ControlType
from rich.text import Text

from actors.kernel import ControlError, ui_request
from apps.chat import (
    artifact_label,
    deadline_words,
    history,
    local_times,
    refusal_sentence,
    render,
    visible,
)
from contracts import size_words

from ._capability_lines import (
    RECORDING,
    Attach,
    attach_request,
    chooser_line,
    dismiss,
    notification_lines,
    read_attachment,
    recording_line,
    recording_now,
)
from ._common import ENDED_TASK, STATE_STYLES, STATE_WORDS
from ._voice_lines import SpeechPlayer, mode_line, mode_request, player_command
from .debug_cmd import runtime_lifecycle
from .ui_session import UiSession

POLL_S = 0.2  # how often the screen catches up with the chat app's log

COMMANDS: Final[tuple[tuple[str, str], ...]] = (
    ("any text", "send it as a message"),
    ("/1, /2, ...", "pick that option of the open question"),
    ("/yes, /no", "answer the open yes/no question"),
    ("/say TEXT", "answer the open question that asks for text"),
    ("/q2 ANSWER", "answer question q2 when several are open: /q2 1, /q2 yes, /q2 TEXT"),
    ("/questions", "list the open questions again"),
    ("/dismiss [QN]", "close an app's permission request without deciding"),
    ("/attach [QN] PATH", "send the file an app asks for (~ is your home folder)"),
    ("/stop [CALL]", "stop the recording under way, else the agent's running tool call"),
    ("/mode [audio|im]", "voice mode (the agent's messages spoken) or text mode; alone: which"),
    ("/help", "this list"),
)
# What /quit does depends on who started the runtime: `lineup run` stops it with the chat,
# `lineup chat attach` leaves it running.
STOP_RECORDING: Final = "stop_recording"  # the /stop of a recording: the host's, not the chat's
QUIT_LEAVES: Final = ("/quit", "leave the chat (the runtime keeps running)")
QUIT_STOPS: Final = ("/quit", "stop the runtime and leave (Ctrl-C too)")
_WORDS: Final = (
    "help", "questions", "quit", "yes", "no", "say", "stop", "dismiss", "attach", "mode",
)  # fmt: skip


@dataclass(frozen=True)
class TaskLine:
    """A task's progress line: shown in place of its previous line on a terminal;
    elsewhere printed only when the task's status changes (`status_changed`)."""

    task_id: str
    text: Text
    status_changed: bool


def help_text(*, quit_stops: bool = False) -> Text:
    commands = (*COMMANDS, QUIT_STOPS if quit_stops else QUIT_LEAVES)
    width = max(len(name) for name, _ in commands)
    return Text("\n".join(f"  {name.ljust(width)}  {what}" for name, what in commands))


def question_ids(view: dict[str, Any]) -> dict[str, str]:
    """interaction id → its short id (`q1`, ...), numbered in the order they were asked."""
    ids: dict[str, str] = {}
    for item in view.get("timeline", []):
        interaction = item.get("interaction")
        if item.get("kind") == "interaction" and isinstance(interaction, dict):
            ids.setdefault(str(interaction.get("interaction_id")), f"q{len(ids) + 1}")
    for waiting in view.get("pending_interactions", []):
        ids.setdefault(str(waiting["interaction_id"]), f"q{len(ids) + 1}")
    return ids


def _hint(request: dict[str, Any], prefix: str = "/") -> str:
    if request["kind"] == "choice":
        count = len(request.get("options", []))
        return f"{prefix}1" if count == 1 else f"{prefix}1 to {prefix}{count}"
    if request["kind"] == "confirm":
        return f"{prefix}yes or {prefix}no"
    return f"{prefix}say TEXT" if prefix == "/" else f"{prefix}TEXT"


def question_lines(view: dict[str, Any], request: dict[str, Any]) -> list[RenderableType]:
    """An open question as shown: its id and prompt, then how to answer it."""
    ids = question_ids(view)
    short = ids.get(str(request["interaction_id"]), "q?")
    several = len(view.get("pending_interactions", [])) > 1
    lines: list[RenderableType] = [
        Text.assemble("  ? ", (short, "bold"), " ", visible(request.get("prompt", "")))
    ]
    prefix = f"/{short} " if several else "/"
    chooser = chooser_line(request, f"{short} " if several else "")
    if chooser is not None:
        lines.append(chooser)
    if request["kind"] == "choice":
        for n, option in enumerate(request.get("options", []), start=1):
            label = visible(option.get("label", option.get("id")), newlines=False)
            lines.append(Text(f"     {prefix}{n} {label}"))
    elif request["kind"] == "confirm":
        yes, no = (
            f" ({visible(request[key], newlines=False)})" if request.get(key) else ""
            for key in ("confirm_label", "cancel_label")
        )
        lines.append(Text(f"     {prefix}yes{yes} or {prefix}no{no}"))
    else:
        lines.append(Text(f"     {prefix}say TEXT" if not several else f"     {prefix}TEXT"))
    return lines


def open_questions(view: dict[str, Any]) -> list[RenderableType]:
    waiting = view.get("pending_interactions", [])
    if not waiting:
        return [Text("  (no question is waiting for an answer)")]
    lines: list[RenderableType] = []
    for request in waiting:
        lines.extend(question_lines(view, request))
    return lines


def _state(state: str) -> Text:
    """A state as shown, coloured (colours only on a terminal, and not under NO_COLOR)."""
    words = visible(STATE_WORDS.get(state, state), newlines=False)
    return Text(words, style=STATE_STYLES.get(state, ""))


def _sender(item: dict[str, Any]) -> str:
    return "you" if item["sender"] == "user" else visible(item["sender"], newlines=False)


def _task_line(task_id: str, task: dict[str, Any]) -> Text:
    title = visible(task.get("title") or task.get("label") or task_id, newlines=False)
    label = visible(task.get("label", ""), newlines=False)
    line = Text.assemble("  [task] ", (title, "bold"))
    if label and label != title:
        line.append(f" — {label}")
    status = str(task.get("status", "?"))
    if task.get("percent") is not None and status not in ENDED_TASK:
        line.append(f": {task['percent']} %")
    line.append(f" ({visible(STATE_WORDS.get(status, status), newlines=False)})")
    return line


def render_new(view: dict[str, Any], seen: dict[str, str]) -> list[RenderableType | TaskLine]:
    """Lines for timeline items not shown yet, or whose state changed since (`seen`: id →
    state, updated in place), each with its timer's line when that changed, then the tasks
    that moved and the questions newly waiting for an answer. Agent Markdown comes as a
    safe renderable (no raw HTML, links written out, UTC timestamps on the local clock);
    everything else as `Text`, so no markup in it is interpreted."""
    lines: list[RenderableType | TaskLine] = []
    ids = question_ids(view)
    for item in view["timeline"]:
        lines.extend(_item_lines(item, seen, ids))
        lines.extend(_deadline_line(item, seen))
    for task_id, task in view.get("tasks", {}).items():
        text = _task_line(task_id, task)
        marker = f"task:{task_id}"
        if seen.get(marker) == text.plain:
            continue
        status_changed = seen.get(f"{marker}:status") != task.get("status")
        seen[marker] = text.plain
        seen[f"{marker}:status"] = str(task.get("status"))
        lines.append(TaskLine(task_id, text, status_changed))
    for waiting in view.get("pending_interactions", []):
        marker = f"ask:{waiting['interaction_id']}"
        if marker in seen:
            continue
        seen[marker] = ""
        lines.extend(question_lines(view, waiting))
    return lines


def _item_lines(item: dict[str, Any], seen: dict[str, str], ids: dict[str, str]) -> list[Any]:
    """An item's lines when it is new or its state changed; none otherwise."""
    key, state = item["id"], item.get("state", "")
    if seen.get(key) == state:
        return []
    first = key not in seen
    seen[key] = state
    who = _sender(item)
    lines: list[RenderableType] = []
    if first and item.get("format") == "markdown":
        lines.append(Text.assemble(f"[{who}]  (", _state(state), ")"))
        lines.append(render(local_times(item.get("text", "")), "markdown"))
    elif first and item.get("kind") == "interaction":
        short = ids.get(str(item.get("interaction", {}).get("interaction_id")), "q?")
        shown = visible(item.get("text", ""))
        lines.append(Text.assemble(f"[{who}] asks {short}: {shown}  (", _state(state), ")"))
    elif first:
        shown = item.get("shown", visible(item.get("text", "")))
        lines.append(Text.assemble(f"[{who}] {shown}  (", _state(state), ")"))
    else:
        shown = visible(item.get("shown", item.get("text", "")), newlines=False)[:40]
        code = f" ({visible(item['code'], newlines=False)})" if item.get("code") else ""
        lines.append(Text.assemble(f"  ↳ {shown} … now ", _state(state), code))
    if item.get("artifact") and state == "succeeded":
        lines.append(Text(f"  ↳ {artifact_label(item['artifact'])}"))
        # How to save it from here; the web page has a Save button under the call.
        artifact_id = visible(item["artifact"].get("artifact_id", ""), newlines=False)
        lines.append(Text(f"    save it: lineup artifacts save {artifact_id}"))
    if state == RECORDING and item.get("sender") == "runtime:capabilities":
        lines.append(recording_line())
    refusal = refusal_sentence(item.get("code")) if state == "refused" else None
    if refusal:
        lines.append(Text(f"  ↳ {refusal}"))
    return lines


def _deadline_line(item: dict[str, Any], seen: dict[str, str]) -> list[RenderableType]:
    """The line of a timer the runtime keeps for a tool call, each time it changes (starts,
    pauses, runs again, ends), in local time and as long as it is left at printing."""
    deadline = item.get("deadline")
    words = deadline_words(deadline)
    marker = f"deadline:{item['id']}"
    told = repr(sorted(deadline.items())) if isinstance(deadline, dict) else ""
    if not words or seen.get(marker) == told:
        return []
    seen[marker] = told
    shown = visible(item.get("shown", item.get("text", "")), newlines=False)[:40]
    return [Text(f"  ↳ {shown}: {words}")]


def catch_up(
    view: dict[str, Any], lifecycle: str, seen: dict[str, str]
) -> list[RenderableType | TaskLine]:
    """What the screen prints on one look: a change of the runtime's state, then what is
    new in the view. When the runtime is back online after a restart, the open questions
    are listed again, with their ids."""
    lines: list[RenderableType | TaskLine] = []
    previous = seen.get("lifecycle")
    if previous != lifecycle:
        seen["lifecycle"] = lifecycle
        if previous is not None:
            lines.append(Text(f"  (runtime {visible(lifecycle, newlines=False)})", style="dim"))
        if previous is not None and lifecycle == "online":
            for marker in [m for m in seen if m.startswith("ask:")]:
                del seen[marker]
    return lines + mode_line(view, seen) + render_new(view, seen)


def parse_line(
    line: str, view: dict[str, Any], conversation: str, *, quit_stops: bool = False
) -> dict[str, Any] | Attach | str:
    """The `app.input` body for a typed line, the file to attach for a request, or what to
    tell the user instead (a hint, the open questions, the help); nothing is sent then.
    `quit_stops`: the chat's /quit stops the runtime (it was started with the chat), which
    the help says."""
    text = line.strip()
    if not text:
        return "nothing to send: type a message, or /help"
    if not text.startswith("/"):
        return {"kind": "send", "conversation_id": conversation, "text": text}
    command, _, rest = text[1:].partition(" ")
    command, rest = command.lower(), rest.strip()
    if command == "help":
        return help_text(quit_stops=quit_stops).plain
    if command == "questions":
        return "\n".join(_plain(line) for line in open_questions(view))
    if command == "stop" and not rest and (recording := recording_now(view)) is not None:
        return {"kind": STOP_RECORDING, "request_id": recording}
    if command == "stop":
        return _stop(view, conversation, rest)
    if command == "dismiss":
        return dismiss(view, conversation, rest.lower(), question_ids(view))
    if command == "attach":
        return attach_request(view, rest, question_ids(view))
    if command == "mode":
        return mode_request(view, conversation, rest)
    waiting: list[dict[str, Any]] = view.get("pending_interactions", [])
    ids = question_ids(view)
    if re.fullmatch(r"q\d+", command):
        request = next((w for w in waiting if ids.get(str(w["interaction_id"])) == command), None)
        if request is None:
            if _withdrawn(view, ids, command):
                return f"{command} is no longer asked: the agent withdrew it"
            if not waiting:
                return f"{command} is not open: no question is waiting for an answer"
            return f"{command} is not open; open now: " + ", ".join(
                ids[str(w["interaction_id"])] for w in waiting
            )
        if not rest:
            return f"give the answer after /{command}: {_hint(request, f'/{command} ')}"
        return _answer(request, rest, conversation, f"/{command} ", command)
    if not (command.isdigit() or command in ("yes", "no", "say")):
        close = difflib.get_close_matches(command, _WORDS, n=1)
        suggestion = f" (did you mean /{close[0]}?)" if close else ""
        return f"unknown command /{command}{suggestion}; /help lists the commands"
    if not waiting:
        return "no question is waiting for an answer"
    if len(waiting) > 1:
        taking = [w for w in waiting if _takes(w, command)]
        if len(taking) != 1:
            return _which(view, taking, command)
        waiting = taking
    request = waiting[0]
    if command == "say":
        if request["kind"] != "input":
            return f"{ids[str(request['interaction_id'])]} is answered with {_hint(request)}"
        if not rest:
            return "type the answer after /say, e.g. /say blue"
        return _answer(request, rest, conversation, "/", ids[str(request["interaction_id"])])
    if rest:
        return f"/{command} takes nothing after it; to send a message, type it without /"
    if request["kind"] == "input":
        return f"{ids[str(request['interaction_id'])]} is answered with {_hint(request)}"
    return _answer(request, command, conversation, "/", ids[str(request["interaction_id"])])


def _withdrawn(view: dict[str, Any], ids: dict[str, str], short: str) -> bool:
    """Whether the question shown as `short` (`q2`) is one the agent withdrew."""
    return any(
        item.get("kind") == "interaction"
        and item.get("state") == "withdrawn"
        and ids.get(str(item["interaction"].get("interaction_id"))) == short
        for item in view.get("timeline", [])
    )


def _takes(request: dict[str, Any], command: str) -> bool:
    """Whether an open question can be answered with `/command` (`/2`, `/yes`, `/say`)."""
    kind = str(request["kind"])
    if command.isdigit():
        return kind == "choice" and 1 <= int(command) <= len(request.get("options", []))
    if command in ("yes", "no"):
        return kind == "confirm"
    return kind == "input"


def _which(view: dict[str, Any], taking: list[dict[str, Any]], command: str) -> str:
    """What to say when `/command` fits none or several of the open questions: which, and
    how to name one."""
    ids = question_ids(view)
    listing = "\n".join(_plain(line) for line in open_questions(view))
    if not taking:
        return f"none of the open questions takes /{command}; answer one as shown:\n{listing}"
    short = ids[str(taking[0]["interaction_id"])]
    example = f"/{short} TEXT" if command == "say" else f"/{short} {command}"
    return f"{len(taking)} open questions take /{command}; say which, e.g. {example}\n{listing}"


def _stop(view: dict[str, Any], conversation: str, named: str) -> dict[str, Any] | str:
    """The user's stop of the agent's running tool call: the one running, or the one named."""
    running = [
        str(item["id"])
        for item in view.get("timeline", [])
        if item.get("kind") == "tool" and item.get("state") not in ("succeeded", "failed")
    ]
    listing = ", ".join(visible(call_id, newlines=False) for call_id in running)
    if not running:
        return "no tool call is running"
    if named and named not in running:
        return f"{visible(named, newlines=False)} is not a running tool call; running: {listing}"
    if not named and len(running) > 1:
        return f"{len(running)} tool calls are running; say which: /stop CALL, one of {listing}"
    return {"kind": "stop", "conversation_id": conversation, "call_id": named or running[0]}


def _plain(line: RenderableType) -> str:
    return line.plain if isinstance(line, Text) else str(line)


def _answer(
    request: dict[str, Any], answer: str, conversation: str, prefix: str, short: str
) -> dict[str, Any] | str:
    body: dict[str, Any] = {
        "kind": "answer",
        "conversation_id": conversation,
        "interaction_id": request["interaction_id"],
    }
    how = f"{short} is answered with {_hint(request, prefix)}"
    if request["kind"] == "choice":
        options = request.get("options", [])
        if not answer.isdigit():
            return how
        if not 1 <= int(answer) <= len(options):
            return f"pick {_hint(request, prefix)}"
        body["selected"] = [options[int(answer) - 1]["id"]]
    elif request["kind"] == "confirm":
        if answer.lower() not in ("yes", "no"):
            return how
        body["confirmed"] = answer.lower() == "yes"
    else:
        if prefix != "/" and answer.lower().startswith("say "):
            answer = answer[4:].strip()
        body["text"] = answer
    return body


def _send(screen: Any, session: UiSession, body: dict[str, Any]) -> None:
    """What the user typed, to the runtime: the stop of a recording to the host, any other
    input to the chat app; a runtime that does not take it is said in one line."""
    try:
        if body["kind"] == STOP_RECORDING:
            session.stop_recording(str(body["request_id"]))
        else:
            session.act(body)
    except ControlError as exc:
        screen.print(
            Text(
                f"  (not sent: the runtime did not take it ({visible(exc)}); is it still running?)",
                style="red",
            )
        )


def attach(
    data_dir: Path,
    conversation: str,
    *,
    stop: threading.Event | None = None,
    quit_stops: bool = False,
) -> int:
    """Run the terminal chat until /quit, end of input, or `stop`. `quit_stops`: the
    runtime was started with this chat and stops when it ends (the help and the greeting
    say so)."""
    console = Console(highlight=False, emoji=False)
    stop = stop or threading.Event()
    seen: dict[str, str] = {}
    session = UiSession(data_dir)
    try:
        session.open()
        session.intent("foreground", app_scope="chat")
    except ControlError:
        console.print(
            f"No runtime is answering on {data_dir}: start it with `lineup run`, or point"
            " --data-dir (or LINEUP_DATA_DIR) at the folder of a running one.",
            style="red",
            markup=False,
        )
        return 1
    console.print(
        f"chat {visible(conversation, newlines=False)} — type a message; /help lists the"
        f" commands; /quit {'stops the runtime' if quit_stops else 'leaves'}",
        style="bold",
        markup=False,
    )
    screen = _Screen(console)

    _, noticed = notification_lines(data_dir, 0)  # what was shown before is not news
    # The agent's speech in voice mode, played where there is a sound server.
    speech = SpeechPlayer(data_dir, player_command(os.environ))

    def show() -> None:
        nonlocal noticed
        while not stop.is_set():
            view = history(data_dir, conversation)
            for line in catch_up(view, _lifecycle(data_dir), seen):
                screen.print(line)
            speech.catch_up(view)
            notes, noticed = notification_lines(data_dir, noticed)
            for note in notes:  # an app's notification: a line and the bell
                screen.print(note)
                screen.console.bell()
            stop.wait(POLL_S)

    painter = threading.Thread(target=show, daemon=True)
    painter.start()
    try:
        for line in sys.stdin:
            screen.typed()
            if line.strip().lower() == "/quit":
                break
            view = history(data_dir, conversation)
            body = parse_line(line, view, conversation, quit_stops=quit_stops)
            if isinstance(body, Attach):
                _send_file(screen, session, body)
                continue
            if isinstance(body, str):
                screen.print(Text(body, style="yellow"))
                continue
            _send(screen, session, body)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        painter.join(timeout=2)
        speech.close()
        with contextlib.suppress(ControlError):
            session.intent("background", app_scope="chat", timeout=2)
            session.close(timeout=2)
    return 0


def _send_file(screen: _Screen, session: UiSession, attaching: Attach) -> None:
    """Read the file `/attach` names and send it for its request, or say what is wrong."""
    chosen = read_attachment(attaching)
    if isinstance(chosen, str):
        screen.print(Text(chosen, style="yellow"))
        return
    try:
        session.choose_file(chosen.body())
    except ControlError as exc:
        screen.print(
            Text(f"  (not sent: the runtime did not take it ({visible(exc)}); is it running?)")
        )
        return
    size = size_words(len(chosen.data))
    name = visible(chosen.name, newlines=False)
    screen.print(Text(f"  ↳ sent “{name}” ({chosen.media_type}, {size})"))


class _Screen:
    """Prints for the painter and the input loop. On a terminal a task's progress line is
    rewritten in place while it is the last line on screen (nothing typed or printed
    since); elsewhere a task's line is printed only when its status changes."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.lock = threading.Lock()
        self.last_task: str | None = None

    def typed(self) -> None:
        with self.lock:
            self.last_task = None

    def print(self, line: RenderableType | TaskLine) -> None:
        with self.lock:
            if not isinstance(line, TaskLine):
                self.console.print(line, markup=False)
                self.last_task = None
                return
            if not self.console.is_terminal:
                if line.status_changed:
                    self.console.print(line.text, markup=False)
                return
            if self.last_task == line.task_id:
                self.console.control(
                    Control((ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2))
                )
            self.console.print(line.text, markup=False, no_wrap=True, overflow="ellipsis")
            self.last_task = line.task_id


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
