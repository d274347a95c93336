"""Heartbeats: an actor whose process is stopped, or whose loop a handler holds, stops
answering the supervisor's `kernel.ping`; it is shown unresponsive and the runtime
degraded, and with the watchdog policy it is killed and restarted."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from actors.kernel.supervising._waiting import waits_for_work

from .conftest import MakeRuntime
from .helpers import child, wait_until

INTERVAL = 0.1
AFTER = 0.6
# How long a test waits past `AFTER` before it calls a missed deadline a failure: a loaded
# machine delays the supervisor's own checks too.
SLACK = 5.0
IDLE_TICKS = 20


def _config(**extra: Any) -> dict[str, Any]:
    return {
        # A frozen loop never hears SIGTERM: its grace is kept short, for the teardown.
        "children": [child("e", "Echo"), child("f", "Frozen", shutdown=0.5)],
        "heartbeat_interval": INTERVAL,
        "unresponsive_after": AFTER,
        **extra,
    }


def test_a_stopped_actor_is_unresponsive_until_it_continues(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(_config()).start()
    pid = rt.wait_actor("e")["pid"]
    assert rt.status()["state"] == "running"
    os.kill(pid, signal.SIGSTOP)
    try:
        stopped_at = time.monotonic()
        record = wait_until(
            lambda: (a := rt.actors()["e"])["state"] == "unresponsive" and a,
            AFTER + SLACK,
            "e to be shown unresponsive",
        )
        # Silent since its last answer, at most one interval before it was stopped.
        assert time.monotonic() - stopped_at >= AFTER - INTERVAL
        assert record["silent_s"] > AFTER
        assert record["pid"] == pid
        status = rt.status()
        assert status["state"] == "degraded"
        assert status["unresponsive"] == ["e"]
        assert "e unresponsive" in status["reason"]
        assert rt.actors()["f"]["state"] == "running"  # the others answer
        # It is still there: nothing restarted it (the watchdog is off by default).
        assert rt.actors()["e"]["restarts"] == 0
    finally:
        os.kill(pid, signal.SIGCONT)
    rt.wait_actor("e", timeout=SLACK, pid=pid)
    wait_until(lambda: rt.status()["state"] == "running", SLACK, "the runtime running again")
    events = [(e["actor"], e["event"]) for e in rt.control({"type": "lifecycle"})["events"]]
    assert ("e", "unresponsive") in events
    assert ("e", "responsive") in events


def test_a_handler_that_holds_the_loop_misses_the_heartbeat(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(_config()).start()
    rt.wait_actor("f")
    rt.send("f", "freeze")
    record = wait_until(
        lambda: (a := rt.actors()["f"])["state"] == "unresponsive" and a,
        AFTER + SLACK,
        "f to be shown unresponsive",
    )
    assert record["inflight"] == 1
    assert record["inflight_oldest_s"] is not None and record["inflight_oldest_s"] > 0
    assert rt.status()["degraded"] == ["f"]


def test_the_watchdog_restarts_an_unresponsive_actor(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(_config(restart_unresponsive=True)).start()
    pid = rt.wait_actor("e")["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        record = wait_until(
            lambda: (
                (a := rt.actors()["e"])["pid"] not in (None, pid) and a["state"] == "running" and a
            ),
            AFTER + SLACK,
            "e to be restarted by the watchdog",
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert record["restarts"] == 1
    assert "killed by the watchdog" in record["last_exit"]
    events = [(e["actor"], e["event"]) for e in rt.control({"type": "lifecycle"})["events"]]
    assert ("e", "exit") in events and ("e", "restart") in events
    assert rt.status()["state"] == "running"


def _wakeups(pid: int) -> int:
    """How often `pid`'s threads have gone to sleep and been woken so far."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                total += int(line.split()[1])
    return total


def test_an_idle_actor_is_not_woken_by_its_heartbeat(make_runtime: MakeRuntime) -> None:
    """Its loop is seen waiting for work from outside: no ping, no pong, no wakeup. The
    other tests here show a stopped or frozen one is still pinged and found out."""
    rt = make_runtime(_config()).start()
    pid = rt.wait_actor("e")["pid"]
    wait_until(lambda: waits_for_work(pid), SLACK, "e to wait for work once started")
    before = _wakeups(pid)
    time.sleep(IDLE_TICKS * INTERVAL)  # the subject of the test: the idle ticks pass
    woken = _wakeups(pid) - before
    # A ping on each tick would have woken it at least once a tick.
    assert woken < IDLE_TICKS / 4, woken
    assert rt.actors()["e"]["state"] == "running"
    assert rt.status()["state"] == "running"


def _main_thread_wakeups(pid: int) -> int:
    for line in Path(f"/proc/{pid}/task/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError(f"no context switches shown for {pid}")


def test_an_idle_runtime_wakes_the_supervisor_once_in_several_ticks(
    make_runtime: MakeRuntime,
) -> None:
    """Children seen waiting for work are looked at again only at every sixth tick here
    (the whole intervals in `unresponsive_after`): the supervisor itself sleeps through
    the ticks between."""
    rt = make_runtime(_config()).start()
    pids = [rt.wait_actor(name)["pid"] for name in ("e", "f")]
    for pid in pids:
        wait_until(lambda pid=pid: waits_for_work(pid), SLACK, "the actors to wait for work")
    supervisor = rt.process.pid if rt.process is not None else 0
    before = _main_thread_wakeups(supervisor)
    time.sleep(IDLE_TICKS * INTERVAL)  # the subject of the test: the idle ticks pass
    woken = _main_thread_wakeups(supervisor) - before
    # Looking at every tick would wake it at least once a tick.
    assert woken <= IDLE_TICKS // 2, woken
    assert rt.status()["state"] == "running"
