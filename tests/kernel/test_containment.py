"""Installed app processes are contained: nothing they start outlives them, and they
cannot take more than their share of processes, memory, disk or log.

Real supervisor, real launcher, real processes, as root. A jailed `Hostile` actor
(`contained_actors.py`) daemonizes children, hands its channel to one, forks without
end, allocates, writes big files and floods its log; a trusted Caller makes the calls.
What is alive is read from /proc, by the app's own uid.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from actors.kernel import new_id
from actors.kernel.spawning._containment import runtime_id

from .conftest import MakeRuntime
from .helpers import Runtime, child, outcomes, pid_alive, wait_until

HOSTILE = "tests.kernel.contained_actors:Hostile"
MiB = 1 << 20

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="containment needs root")


def jailed(name: str, **limits: Any) -> dict[str, Any]:
    scope = name.removeprefix("app.")
    return {
        "name": name,
        "target": HOSTILE,
        "restart": "temporary",
        "isolation": {"private_dir": f"apps/{scope}", **limits},
    }


def start(make_runtime: MakeRuntime, *apps: dict[str, Any]) -> Runtime:
    rt = make_runtime({"children": []})
    calls = rt.log_dir / "caller.db"
    rt.config["children"] = [child("caller", "Caller", config={"db": str(calls)}), *apps]
    return rt.start()


def call(rt: Runtime, to: str, kind: str, body: Any = None, timeout: float = 20.0) -> Any:
    key = new_id()
    request = {"key": key, "to": to, "type": kind, "body": body, "timeout": timeout}
    rt.send("caller", "do_call", request)
    found = wait_until(
        lambda: outcomes(rt.log_dir / "caller.db").get(key), timeout + 5, f"{to}'s {kind}"
    )
    outcome, value, code = found
    assert outcome == "ok", code
    return value


def processes_of(uid: int) -> list[int]:
    """Live processes (not zombies) whose real uid is `uid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            found.append(int(entry.name))
    return found


def cgroup_dirs(rt: Runtime, scope: str) -> list[Path]:
    """The app's cgroup directories, wherever the hierarchies are mounted."""
    rid = runtime_id(rt.data_dir)
    return [p for p in Path("/sys/fs/cgroup").glob(f"*/**/lineup/{rid}/{scope}") if p.is_dir()]


def escapees(rt: Runtime, name: str) -> tuple[int, list[int]]:
    """A daemonized grandchild and a child holding the channel, both alive: the app's uid
    and all its processes."""
    uid = call(rt, name, "status")["uid"]
    call(rt, name, "double_fork")
    call(rt, name, "hold_channel")
    alive = processes_of(uid)
    assert len(alive) >= 3, alive  # the app, its daemon, the holder of its channel
    return uid, alive


def test_nothing_an_app_started_outlives_its_stop(make_runtime: MakeRuntime) -> None:
    rt = start(make_runtime, jailed("app.hostile"))
    uid, _ = escapees(rt, "app.hostile")
    assert cgroup_dirs(rt, "hostile"), "no cgroup made"
    began = time.monotonic()
    rt.control({"type": "stop_child", "name": "app.hostile"}, timeout=10.0)
    assert time.monotonic() - began < 5.0
    wait_until(lambda: not processes_of(uid), 2.0, "every process of the app to be gone")
    wait_until(lambda: not cgroup_dirs(rt, "hostile"), 2.0, "its cgroup to be removed")
    assert "app.hostile" not in rt.actors()


def test_nothing_an_app_started_outlives_the_supervisors_death(
    make_runtime: MakeRuntime,
) -> None:
    rt = start(make_runtime, jailed("app.hostile"))
    uid, alive = escapees(rt, "app.hostile")
    rt.kill9()
    wait_until(lambda: not processes_of(uid), 2.0, "every process of the app to be gone")
    assert not [pid for pid in alive if pid_alive(pid)]


def test_the_runtime_stops_promptly_with_a_child_holding_an_apps_channel(
    make_runtime: MakeRuntime,
) -> None:
    rt = start(make_runtime, jailed("app.hostile"))
    uid, _ = escapees(rt, "app.hostile")
    began = time.monotonic()
    rt.process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
    rt.wait_exit(10.0)
    assert time.monotonic() - began < 5.0
    wait_until(lambda: not processes_of(uid), 2.0, "every process of the app to be gone")


def test_an_app_sees_only_its_own_processes_and_is_reported_contained(
    make_runtime: MakeRuntime,
) -> None:
    rt = start(make_runtime, jailed("app.hostile"))
    seen = call(rt, "app.hostile", "status")
    assert seen["pid"] == 1 and seen["parent"] == 0  # init of its namespace
    assert seen["visible"] == [1]
    host_pid = rt.wait_actor("app.hostile")["pid"]
    assert Path(f"/proc/{host_pid}").stat().st_uid == seen["uid"]
    records = rt.control({"type": "actors", "stats": True})["actors"]
    report = next(r for r in records if r["name"] == "app.hostile")["statistics"]["isolation"]
    assert report["level"] == "full", report
    assert report["not_enforced"] == {}
    steps = {"pid_namespace", "proc", "cgroup", "processes", "memory", "cpu"}
    assert steps | {"file_size", "rlimits", "log", "directory_quota"} <= set(report["enforced"])
    assert "64 tasks" in report["enforced"]["processes"]
    assert "512 MiB" in report["enforced"]["memory"]
    for where in cgroup_dirs(rt, "hostile"):
        assert host_pid in {int(p) for p in (where / "cgroup.procs").read_text().split()}


def test_a_fork_bomb_stops_at_the_process_limit(make_runtime: MakeRuntime) -> None:
    rt = start(make_runtime, jailed("app.hostile", max_processes=32))
    uid = call(rt, "app.hostile", "status")["uid"]
    got = call(rt, "app.hostile", "fork_bomb", {"limit": 500})
    assert got["error"] == "EAGAIN" and 0 < got["forked"] < 32, got
    assert len(processes_of(uid)) < 32
    assert rt.status()["state"] == "running"
    rt.control({"type": "stop_child", "name": "app.hostile"}, timeout=10.0)
    wait_until(lambda: not processes_of(uid), 2.0, "the forks to be gone")


def test_memory_beyond_the_limit_kills_the_app_not_the_runtime(
    make_runtime: MakeRuntime,
) -> None:
    rt = start(make_runtime, {**jailed("app.hostile", memory_max=96 * MiB), "restart": "permanent"})
    first = rt.wait_actor("app.hostile")["pid"]
    rt.send("app.hostile", "allocate", {"mib": 256})
    wait_until(lambda: not pid_alive(first), 20.0, "the app to be killed")
    again = rt.wait_actor("app.hostile", restarts=1)
    assert again["pid"] != first
    assert rt.alive and rt.status()["state"] == "running"
    log = wait_until(lambda: "out of memory" in rt.log() and rt.log(), 5.0, "the reason")
    assert "app.hostile killed by SIGKILL (out of memory" in log


def test_a_file_beyond_the_size_limit_fails_with_efbig(make_runtime: MakeRuntime) -> None:
    rt = start(make_runtime, jailed("app.hostile", file_max=MiB))
    got = call(rt, "app.hostile", "write_file", {"name": "big.bin", "size": 3 * MiB})
    assert got == {"written": MiB, "error": "EFBIG"}
    assert (rt.data_dir / "apps" / "hostile" / "big.bin").stat().st_size == MiB
    assert call(rt, "app.hostile", "status")["uid"]  # still running: not killed by SIGXFSZ


def test_a_directory_over_its_quota_fails_the_app(make_runtime: MakeRuntime) -> None:
    limits = {"dir_max": 2 * MiB, "dir_check_s": 0.2}
    rt = start(make_runtime, jailed("app.hostile", **limits))
    pid = rt.wait_actor("app.hostile")["pid"]
    got = call(rt, "app.hostile", "write_file", {"name": "fill.bin", "size": 3 * MiB})
    assert got == {"written": 3 * MiB, "error": ""}
    wait_until(lambda: not pid_alive(pid), 5.0, "the app to be failed")
    log = wait_until(lambda: "over its quota" in rt.log() and rt.log(), 5.0, "the reason")
    assert "app.hostile ended (its directory holds 3145728 bytes, over its quota" in log


def test_an_apps_log_is_capped_and_out_of_its_reach(make_runtime: MakeRuntime) -> None:
    rt = start(make_runtime, jailed("app.hostile"))
    call(rt, "app.hostile", "say", {"text": "first words"})
    log = rt.data_dir / "logs" / "app.hostile.log"
    wait_until(lambda: log.exists() and b"first words" in log.read_bytes(), 5.0, "the line")
    held = call(rt, "app.hostile", "erase_log")
    assert held["stdout"].startswith("pipe:"), held
    assert held["truncate"] == "EINVAL" and held["seek"] == "ESPIPE", held
    assert b"first words" in log.read_bytes()
    call(rt, "app.hostile", "spew", {"mib": 50}, timeout=60.0)
    rotated = log.with_name("app.hostile.log.1")
    wait_until(rotated.exists, 5.0, "the log to be rotated")
    assert log.stat().st_size <= 8 * MiB
    assert rotated.stat().st_size <= 8 * MiB
    assert log.stat().st_uid == 0 and log.stat().st_mode & 0o777 == 0o600
