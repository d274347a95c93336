"""Supervision by Erlang/OTP rules, one rule per test, on real processes and real signals."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from .conftest import MakeRuntime
from .helpers import (
    Runtime,
    actor_processes,
    child,
    cmdline,
    notices,
    parent_pid,
    pid_alive,
    runtime_processes,
    wait_until,
)


def _echoes(*names: str) -> list[dict[str, object]]:
    return [child(name, "Echo", shutdown=2.0) for name in names]


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def _comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def test_one_for_one_restarts_only_the_dead_child(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": _echoes("a", "b", "c")}).start()
    before = {name: rt.wait_actor(name)["pid"] for name in "abc"}
    _kill(before["b"])
    after_b = rt.wait_actor("b", restarts=1)
    assert after_b["pid"] != before["b"]
    assert "SIGKILL" in after_b["last_exit"]
    actors = rt.actors()
    assert actors["a"]["pid"] == before["a"]
    assert actors["c"]["pid"] == before["c"]
    assert (actors["a"]["restarts"], actors["c"]["restarts"]) == (0, 0)
    assert rt.status()["state"] == "running"


@pytest.mark.parametrize("spawn", ["fork", "exec"])
def test_actors_are_forked_from_the_zygote_or_execd_by_choice(
    make_runtime: MakeRuntime, spawn: str
) -> None:
    rt = make_runtime({"children": _echoes("a", "b"), "spawn": spawn}).start()
    before = rt.wait_actor("a")["pid"]
    _kill(before)
    again = rt.wait_actor("a", restarts=1)["pid"]
    assert rt.process is not None
    zygotes = [p for p in runtime_processes(rt.process) if p not in actor_processes(rt.process)]
    assert len(zygotes) == (1 if spawn == "fork" else 0)
    for pid in (again, rt.wait_actor("b")["pid"]):
        assert _comm(pid) == "Echo"  # named for its class, however it started
        if spawn == "fork":  # a copy of the zygote, which is a copy of the supervisor
            assert parent_pid(pid) == zygotes[0] and parent_pid(zygotes[0]) == rt.pid
            assert _comm(zygotes[0]) == "kernel-zygote"
            assert cmdline(pid) == cmdline(rt.pid)
        else:
            assert cmdline(pid)[2] == "actors.kernel.actor_process.child"


def test_rest_for_one_restarts_the_later_siblings(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    journal = tmp_path / "journal.txt"
    config = {
        "children": [child(n, "Lifecycle", config={"file": str(journal)}) for n in "abc"],
        "strategy": "rest_for_one",
    }
    rt = make_runtime(config).start()
    before = {name: rt.wait_actor(name)["pid"] for name in "abc"}
    _kill(before["b"])
    rt.wait_actor("b", restarts=1)
    c = rt.wait_actor("c", restarts=1)
    # c was stopped (SIGTERM), then b started again, then c after it
    assert journal.read_text().splitlines()[3:] == ["stop c", "start b", "start c"]
    actors = rt.actors()
    assert actors["a"]["pid"] == before["a"], "an earlier sibling was restarted"
    assert actors["a"]["restarts"] == 0
    assert actors["b"]["pid"] != before["b"]
    assert c["pid"] != before["c"], "the later sibling kept running"
    assert not pid_alive(before["c"])
    # killing the last child restarts nobody else
    b_pid = rt.actors()["b"]["pid"]
    _kill(c["pid"])
    rt.wait_actor("c", restarts=2)
    actors = rt.actors()
    assert (actors["a"]["pid"], actors["b"]["pid"]) == (before["a"], b_pid)


def test_escalation_at_the_intensity_limit(make_runtime: MakeRuntime, tmp_path: Path) -> None:
    """More than max_restarts restarts in max_seconds: failed, degraded, the others told."""
    db = tmp_path / "watcher.db"
    config = {
        "children": [
            child("watcher", "Recorder", config={"db": str(db)}),
            child("crashy", "Echo"),
            child("bystander", "Echo"),
        ],
        "max_restarts": 2,
        "max_seconds": 60,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
    }
    rt = make_runtime(config).start()
    bystander = rt.wait_actor("bystander")["pid"]
    for restarts in (1, 2):
        rt.wait_actor("crashy", restarts=restarts - 1)
        rt.control({"type": "kill", "name": "crashy"})
        rt.wait_actor("crashy", restarts=restarts)
    assert rt.status()["state"] == "running"
    rt.control({"type": "kill", "name": "crashy"})  # the third restart in the period
    crashy = rt.wait_actor("crashy", state="failed")
    assert crashy["pid"] is None
    assert crashy["restarts"] == 2
    status = rt.status()
    assert status["state"] == "degraded"
    assert status["degraded"] == ["crashy"]
    # the others were told, through their mailboxes
    assert wait_until(lambda: notices(db), 10, "the watcher to record the notice") == [
        ("kernel.actor_failed", "crashy")
    ]
    rt.wait_drained("bystander", 10)  # the Echo got its notice too, and ignored it
    assert rt.actors()["bystander"]["pid"] == bystander
    assert "marked failed, runtime degraded" in rt.log()
    # a failed actor stays down: it is not restarted behind the operator's back
    assert rt.actors()["crashy"]["state"] == "failed"


def test_child_ignoring_sigterm_is_killed_after_its_shutdown_timeout(
    make_runtime: MakeRuntime,
) -> None:
    shutdown = 1.5
    config = {
        "children": [
            child("polite", "Echo", shutdown=5.0),
            child("stubborn", "IgnoresTerm", shutdown=shutdown),
        ]
    }
    rt = make_runtime(config).start()
    polite = rt.wait_actor("polite")["pid"]
    stubborn = rt.wait_actor("stubborn")["pid"]

    started = time.monotonic()
    rt.control({"type": "stop_child", "name": "polite"})
    polite_took = time.monotonic() - started
    assert not pid_alive(polite)

    started = time.monotonic()
    rt.control({"type": "stop_child", "name": "stubborn"})
    stubborn_took = time.monotonic() - started
    assert not pid_alive(stubborn)
    assert polite_took < 1.0, "a child that honours SIGTERM stops at once"
    assert shutdown - 0.05 <= stubborn_took <= shutdown + 1.5, stubborn_took
    assert "stubborn stopped: killed by SIGKILL" in rt.log()
    assert "polite stopped: exited with status 0" in rt.log()
    assert set(rt.actors()) == set()


def test_start_order_and_reverse_stop_order(make_runtime: MakeRuntime, tmp_path: Path) -> None:
    journal = tmp_path / "journal.txt"
    names = ["first", "second", "third", "fourth"]
    config = {"children": [child(n, "Lifecycle", config={"file": str(journal)}) for n in names]}
    rt = make_runtime(config).start()
    assert [a for a in rt.actors()] == names
    assert rt.stop() == 0
    lines = journal.read_text().splitlines()
    assert lines == [f"start {n}" for n in names] + [f"stop {n}" for n in reversed(names)]


def test_dynamic_children_start_and_stop_by_name(make_runtime: MakeRuntime, tmp_path: Path) -> None:
    journal = tmp_path / "journal.txt"
    rt = make_runtime({"children": _echoes("a")}).start()
    spec = child("app-1", "Lifecycle", config={"file": str(journal)})
    started = rt.control({"type": "start_child", "spec": spec})
    assert started["state"] == "running"
    assert pid_alive(started["pid"])
    assert list(rt.actors()) == ["a", "app-1"]
    rt.control({"type": "stop_child", "name": "app-1"})
    assert list(rt.actors()) == ["a"]
    assert not pid_alive(started["pid"])
    assert journal.read_text().splitlines() == ["start app-1", "stop app-1"]


@pytest.mark.parametrize(
    ("restart", "code", "restarted"),
    [
        ("temporary", 1, False),  # never restarted, even after a crash
        ("transient", 0, False),  # a normal exit is final
        ("transient", 1, True),  # an abnormal exit is restarted
        ("permanent", 0, True),  # always restarted
    ],
)
def test_restart_policies(
    make_runtime: MakeRuntime, tmp_path: Path, restart: str, code: int, restarted: bool
) -> None:
    marker = tmp_path / "exited-once"
    config = {
        "children": [
            child("steady", "Echo"),
            child(
                "quitter",
                "ExitsOnStart",
                restart=restart,
                config={"marker": str(marker), "code": code},
            ),
        ]
    }
    rt = make_runtime(config).start()
    assert marker.exists(), "the first incarnation did not run"
    if restarted:
        quitter = rt.wait_actor("quitter", restarts=1)
        assert quitter["pid"] != int(marker.read_text())
    else:
        quitter = rt.wait_actor("quitter", state="stopped")
        assert quitter["pid"] is None
        assert quitter["restarts"] == 0
    assert quitter["last_exit"] == f"exited with status {code}"
    assert rt.status()["state"] == "running"


def test_stop_during_restart_backoff_does_not_restart(make_runtime: MakeRuntime) -> None:
    """A stop that arrives while a child waits out its backoff ends it; nothing respawns."""
    config = {"children": _echoes("a"), "backoff_base": 3.0, "backoff_max": 3.0}
    rt = make_runtime(config).start()
    rt.wait_actor("a")
    rt.control({"type": "kill", "name": "a"})  # first restart: at once
    rt.wait_actor("a", restarts=1)
    rt.control({"type": "kill", "name": "a"})  # second: after a 3 s backoff
    wait_until(lambda: rt.actors()["a"]["state"] == "restarting", 5, "a to be in backoff")
    started = time.monotonic()
    assert rt.stop(timeout=20) == 0
    assert time.monotonic() - started < 2.0, "the stop waited out the backoff"
    assert not rt.actor_pids()


def test_a_child_never_ready_fails_without_holding_up_the_others(
    make_runtime: MakeRuntime,
) -> None:
    config = {
        "children": [child("stuck", "NeverReady"), *_echoes("after")],
        "ready_timeout": 1,
        "max_restarts": 0,
    }
    rt = make_runtime(config).start()  # returns: the children after it started
    stuck = rt.wait_actor("stuck", state="failed")
    assert "not ready within 1 s" in stuck["last_exit"]
    assert rt.wait_actor("after")["state"] == "running"
    assert rt.status()["state"] == "degraded"
    rt.control({"type": "stop_child", "name": "stuck"})
    wait_until(lambda: rt.status()["state"] == "running", 10, "the runtime to be running again")


def test_a_child_that_dies_while_the_runtime_stops_is_not_restarted(
    make_runtime: MakeRuntime,
) -> None:
    # `slow` is stopped first (reverse order) and takes its 3 s shutdown; `early` dies then.
    config = {"children": [*_echoes("early"), child("slow", "IgnoresTerm", shutdown=3)]}
    rt = make_runtime(config).start()
    early = rt.wait_actor("early")["pid"]
    assert rt.process is not None
    rt.process.send_signal(signal.SIGTERM)
    wait_until(lambda: rt.status()["state"] == "stopping", 10, "the runtime to be stopping")
    _kill(early)
    assert rt.wait_exit(20) == 0
    log = rt.log()
    assert "restart 1" not in log, log[-2000:]


def test_a_child_still_starting_does_not_hold_up_the_runtimes_stop(
    make_runtime: MakeRuntime,
) -> None:
    rt = make_runtime({"children": _echoes("early"), "ready_timeout": 60}).start()
    spec = child("deaf", "DeafWhileStarting", shutdown=30)
    request = {"type": "start_child", "spec": spec}
    threading.Thread(target=_answer_or_nothing, args=(rt, request), daemon=True).start()
    deaf = wait_until(lambda: rt.actors().get("deaf", {}).get("pid"), 10, "the child's process")
    assert rt.process is not None
    stopped_at = time.monotonic()
    rt.process.send_signal(signal.SIGTERM)
    assert rt.wait_exit(20) == 0
    # Killed at once, not after its 30 s of grace: it had taken no message.
    assert time.monotonic() - stopped_at < 10
    assert not pid_alive(deaf)
    assert "deaf stopped: killed by SIGKILL" in rt.log()


def _answer_or_nothing(rt: Runtime, request: dict[str, object]) -> None:
    """A control request whose answer the test does not need (the runtime may end first)."""
    with contextlib.suppress(Exception):
        rt.control(request, timeout=30)


def test_a_new_zygote_forks_the_actors_when_the_old_one_dies(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": _echoes("a", "b")}).start()
    before = {name: rt.wait_actor(name)["pid"] for name in "ab"}
    assert rt.process is not None
    (zygote,) = [p for p in runtime_processes(rt.process) if p not in actor_processes(rt.process)]
    assert cmdline(zygote) == cmdline(rt.pid)  # the first is forked from the supervisor
    _kill(zygote)  # its children die with it (parent-death signal)
    after = {name: rt.wait_actor(name, restarts=1)["pid"] for name in "ab"}
    assert set(after.values()).isdisjoint(before.values())
    (again,) = [p for p in runtime_processes(rt.process) if p not in actor_processes(rt.process)]
    assert again != zygote and _comm(again) == "kernel-zygote"
    assert cmdline(again)[2] == "actors.kernel.spawning.zygote"  # a later one is exec'd
    for pid in after.values():
        assert cmdline(pid) == cmdline(again) and parent_pid(pid) == again
