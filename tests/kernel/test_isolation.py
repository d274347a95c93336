"""Isolated app processes: what the operating system keeps from them.

Real supervisor, real launcher, real processes. A jailed probe (`jailed_actors.Probe`)
tries what an installed app must not do and answers a `call` with the outcome of each
attempt; the same probe unjailed is the control, for which every attempt succeeds (so a
jailed failure is the jail's doing, not a wrong path). A trusted Caller makes the calls.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.kernel import ChildSpec, RuntimeConfig, new_id
from actors.kernel.spawning._sandbox import JailPlan, app_id, scrubbed_environment
from actors.kernel.spawning.jail._report import Report
from actors.runtime_token import write_token

from .conftest import MakeRuntime
from .helpers import REPO_ROOT, Runtime, child, outcomes, pid_alive, wait_until

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the full jail needs root")

PROBE = "tests.kernel.jailed_actors:Probe"
TOKEN = "tok-" + "s3cr3t" * 4
SECRET_ENV = {"LINEUP_RUNTIME_TOKEN": TOKEN, "APPSERVER_TOKEN": TOKEN}


def jailed(name: str, scope: str) -> dict[str, Any]:
    return {"name": name, "target": PROBE, "isolation": {"private_dir": f"apps/{scope}"}}


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback TCP listener on the host: no jailed app may reach it."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        sock.setblocking(False)
        yield sock


@pytest.fixture
def world_writable() -> Iterator[str]:
    """A file name in a directory every uid may write (mode 1777), made for the test at
    the top of the file system (which the jail shows, read-only): not from inside a jail."""
    directory = Path("/") / f"lineup-escape-{new_id()}"
    directory.mkdir()
    directory.chmod(0o1777)
    try:
        yield str(directory / "escaped")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def caller_db(rt: Runtime) -> Path:
    return rt.log_dir / "caller.db"


def start(
    make_runtime: MakeRuntime, children: list[dict[str, Any]], launch: str, **config: Any
) -> Runtime:
    """A runtime with a trusted Caller and `children`, on a data dir holding a token and a
    runtime.db as `lineup run` and the store would leave them; its apps launched by
    `launch` (forked from the app zygote, or exec'd)."""
    rt = make_runtime({"children": children, "app_launch": launch, **config})
    rt.config["children"].insert(0, child("caller", "Caller", config={"db": str(caller_db(rt))}))
    data = rt.data_dir
    data.mkdir(parents=True)
    write_token(data / ".runtime_token", TOKEN)
    with contextlib.closing(sqlite3.connect(data / "runtime.db")) as db:
        db.execute("CREATE TABLE conversations (conversation_id TEXT)")
    return rt.start(env={**SECRET_ENV, "LINEUP_DATA_DIR": str(data)})


def call(rt: Runtime, to: str, body: Any) -> Any:
    calls, key = caller_db(rt), new_id()
    rt.send("caller", "do_call", {"key": key, "to": to, "type": "probe", "body": body})
    outcome, value, code = wait_until(lambda: outcomes(calls).get(key), 20, f"{to}'s answer")
    assert outcome == "ok", code
    return value


def attempts(rt: Runtime, port: int, *, other: str, write: dict[str, str]) -> dict[str, Any]:
    """What the probe tries: the runtime's secrets, another app's files, the host's network,
    and the writes in `write`."""
    data = rt.data_dir
    return {
        "read": {
            "token": str(data / ".runtime_token"),
            "other_app_file": str(data / "apps" / other / "note.txt"),
            # around the app's own view of the file system, through the supervisor's
            "token_via_supervisor_root": f"/proc/{rt.pid}/root{data}/.runtime_token",
            "supervisor_environment": f"/proc/{rt.pid}/environ",
        },
        "databases": {"mailbox": str(data / "mailbox.db"), "runtime": str(data / "runtime.db")},
        "list": {
            "data_dir": str(data),
            "apps": str(data / "apps"),
            "other_app": f"{data}/apps/{other}",
        },
        "write": write,
        "port": port,
    }


def app_zygote_pid(rt: Runtime) -> int:
    """The supervisor's app zygote, found by its command line among the host's processes."""

    def found() -> int | None:
        for name in os.listdir("/proc"):
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
                if (
                    b"actors.kernel.spawning.jail.app_zygote" in command
                    and parent_of(int(name)) == rt.pid
                ):
                    return int(name)
        return None

    return wait_until(found, 10, "the app zygote")


def parent_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("PPid:")[1].split()[0])


def expected_launch(launch: str) -> str:
    return "zygote" if launch == "zygote" else "exec (the runtime's setting)"


def statistics(rt: Runtime) -> dict[str, dict[str, Any]]:
    records = rt.control({"type": "actors", "stats": True})["actors"]
    return {r["name"]: r["statistics"] or {} for r in records}


LAUNCHES = pytest.mark.parametrize("launch", ["zygote", "exec"])


@needs_root
@LAUNCHES
def test_a_jailed_app_reaches_nothing_but_its_own_directory(
    make_runtime: MakeRuntime,
    tmp_path: Path,
    listener: socket.socket,
    world_writable: str,
    launch: str,
) -> None:
    control_dir = tmp_path / "control-app"
    children = [
        jailed("app.probe", "probe"),
        jailed("app.other", "other"),
        {"name": "control", "target": PROBE, "config": {"app_dir": str(control_dir)}},
    ]
    rt = start(make_runtime, children, launch)
    data, port = rt.data_dir, listener.getsockname()[1]
    # The other app writes a file of its own, which the probe will try to read.
    call(rt, "app.other", attempts(rt, port, other="probe", write={"own": "note.txt"}))
    escapes = {"shared_tmp": "/tmp/lineup-escape.txt", "world_writable": world_writable}
    body = attempts(rt, port, other="other", write={"own": "mine.txt", **escapes})
    body["read"]["other_app_relative"] = "../other/note.txt"  # from its cwd
    # the processes it must not touch: its supervisor, and the parent it was forked from
    body["processes"] = {"supervisor": rt.pid}
    if launch == "zygote":
        body["processes"]["app_zygote"] = app_zygote_pid(rt)
    got = call(rt, "app.probe", body)
    control_body = attempts(rt, port, other="other", write={"own": str(control_dir / "x.txt")})
    control = call(rt, "control", {**control_body, "processes": body["processes"]})

    # the control reaches everything: the paths are right, and the attempts would work
    for kind in ("read", "databases", "list", "write", "signal", "ptrace"):
        assert set(control[kind].values()) == {"ok"}, f"control {kind}: {control[kind]}"
    assert control["tcp"] == "ok"
    listener.accept()[0].close()  # the control's connection

    # every forbidden attempt of the jailed app failed ...
    for kind in ("read", "databases", "list", "signal", "ptrace"):
        assert "ok" not in got[kind].values(), f"{kind}: {got[kind]}"
    assert "Network is unreachable" in got["tcp"]
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing ever reached the host's listener
    assert "Read-only file system" in got["write"]["shared_tmp"]
    assert "Read-only file system" in got["write"]["world_writable"]
    assert not Path(world_writable).exists()
    # the layer below the view: the data dir and each app's directory are owner-only
    for path in (data, data / "apps", data / "apps" / "probe", data / "apps" / "other"):
        assert path.stat().st_mode & 0o777 == 0o700, path
    # ... and what it may do worked: its own files, the SDK's event log
    assert got["write"]["own"] == "ok"
    assert (data / "apps" / "probe" / "mine.txt").read_text() == "written by the probe\n"
    assert got["logged"] == 1
    assert (data / "apps" / "probe" / "app.db").exists()

    # who it is: its own uid and gid, no groups, no capability, no way to gain one
    other = call(rt, "app.other", attempts(rt, port, other="probe", write={}))
    assert got["uid"] != 0 and got["gid"] != 0 and got["groups"] == []
    assert (got["uid"], got["gid"]) != (other["uid"], other["gid"])
    assert (data / "apps" / "probe").stat().st_uid == got["uid"]
    assert int(got["cap_eff"], 16) == 0
    assert got["no_new_privs"] == "1"
    # where it is: a network namespace of its own, its directory as "."
    supervisor_netns = os.readlink(f"/proc/{rt.pid}/ns/net")
    assert got["netns"] != supervisor_netns and got["netns"] != other["netns"]
    assert control["netns"] == supervisor_netns
    assert got["config"] == {"app_dir": "."}
    assert str(data) not in got["cwd"]
    # what it was told: no token, no data dir, nothing of the supervisor's environment
    env = got["env"]
    assert not [
        k for k in env if "TOKEN" in k or (k.startswith("LINEUP_") and k != "LINEUP_LOG_LEVEL")
    ]
    assert not [k for k, v in env.items() if TOKEN in v or str(data) in v]
    assert set(env) <= {
        "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LINEUP_LOG_LEVEL",
        "PYTHONPATH", "PYTHONSAFEPATH", "PYTHONNOUSERSITE", "HOME",
    }  # fmt: skip
    # what it holds: stdin from /dev/null, its log, its channel; nothing of the runtime's
    assert got["fds"]["0"] == "/dev/null"
    runtime_files = (
        "mailbox.db",
        "runtime.db",
        ".runtime_token",
        "control.sock",
        "ui.sock",
        ".lock",
    )
    assert not [t for t in got["fds"].values() if t.endswith(runtime_files)]

    assert_shown_full(rt, launch)
    if launch == "zygote":
        assert_the_app_zygote_holds_nothing_of_the_runtime(rt, body["processes"]["app_zygote"])


def assert_shown_full(rt: Runtime, launch: str) -> None:
    """The supervisor knows what was enforced, and how the app was launched, and shows it."""
    report = statistics(rt)["app.probe"]["isolation"]
    assert report["level"] == "full", report
    assert set(report["enforced"]) >= {"network", "filesystem", "identity", "no_new_privs"}
    assert report["not_enforced"] == {}
    assert report["fds"][:3] == [0, 1, 2] and len(report["fds"]) == 4
    assert report["launch"] == expected_launch(launch)
    assert "isolation" not in statistics(rt)["control"]


def assert_the_app_zygote_holds_nothing_of_the_runtime(rt: Runtime, zygote: int) -> None:
    """No secret in its environment, no runtime file open, the data dir empty in its view,
    and no app its child."""
    data = rt.data_dir
    environ = Path(f"/proc/{zygote}/environ").read_bytes().decode()
    assert TOKEN not in environ and str(data) not in environ
    assert str(data).encode() not in Path(f"/proc/{zygote}/cmdline").read_bytes()
    held = [os.readlink(f"/proc/{zygote}/fd/{fd}") for fd in os.listdir(f"/proc/{zygote}/fd")]
    assert not [target for target in held if str(data) in target], held
    assert os.readlink(f"/proc/{zygote}/ns/mnt") != os.readlink(f"/proc/{rt.pid}/ns/mnt")
    assert os.listdir(f"/proc/{zygote}/root{data}") == []  # covered
    assert (data / "mailbox.db").exists()  # in the host's view, it is there
    for name in ("app.probe", "app.other"):
        app = rt.wait_actor(name)["pid"]
        assert parent_of(app) != zygote, f"{name} is the app zygote's child"
        assert Path(f"/proc/{app}").stat().st_uid != 0
    # what `lineup debug actors` shows of their memory: the pages they share with the app
    # zygote (and each other) count in their RSS, a share of them in their PSS
    shown = subprocess.run(
        [sys.executable, "-m", "lineup.cli", "debug", "actors", "--json", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    memory = {a["name"]: (a["rss_mib"], a["pss_mib"]) for a in json.loads(shown.stdout)}
    for name in ("app.probe", "app.other"):
        rss, pss = memory[name]
        assert 0 < pss < rss, memory


@needs_root
@LAUNCHES
def test_a_jailed_app_dies_with_the_supervisor(make_runtime: MakeRuntime, launch: str) -> None:
    rt = start(make_runtime, [jailed("app.probe", "probe")], launch)
    pid = rt.wait_actor("app.probe")["pid"]
    assert Path(f"/proc/{pid}").stat().st_uid != 0, "not jailed"
    rt.kill9()
    wait_until(lambda: not pid_alive(pid), 2.0, "the jailed app to die with its supervisor")


@needs_root
@LAUNCHES
def test_a_killed_jailed_app_is_restarted_and_still_jailed(
    make_runtime: MakeRuntime, listener: socket.socket, launch: str
) -> None:
    rt = start(make_runtime, [jailed("app.probe", "probe")], launch)
    port = listener.getsockname()[1]
    first = call(rt, "app.probe", attempts(rt, port, other="x", write={}))
    pid = rt.wait_actor("app.probe")["pid"]
    rt.control({"type": "kill", "name": "app.probe"})
    again = rt.wait_actor("app.probe", restarts=1)
    assert again["pid"] != pid
    second = call(rt, "app.probe", attempts(rt, port, other="x", write={}))
    assert (second["uid"], second["gid"]) == (first["uid"], first["gid"])  # persisted
    assert second["netns"] != os.readlink(f"/proc/{rt.pid}/ns/net")
    assert second["read"]["token"] != "ok" and second["tcp"] != "ok"
    assert second["logged"] == 2, "its event log did not survive the restart"
    report = statistics(rt)["app.probe"]["isolation"]
    assert (report["level"], report["launch"]) == ("full", expected_launch(launch))


@needs_root
def test_apps_forked_in_turn_find_no_leftovers_and_a_dead_app_zygote_launches_nothing_half_jailed(
    make_runtime: MakeRuntime, listener: socket.socket
) -> None:
    # The second restart in a period waits `backoff_base`: the window in which the test
    # stops the app zygote before the launch reaches it.
    children = [jailed("app.a", "a"), jailed("app.b", "b")]
    rt = start(make_runtime, children, "zygote", backoff_base=3.0, backoff_max=3.0)
    port = listener.getsockname()[1]
    zygote = app_zygote_pid(rt)
    left = call(rt, "app.a", {**attempts(rt, port, other="b", write={}), "leave": "from a"})
    assert left["left"]["/tmp/app"] == "ok"  # its own directory; /tmp and /dev/shm are
    assert "Read-only file system" in left["left"]["/tmp"]  # read-only tmpfs of its own
    assert left["leftovers"] == {
        "global": "from a",
        "module": True,
        "env": "from a",
        "fds": ["/tmp/app/left-open.txt"],
        "files": ["/tmp/app/left-by-an-app"],
    }
    # b forked again after a left all that, from the same app zygote (a still runs)
    b = rt.wait_actor("app.b")["pid"]
    rt.control({"type": "kill", "name": "app.b"})
    rt.wait_actor("app.b", restarts=1)
    assert rt.wait_actor("app.b")["pid"] != b and app_zygote_pid(rt) == zygote
    seen = call(rt, "app.b", attempts(rt, port, other="a", write={}))
    assert seen["leftovers"] == {
        "global": None,
        "module": False,
        "env": None,
        "fds": [],
        "files": [],
    }
    assert statistics(rt)["app.b"]["isolation"]["launch"] == "zygote"

    # the app zygote dies while b's next launch waits in its socket
    rt.control({"type": "kill", "name": "app.b"})
    wait_until(lambda: rt.actors()["app.b"]["restarts"] == 2, 10, "b's second restart")
    os.kill(zygote, signal.SIGSTOP)
    wait_until(lambda: queued_requests(zygote) > 0, 10, "b's launch to reach the app zygote")
    os.kill(zygote, signal.SIGKILL)
    again = rt.wait_actor("app.b", state="running", restarts=2)
    probed = call(rt, "app.b", attempts(rt, port, other="a", write={}))
    assert probed["uid"] != 0 and probed["read"]["token"] != "ok" and probed["tcp"] != "ok"
    report = statistics(rt)["app.b"]["isolation"]
    assert report["launch"] == "exec (the app zygote died mid-launch)"
    assert (report["level"], report["not_enforced"]) == ("full", {})
    # a, forked by the zygote, died with it: its restart is forked from a new one
    assert rt.wait_actor("app.a", state="running", restarts=1)["pid"] != again["pid"]
    assert app_zygote_pid(rt) != zygote
    assert statistics(rt)["app.a"]["isolation"]["launch"] == "zygote"


def queued_requests(zygote: int) -> int:
    """Bytes waiting in the app zygote's sockets (`ss`: Recv-Q)."""
    listing = subprocess.run(["ss", "-x", "-a", "-p"], capture_output=True, text=True, check=True)
    return sum(
        int(line.split()[2]) for line in listing.stdout.splitlines() if f"pid={zygote}," in line
    )


def first_word_of_an_app_zygote(prefix: list[str], hidden: Path) -> tuple[dict[str, Any], int]:
    """Start an app zygote as the supervisor does (under `prefix`); what it says first, and
    its pid. It is killed after."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    args = [str(os.getpid()), str(theirs.fileno())]
    ours.send(json.dumps({"hide": [str(hidden)]}).encode())
    with (
        ours,
        subprocess.Popen(
            [*prefix, sys.executable, "-m", "actors.kernel.spawning.jail.app_zygote", *args],
            pass_fds=[theirs.fileno()],
            env=scrubbed_environment(os.environ),
            cwd="/",
            stdin=subprocess.DEVNULL,
        ) as zygote,
    ):
        theirs.close()
        ours.settimeout(60)
        try:
            return json.loads(ours.recv(1 << 20)), zygote.pid
        finally:
            zygote.kill()


def test_the_app_zygote_loads_only_what_every_app_loads(tmp_path: Path) -> None:
    ready, pid = first_word_of_an_app_zygote([], tmp_path)
    assert ready["type"] == "ready" and ready["pid"] == pid
    modules = set(ready["modules"])
    assert {"trio", "msgpack", "pydantic", "jsonschema", "apps.sdk", "contracts"} <= modules
    ours_only = [m for m in modules if m.split(".")[0] in ("actors", "apps", "contracts", "app")]
    assert [m for m in ours_only if m.partition(".")[2] and not m.startswith(SDK_AND_KERNEL)] == []
    assert "app" not in ours_only  # an app's package: only ever imported by the app
    third_party = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names)
    assert third_party - {"actors", "apps", "contracts"} <= DEPENDENCIES


@needs_root
def test_without_namespaces_the_app_zygote_says_it_is_unusable(tmp_path: Path) -> None:
    # Root without CAP_SYS_ADMIN (a default container): the supervisor then execs its apps.
    unprivileged = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"]
    said, _ = first_word_of_an_app_zygote(unprivileged, tmp_path)
    assert said == {"type": "unusable", "reason": "[Errno 1] unshare: Operation not permitted"}


# What the SDK and the actor process are made of; their dependencies (pydantic's, jsonschema's,
# trio's, the contracts' re2) and what the interpreter itself loads at start.
SDK_AND_KERNEL = ("actors.kernel", "actors.kernel.spawning.jail", "contracts", "apps.sdk")
DEPENDENCIES = {
    "trio", "outcome", "sniffio", "sortedcontainers", "idna", "msgpack",
    "pydantic", "pydantic_core", "annotated_types", "typing_extensions", "typing_inspection",
    "jsonschema", "jsonschema_specifications", "referencing", "rpds", "attr", "attrs", "re2",
    "_cython_3_3_0", "cython_runtime", "__main__", "_distutils_hack",
    "_sysconfigdata__linux_x86_64-linux-gnu", "__editable___lineup_runtime_0_1_0_finder",
}  # fmt: skip


# -- the rules around the launcher, without processes --------------------------------------


def test_an_isolated_app_is_told_no_secret_and_no_path() -> None:
    spec = ChildSpec.model_validate(jailed("app.x", "x") | {"config": {"app_scope": "x"}})
    assert spec.config == {"app_dir": ".", "app_scope": "x"}
    bad_configs = [
        {"token_file": "t"},
        {"nested": {"appserver_token": "t"}},
        {"data_dir": "d"},
        {"where": "/var/lib/lineup"},
        {"app_dir": "/var/lib/lineup/apps/x"},
    ]
    for config in bad_configs:
        with pytest.raises(ValueError, match="isolated app"):
            ChildSpec.model_validate(jailed("app.x", "x") | {"config": config})
    for private_dir in ("../x", "apps/x/../../y", "/tmp/x", "apps/x/y", "apps/"):
        with pytest.raises(ValueError, match="apps/<scope>"):
            ChildSpec.model_validate(
                {**jailed("app.x", "x"), "isolation": {"private_dir": private_dir}}
            )
    with pytest.raises(ValueError, match="private dirs"):
        RuntimeConfig.model_validate(
            {"children": [jailed("app.a", "same"), jailed("app.b", "same")]}
        )


def test_app_ids_are_distinct_and_kept(tmp_path: Path) -> None:
    ids = {scope: app_id(tmp_path, scope) for scope in ("a", "b", "c")}
    assert len(set(ids.values())) == 3
    assert all(0x7000_0000 <= n < 0x7FFE_0000 for n in ids.values())
    assert {scope: app_id(tmp_path, scope) for scope in ids} == ids
    other_runtime = tmp_path / "other"
    other_runtime.mkdir()
    assert app_id(other_runtime, "a") != ids["a"]


def test_the_environment_keeps_only_what_python_needs() -> None:
    env = scrubbed_environment(
        {"PATH": "/usr/bin", "LINEUP_DATA_DIR": "/d", "X_TOKEN": "t", "PYTHONPATH": "rel:/abs"},
        home="/tmp/app",
    )
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/tmp/app"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/abs"]
    assert "LINEUP_DATA_DIR" not in env and "X_TOKEN" not in env


def test_the_launcher_reports_what_it_could_not_enforce() -> None:
    report = Report()
    report.ok("network", "namespace of its own, no interface up")
    report.missing("identity", "not root: runs as the supervisor's uid 1000")
    assert report.record([0, 1, 2, 5])["level"] == "partial"
    nothing = Report()
    nothing.missing("network", "no namespace (Operation not permitted)")
    assert nothing.record([0, 1, 2, 5])["level"] == "none"


# -- the fallbacks: the launcher alone, where Linux allows less ----------------------------


def launch(
    tmp_path: Path, prefix: list[str], script: str, cgroups: tuple[Path, ...] = ()
) -> tuple[dict[str, Any], list[str], str]:
    """Run the launcher under `prefix` with `/bin/sh -c script` as the child: its report,
    the lines the child printed, and what the launcher logged."""
    assert not prefix or shutil.which(prefix[0]), f"{prefix[0]} (util-linux) is needed"
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    report_r, report_w = os.pipe()
    ours, theirs = socket.socketpair()
    environment = scrubbed_environment(os.environ)
    plan = JailPlan(
        data / "apps" / "z", 0x7000_1234, 0x7000_1234, (data,), environment, cgroups=cgroups
    )
    command = plan.command(
        ["/bin/sh", "-c", script], channel_fd=theirs.fileno(), report_fd=report_w
    )
    with ours, theirs:
        done = subprocess.run(
            [*prefix, *command],
            pass_fds=[report_w, theirs.fileno()],
            env=plan.env,
            cwd="/",
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    os.close(report_w)
    with os.fdopen(report_r) as report:
        return json.loads(report.read()), done.stdout.splitlines(), done.stderr


PROBE_SCRIPT = "id -u; readlink /proc/self/ns/net; pwd; echo x > own && echo wrote"


def test_without_root_a_user_namespace_confines_all_but_the_identity(tmp_path: Path) -> None:
    # Inside a user namespace that maps 4242 (to us, outside), the launcher is not root:
    # it takes the unprivileged path for real.
    prefix = ["unshare", "--map-user=4242", "--map-group=4242"]
    report, out, logged = launch(tmp_path, prefix, PROBE_SCRIPT)
    assert report["level"] == "partial"
    assert set(report["enforced"]) == {
        "network", "ipc", "pid_namespace", "proc", "filesystem", "read_only", "rlimits",
        "no_new_privs",
    }  # fmt: skip
    assert set(report["not_enforced"]) == {"identity"}
    assert "jail: NOT enforced: identity" in logged
    uid, netns, cwd, wrote = out
    assert (uid, cwd, wrote) == ("4242", "/tmp/app", "wrote")
    assert netns != os.readlink("/proc/self/ns/net")


@needs_root
def test_without_namespaces_the_launcher_says_so_and_still_drops_root(tmp_path: Path) -> None:
    # Root without CAP_SYS_ADMIN (a default container) may not unshare.
    report, out, logged = launch(
        tmp_path, ["setpriv", "--bounding-set", "-sys_admin"], PROBE_SCRIPT
    )
    assert report["level"] == "partial"
    assert set(report["not_enforced"]) == {
        "network", "ipc", "pid_namespace", "filesystem", "read_only",
    }  # fmt: skip
    assert set(report["enforced"]) == {"identity", "rlimits", "no_new_privs"}
    assert "jail: NOT enforced: network" in logged
    uid, netns, _, wrote = out
    assert (uid, wrote) == (str(0x7000_1234), "wrote")
    assert netns == os.readlink("/proc/self/ns/net")


@pytest.fixture
def v1_cgroups() -> Iterator[tuple[Path, ...]]:
    """A cgroup of the test's own in the pids and memory v1 hierarchies, removed after."""
    own = dict(line.split(":", 2)[1:] for line in Path("/proc/self/cgroup").read_text().split())
    made = []
    for controller in ("pids", "memory"):
        mount = Path("/sys/fs/cgroup") / controller
        if controller in own and mount.is_dir():
            made.append(mount / own[controller].lstrip("/") / f"lineup-test-{new_id()}")
            made[-1].mkdir()
    if not made:
        pytest.fail("no cgroup v1 pids or memory hierarchy is mounted at /sys/fs/cgroup")
    try:
        yield tuple(made)
    finally:
        for path in made:
            path.rmdir()  # the app and its launcher have ended: empty


@needs_root
def test_the_app_is_in_its_cgroups_before_its_code_runs(
    tmp_path: Path, v1_cgroups: tuple[Path, ...]
) -> None:
    # The launcher moves itself and the app's init while the init builds the view; the
    # app's first command already finds itself (pid 1 of its namespace) in every one.
    report, out, _ = launch(tmp_path, [], "cat /proc/$$/cgroup", v1_cgroups)
    assert report["level"] == "full", report
    assert "cgroup" in report["enforced"]
    seen = {line.split(":", 2)[1]: line.split(":", 2)[2] for line in out}
    for path in v1_cgroups:
        controller = path.relative_to("/sys/fs/cgroup").parts[0]
        assert seen[controller].endswith(f"/{path.name}"), (controller, seen)


@needs_root
def test_a_cgroup_it_cannot_join_is_reported_and_the_app_still_jailed(tmp_path: Path) -> None:
    missing = (tmp_path / "no-such-cgroup",)
    report, out, logged = launch(tmp_path, [], "id -u", missing)
    assert report["level"] == "partial"
    assert set(report["not_enforced"]) == {"cgroup"}
    assert "jail: NOT enforced: cgroup: cannot join" in logged
    assert out == [str(0x7000_1234)]
