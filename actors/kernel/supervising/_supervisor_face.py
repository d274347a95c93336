"""What the supervisor's sockets and its delegation see of it: the operator's control
socket (`_control`), the UI sessions' socket (`_ui_socket`) and the actors' own requests
to start and stop children (`_delegation`) are served by the supervisor and read its
state through this face, so none of them imports the supervisor itself (which imports
them): the kernel has no import circle."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any, Protocol

from .._specs import ChildSpec, RuntimeConfig
from ._children import Child
from ._gate import Gate
from ._mailbox import MailboxStore
from ._switchboard import Switchboard


class SupervisorFace(Protocol):
    config: RuntimeConfig
    data_dir: Path
    state: str
    children: dict[str, Child]
    started_wall: float
    inspector: MailboxStore | None
    switchboard: Switchboard | None
    gates: dict[str, Gate]
    lifecycle: deque[dict[str, Any]]

    @property
    def uptime_s(self) -> float: ...

    @property
    def degraded(self) -> list[str]: ...

    def unresponsive(self) -> dict[str, float]: ...

    def request_stop(self) -> None: ...

    def gate(self, sender: str) -> Gate: ...

    def kill_child(self, name: str) -> int: ...

    async def start_child(self, spec: ChildSpec, *, dynamic: bool = True) -> Child: ...

    async def stop_child(self, name: str, *, remove: bool = True) -> None: ...

    async def actor_statistics(self, name: str, timeout: float = 0.5) -> dict[str, Any] | None: ...
