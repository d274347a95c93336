"""A crash while the data dir's disk is full is the disk's doing, not the actor's: it does
not count toward the restart intensity, so a full disk cannot mark a sound actor failed.

The data dir is a small tmpfs (mounting one needs root, as CI runs); a ballast file fills it
to the last byte."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.small_disk import fill, small_disk

from .conftest import MakeRuntime
from .helpers import Runtime, child, wait_until

SIZE_MIB = 32
KILLS = 4  # twice the intensity


@pytest.fixture
def on_small_disk(make_runtime: MakeRuntime) -> Iterator[Runtime]:
    config = {
        "children": [child("crashy", "Echo")],
        "max_restarts": KILLS // 2,
        "max_seconds": 600,
        "backoff_base": 0.01,
        "backoff_max": 0.1,
    }
    rt = make_runtime(config)
    with small_disk(rt.data_dir, SIZE_MIB):
        yield rt


def _killed_while_full(rt: Runtime, restarts: int) -> None:
    """Fill the disk, kill the actor, see it gone, make room, see it back."""
    ballast = rt.data_dir / "ballast"
    fill(ballast)
    old = rt.actors()["crashy"]["pid"]
    rt.control({"type": "kill", "name": "crashy"})
    seen: dict[str, object] = {}

    def gone() -> bool:
        seen.update(rt.actors()["crashy"])
        return seen["pid"] != old

    def back() -> bool:
        seen.update(rt.actors()["crashy"])
        assert seen["state"] != "failed", f"marked failed after {restarts - 1} restarts"
        return seen["restarts"] == restarts and seen["state"] == "running" and bool(seen["pid"])

    try:
        wait_until(gone, 30, "the killed actor's process to end")
        ballast.unlink()
        wait_until(back, 30, f"restart {restarts} of the killed actor")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen {seen}\n{rt.log()[-2000:]}") from None


def test_crashes_on_a_full_disk_do_not_exhaust_the_restart_intensity(
    on_small_disk: Runtime,
) -> None:
    rt = on_small_disk.start()
    rt.wait_actor("crashy")
    for restarts in range(1, KILLS + 1):
        _killed_while_full(rt, restarts)
    assert rt.status()["state"] == "running"
