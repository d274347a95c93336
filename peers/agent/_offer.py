"""What the demo agent says it can do: read from the conversation's live inventory (each
tool's title and the first sentence of its description, by app), with three things to try
among those its tools make possible. Every word of a tool's title and description is the
app's: it is quoted as text, never as Markdown."""

from __future__ import annotations

from typing import Final

from contracts import Inventory

# What to say to use a tool, in the order they are suggested.
TRY: Final = (
    ("board.create", "draw a house"),
    ("pomodoro.start", "focus 25"),
    ("game.start_round", "let's play"),
    ("board.summary", "what's on the board"),
    ("board.export", "export the board"),
    ("voice.request_recording", "record me"),
)
ASK_ME: Final = "ask me something"
_MARKDOWN: Final = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>#|~"})


def _first_sentence(text: str, most: int = 140) -> str:
    """The first sentence of a tool's description (written for agents: the rest is detail
    a person asking what the agent can do does not need), at most `most` characters."""
    said = " ".join(text.split())
    end = said.find(". ")
    first = said if end < 0 else said[: end + 1]
    return first if len(first) <= most else first[: most - 1].rstrip() + "…"


def _plain(text: str) -> str:
    """`text` as Markdown that shows it as written (an app's words are not markup)."""
    return " ".join(text.split()).translate(_MARKDOWN)


def what_i_can_do(inventory: Inventory | None, *, understood: bool) -> str:
    """The answer to "what can you do" (or to a message the agent did not understand)."""
    opening = (
        "Here is what I can do here."
        if understood
        else ("I don't know how to help with that yet. Here is what I can do here.")
    )
    tools = inventory.tools if inventory is not None else []
    if not tools:
        return (
            f"{opening} No app gives me tools in this conversation yet: install and enable"
            " one (the whiteboard, the pomodoro timer, draw-and-guess or voice come with LineUp;"
            " see `lineup app install`). Meanwhile, say `" + ASK_ME + "` and I will show you"
            " how I ask you questions."
        )
    assert inventory is not None
    titles = {app.app_scope: app.title or app.app_scope for app in inventory.apps}
    listed = []
    for tool in sorted(tools, key=lambda t: (t.app_scope, t.method)):
        app = _plain(titles.get(tool.app_scope, tool.app_scope))
        what = f"- **{_plain(tool.title or tool.method)}** ({app})"
        about = _first_sentence(tool.description)
        listed.append(f"{what}: {_plain(about)}" if about else what)
    offered = {tool.method for tool in tools}
    tries = [f"`{said}`" for method, said in TRY if method in offered][:3]
    parts = [opening, "\n".join(listed)]
    if tries:
        parts.append(f"Things to try: {', '.join(tries)}.")
    parts.append(f"Say `{ASK_ME}` to see how I ask you questions.")
    return "\n\n".join(parts)
