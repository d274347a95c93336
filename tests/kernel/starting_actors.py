"""An app supervisor for the start tests: asks the supervisor to start a child
(`Actor.supervise`) and records the whole answer, its error's detail included, and how long
it took, as a line of JSON in `config["out"]`."""

from __future__ import annotations

import json
import time

import trio

from actors.kernel import Actor, CallFailed, Message, handles


class Starter(Actor):
    @handles("start")
    async def start(self, msg: Message) -> None:
        began = time.monotonic()
        try:
            result = await self.supervise("start", spec=msg.body)
            outcome = {"ok": True, "state": result["state"]}
        except CallFailed as exc:
            outcome = {"ok": False, "code": exc.code, "detail": exc.detail}
        outcome["seconds"] = time.monotonic() - began
        async with await trio.open_file(self.config["out"], "a") as out:
            await out.write(json.dumps(outcome) + "\n")
