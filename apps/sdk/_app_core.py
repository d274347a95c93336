"""What the SDK's parts see of the app they serve: each API (`_artifacts`, `_tools`,
`_surface`, ...) is made with the app's process and reaches it, and the other APIs it
works with, through these faces, so no part imports `_runtime_app`, which imports them
all: the SDK has no import circle. `AppContext` is what an app is told of itself."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from actors.kernel import Message
from contracts import ContractError

from ._log import EventLog
from ._view import ViewModel


@dataclass(frozen=True)
class AppContext:
    app_scope: str
    kind: str  # core | installed
    version: str


class IdSource(Protocol):
    """The ids of what the app asks: derived from the message it handles, else fresh."""

    def next(self) -> str: ...

    def deriving(self, parent: str) -> AbstractContextManager[None]: ...


class SessionDataFace(Protocol):
    async def get(self, *, instance_id: str | None = None) -> Mapping[str, Any]: ...

    async def replace(
        self, data: dict[str, Any], expected_revision: int, *, instance_id: str | None = None
    ) -> dict[str, int]: ...

    async def subscribe(
        self, listener: Callable[[Any], Any], *, instance_id: str | None = None
    ) -> Callable[[], None]: ...

    async def _changed(self, frame: dict[str, Any]) -> None: ...


class SurfaceFace(Protocol):
    async def _hand_call(self, call: dict[str, Any]) -> None: ...

    async def _request(self, msg: Message) -> Any: ...

    async def _session_changed(self, instance: str) -> None: ...


class ToolsFace(Protocol):
    def _surface_calls(self, instance_id: str) -> list[dict[str, Any]]: ...

    async def _surface_answer(self, instance_id: str, op: str, body: dict[str, Any]) -> None: ...


class CapabilitiesFace(Protocol):
    async def request(
        self,
        capability: str,
        purpose: str,
        input: Any = None,
        *,
        timeout_s: float = ...,
        request_id: str | None = None,
    ) -> dict[str, Any]: ...

    async def _withdraw(
        self, *, calls: Collection[str] = (), keep: Collection[str] = ()
    ) -> None: ...


class SdkFace(Protocol):
    """The parts of `sdk` that other parts use."""

    @property
    def app(self) -> AppContext: ...

    @property
    def session_data(self) -> SessionDataFace: ...

    @property
    def surface(self) -> SurfaceFace: ...

    @property
    def tools(self) -> ToolsFace: ...

    @property
    def capabilities(self) -> CapabilitiesFace: ...


class AppCore(Protocol):
    """The app's process, as its SDK's parts use it."""

    name: str
    nursery: trio.Nursery
    _ids: IdSource
    _log: EventLog
    _views: ViewModel

    @property
    def sdk(self) -> SdkFace: ...

    async def cast(self, to: str, type: str, body: Any = None, *, id: str | None = None) -> str: ...

    async def call(
        self, to: str, type: str, body: Any = None, *, timeout: float, id: str | None = None
    ) -> Any: ...

    async def call_until_answered(
        self,
        to: str,
        type: str,
        body: Any = None,
        *,
        id: str,
        first_timeout: float = 0.25,
        max_timeout: float = 2.0,
    ) -> Any: ...

    async def reply(
        self, caller: str, request_id: str, body: Any = None, *, error: ContractError | None = None
    ) -> None: ...

    async def _apply(self, event: dict[str, Any]) -> None: ...
