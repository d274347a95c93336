"""Whiteboard: a board per conversation that the user and the agent draw on together.

Tools: `board.create` {title?}, `board.summary`, `board.export` {formats?}, `board.save`
{format} (a file in the user's downloads, once they allow it in the chat); the agent draws
with `lineup.app.state.patch` to the board's instance. Its surface (`ui/`) is the board the
user draws on. Its manifest is generated from the declarations in `_app`.
"""

from ._app import WhiteboardApp

__all__ = ["WhiteboardApp"]
