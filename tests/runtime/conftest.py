from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from .helpers import Stack


@pytest.fixture
async def stack(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[Stack]:
    the_stack = Stack(tmp_path, nursery)
    try:
        yield the_stack
    finally:
        orphans = the_stack.cleanup()
        assert not orphans, f"actor processes outlived their supervisor: {orphans}"
