"""The jail works wherever the runtime is installed: a checkout in a private directory.

`umask 077`, `mktemp -d` or a private home put the project, and so its venv and its
interpreter, below a directory of mode 0700, which an app's uid may not search. Here a
copy of the project and a venv of its own (its interpreter a copy, below that directory)
run a real runtime with a jailed probe, which must start and answer; and an app whose
process cannot start fails its start at once, with the reason from its log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import MakeRuntime
from .helpers import REPO_ROOT, Runtime, child, outcomes, wait_until

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the full jail needs root")

PROBE = "tests.kernel.jailed_actors:Probe"
STARTER = "tests.kernel.starting_actors:Starter"
COPIED = (
    "actors",
    "apps",
    "contracts",
    "lineup",
    "supervisor.py",
    "tests/__init__.py",
    "tests/kernel",
)


def make_checkout(parent: Path, *, private_files: bool) -> Path:
    """A copy of the project and a venv of its own in a new 0700 directory below `parent`.

    The venv is real (`python -m venv --copies`: its interpreter is a copy, below the 0700
    directory), without pip: its site-packages gets a .pth naming this venv's, so nothing
    is installed. `private_files`: made as under `umask 077`, every file 0600 or 0700.
    """
    root = Path(tempfile.mkdtemp(prefix="checkout-", dir=parent))
    assert root.stat().st_mode & 0o777 == 0o700
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        source, dest = REPO_ROOT / name, root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, dest, ignore=ignore)
        else:
            shutil.copy2(source, dest)
    venv = root / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    old_umask = os.umask(0o077 if private_files else 0o022)
    try:
        subprocess.run(
            [base_python, "-m", "venv", "--copies", "--without-pip", str(venv)],
            check=True,
            timeout=60,
        )
    finally:
        os.umask(old_umask)
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    assert site.is_dir(), site
    (site / "main-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    if private_files:
        for path in [root, *root.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & 0o700)
    return root


def interpreter(root: Path) -> Path:
    python = root / "venv" / "bin" / "python"
    assert python.resolve().is_relative_to(root), "the interpreter must lie below the checkout"
    return python


class CheckoutRuntime(Runtime):
    """A supervisor run from a checkout: its interpreter, its code, its working directory."""

    def __init__(self, root: Path, config: dict[str, Any], *, umask: int) -> None:
        log_dir = root / "run"
        log_dir.mkdir()
        super().__init__(root / "data", config, log_dir=log_dir)
        self.root = root
        self.umask = umask

    def start(
        self,
        *,
        config: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        wait: bool = True,
    ) -> Runtime:
        assert self.process is None
        self.runs += 1
        config_path = self.log_dir / "config.json"
        config_path.write_text(json.dumps(self.config))
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRT"))}
        full_env["PYTHONPATH"] = str(self.root)
        python, config = str(interpreter(self.root)), str(config_path)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [python, "-m", "supervisor", "--data-dir", str(self.data_dir), "--config", config],
                cwd=self.root,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                umask=self.umask,
            )
        self.started.append(self.process)
        if wait:
            self.wait_running()
        return self


@pytest.fixture
def checkouts(tmp_path: Path) -> Iterator[list[CheckoutRuntime]]:
    """Runtimes started from checkouts; every one stopped, and its checkout removed."""
    made: list[CheckoutRuntime] = []
    yield made
    orphans = [pid for runtime in made for pid in runtime.cleanup()]
    for runtime in made:
        shutil.rmtree(runtime.root, ignore_errors=True)
    assert not orphans, f"actor processes outlived their supervisor: {orphans}"


def probe_the_jailed_app(
    parent: Path, checkouts: list[CheckoutRuntime], *, private_files: bool
) -> dict[str, Any]:
    root = make_checkout(parent, private_files=private_files)
    calls = root / "run" / "caller.db"
    # An installed app's verified code in the bundle cache's shape. With private files, its
    # directories are open and its files its owner's alone, as a umask of 077 cuts a
    # cache's files when it leaves their modes to it: the jail checks every file the app
    # reads, not only the directory it mounts.
    code_dir = f"bundles/{'c0de' * 16}/app"
    code = root / "data" / code_dir
    (code / "ui").mkdir(parents=True)
    for name in ("__init__.py", "ui/index.html"):
        (code / name).write_text("# the app's code\n")
        (code / name).chmod(0o400 if private_files else 0o444)
    for directory in (code / "ui", code):
        directory.chmod(0o555)
    isolation = {"private_dir": "apps/probe", "code_dir": code_dir}
    config = {
        "children": [
            child("caller", "Caller", config={"db": str(calls)}),
            {"name": "app.probe", "target": PROBE, "isolation": isolation},
        ]
    }
    rt = CheckoutRuntime(root, config, umask=0o077 if private_files else 0o022)
    checkouts.append(rt)
    rt.start()
    data = rt.data_dir
    (data / "secret.txt").write_text("the runtime's\n")
    key = root / "keys" / "me.key"  # beside the code, as `lineup app keygen` leaves one
    key.parent.mkdir(mode=0o700)
    key.write_text("a signing key\n")
    key.chmod(0o600)
    body = {
        "read": {
            "secret": str(data / "secret.txt"),
            "key": str(key),
            "code": str(root / "actors" / "__init__.py"),
            "app_code": "/tmp/app-code/app/__init__.py",
        },
        "databases": {"mailbox": str(data / "mailbox.db")},
        "list": {"data_dir": str(data), "checkout": str(root)},
        "write": {"own": "mine.txt", "code": str(root / "actors" / "mine.py")},
        "port": 9,
    }
    rt.send("caller", "do_call", {"key": "k", "to": "app.probe", "type": "probe", "body": body})
    found = wait_until(lambda: outcomes(calls).get("k"), 30, "the jailed app's answer")
    outcome, got, code = found
    assert outcome == "ok", f"{code}:\n{(data / 'logs' / 'app.probe.log').read_text()}"
    assert got["uid"] not in (0, os.getuid())
    # it reads the code it runs, in place, and nothing of the runtime's
    assert got["read"]["code"] == "ok"
    assert got["read"]["app_code"] == "ok" and got["env"]["LINEUP_APP_CODE"] == "/tmp/app-code"
    assert got["read"]["secret"] != "ok" and got["databases"]["mailbox"] != "ok"
    assert got["read"]["key"] != "ok"
    assert got["list"]["data_dir"] != "ok"
    # nothing of the checkout is writable, and nothing of it was opened up for real
    assert "Read-only file system" in got["write"]["code"]
    assert got["write"]["own"] == "ok"
    assert root.stat().st_mode & 0o777 == 0o700
    records = rt.control({"type": "actors", "stats": True})["actors"]
    report = next(r for r in records if r["name"] == "app.probe")["statistics"]["isolation"]
    assert report["level"] == "full", report
    return report


@needs_root
def test_a_jailed_app_runs_from_a_checkout_in_a_private_directory(
    checkouts: list[CheckoutRuntime],
) -> None:
    report = probe_the_jailed_app(Path(tempfile.gettempdir()), checkouts, private_files=False)
    # its files are open to others: mounted back as they are, none shown as its own
    assert "as its own" not in report["enforced"]["filesystem"]


@needs_root
def test_a_jailed_app_runs_from_a_checkout_made_under_umask_077(
    checkouts: list[CheckoutRuntime],
) -> None:
    # Not below /tmp this time, which the jail covers anyway: a private directory at the
    # top of the file system, as a private home would be.
    parent = Path(tempfile.mkdtemp(prefix="lineup-home-", dir="/"))
    try:
        report = probe_the_jailed_app(parent, checkouts, private_files=True)
        assert "owner-only code location(s) shown read-only as its own" in str(report)
        # nothing of the code was opened up on the real file system, by the jail or the runtime
        root = checkouts[0].root
        code = [root / "venv", *(root / name for name in COPIED)]
        opened = [p for c in code for p in [c, *c.rglob("*")] if not p.is_symlink()]
        assert not [p for p in opened if p.lstat().st_mode & 0o077]
        assert parent.stat().st_mode & 0o777 == 0o700
    finally:
        shutil.rmtree(parent, ignore_errors=True)


@needs_root
def test_an_app_that_cannot_start_fails_its_start_at_once_with_the_reason(
    make_runtime: MakeRuntime,
) -> None:
    rt = make_runtime({})
    out = rt.log_dir / "starts.jsonl"
    starter = {"name": "boss", "target": STARTER, "config": {"out": str(out)}}
    rt.config = {"app_supervisor": "boss", "children": [starter]}
    rt.start()
    missing = "tests.kernel.no_such_module:App"
    spec = {"name": "app.broken", "target": missing, "isolation": {"private_dir": "apps/broken"}}
    rt.send("boss", "start", spec)
    line = wait_until(lambda: out.exists() and out.read_text().strip(), 60, "the start's answer")
    outcome = json.loads(line)
    # answered at once: its first process ended before it was ready, and is not restarted
    assert outcome["ok"] is True and outcome["state"] == "stopped", outcome
    assert outcome["seconds"] < 5.0, outcome
    record = rt.actors()["app.broken"]
    assert record["restarts"] == 0 and record["pid"] is None, record
    # the reason, from the last lines of its log, where `lineup debug actors` shows it
    assert record["last_exit"].startswith("did not start (exited with status 1): "), record
    assert "No module named 'tests.kernel.no_such_module'" in record["last_exit"], record
    assert rt.status()["state"] == "running"  # a start that failed is no degraded runtime
    # the next start is tried again (and fails again, as promptly)
    rt.send("boss", "start", spec)
    wait_until(lambda: len(out.read_text().splitlines()) == 2, 60, "the second answer")
    again = json.loads(out.read_text().splitlines()[1])
    assert again["state"] == "stopped" and again["seconds"] < 5.0, again
