"""What the power-cut tests share: a power-cut disk mounted for the test, torn down after
it (its server ended, whatever the test left mounted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.power_cut import PowerCutDisk


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[PowerCutDisk]:
    disk = PowerCutDisk(tmp_path / "backing", tmp_path / "mnt")
    disk.mount()
    try:
        yield disk
    finally:
        disk.tear_down()
