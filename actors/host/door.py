"""What the host takes, and from whom: only a UI session (`ui`, stored by the supervisor's
UI socket for a terminal or web window) and the operator. The host checks each body
itself, because every refusal on the user's side is audited with its code."""

from __future__ import annotations

from actors.kernel import Door, accept

DOOR = Door(
    {
        "host.session.open": accept("ui"),
        "host.session.close": accept("ui"),
        "host.ui.action": accept("ui"),
        "host.intent": accept("ui"),
        # A file the user chose in a terminal for an app's file.open request.
        "host.file.chosen": accept("ui"),
        # The terminal's stop of a recording the gateway makes from the sound server.
        "host.recording.stop": accept("ui"),
    }
)
