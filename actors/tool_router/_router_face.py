"""What the tool router's helpers see of it: the activation of an app for a call
(`_activation`), the deadline operations (`_operations`) and the artifact a result names
(`_artifacts`) work on the router's calls and steps through this face, so none of them
imports the actor, which imports them: the package has no import circle."""

from __future__ import annotations

import sqlite3
from typing import Any, Protocol

import trio

from actors.kernel import Message
from contracts import ContractError

from ._calls import Call
from ._inventory import AppView
from ._steps import Steps


class RouterFace(Protocol):
    apps: dict[str, AppView]
    calls: dict[str, Call]
    foreground: str | None
    db: sqlite3.Connection
    steps: Steps
    nursery: trio.Nursery

    def write(self, body: dict[str, Any]) -> None: ...

    async def cast(self, to: str, type: str, body: Any = None, *, id: str | None = None) -> str: ...

    async def call(
        self, to: str, type: str, body: Any = None, *, timeout: float, id: str | None = None
    ) -> Any: ...

    async def store(self, type_: str, body: Any, id: str | None = None) -> Any: ...

    async def show(self, call: Call, state: str, id: str | None = None, **facts: Any) -> None: ...

    async def dispatch(self, call: Call) -> None: ...

    async def finish(
        self,
        call: Call,
        *,
        output: dict[str, Any] | None = None,
        error: ContractError | None = None,
        from_app: bool = False,
        audit_detail: str | None = None,
    ) -> None: ...

    async def tell_app_ended(self, call: Call) -> None: ...

    async def refuse_report(self, msg: Message, call: Call | None, why: str) -> None: ...
