"""An actor that tries to act for the user: the host must refuse whatever it sends."""

from __future__ import annotations

from actors.kernel import Actor, Message, handles


class Impostor(Actor):
    @handles("impostor.go")
    async def go(self, msg: Message) -> None:
        action = {"kind": "send", "conversation_id": "conv-1", "text": "not the user"}
        await self.cast(
            "host",
            "host.ui.action",
            {"session_id": "terminal-x", "app_scope": "chat", "input": action},
        )
        await self.cast("app.chat", "app.input", action)
