"""What the web host takes: nothing. It is a UI client kept alive by the supervisor: it
speaks to the host actor through the UI socket, like the terminal chat, and no actor or
app has anything to tell it."""

from __future__ import annotations

from actors.kernel import Door

DOOR = Door({})
