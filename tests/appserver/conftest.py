from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from peers.appserver import AppServer

StartAppServer = Callable[..., Awaitable[AppServer]]


@pytest.fixture
def appserver_dir(tmp_path: Path) -> Path:
    return tmp_path / "appserver"


@pytest.fixture
def start_appserver(nursery: trio.Nursery, appserver_dir: Path) -> StartAppServer:
    """Starts an AppServer on a free loopback port for the rest of the test."""

    async def start(**options: Any) -> AppServer:
        server = AppServer(appserver_dir, **options)
        await nursery.start(server.serve)
        return server

    return start


@contextlib.asynccontextmanager
async def serving(server: AppServer) -> AsyncIterator[AppServer]:
    """An AppServer that stops at the end of the block (to restart it on the same dir)."""
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        yield server
        nursery.cancel_scope.cancel()
