"""The hostile app leaves processes behind (a detached grandchild, a child holding its
channel): none of them outlives the app's disable, its removal or the runtime's death, and
disabling it is not held up by them."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.runtime.helpers import wait_for

from .conftest import SCOPE, Hostile


def _app_uid(data_dir: Path) -> int:
    return int(json.loads((data_dir / "app_ids.json").read_text())[SCOPE])


def _processes_of(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                uids = next(line for line in status if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue  # gone meanwhile
        if int(uids.split()[1]) == uid:
            pids.append(int(entry))
    return pids


async def _escaped(hostile: Hostile) -> int:
    """Launch the app with the escape attack; the uid whose processes are now three or more."""
    await hostile.launch()
    report = await hostile.wait_report(60)
    assert "holder" in report["results"]["escape"], report
    uid = _app_uid(hostile.data_dir)
    await wait_for(lambda: len(_processes_of(uid)) >= 3, 10, "the app and what it forked")
    return uid


async def test_nothing_of_the_app_outlives_disable_remove_or_the_runtime(hostile: Hostile) -> None:
    stack = hostile.stack
    await stack.start_appserver()
    runtime = await stack.start_runtime()
    await hostile.install({"attacks": ["escape"]})
    uid = await _escaped(hostile)

    started = time.monotonic()
    await hostile.app("disable", SCOPE)
    assert time.monotonic() - started < 5  # the CLI's own start included
    await wait_for(lambda: not _processes_of(uid), 2, "no process of the app after disable")
    assert runtime.actors().get(f"app.{SCOPE}", {}).get("state") in (None, "stopped")

    await hostile.app("enable", SCOPE)
    (hostile.app_dir / "report.json").unlink()
    await _escaped(hostile)
    await hostile.app("remove", SCOPE, "--yes")
    await wait_for(lambda: not _processes_of(uid), 2, "no process of the app after remove")

    await hostile.install({"attacks": ["escape"]})
    await _escaped(hostile)
    assert runtime.process is not None
    os.kill(runtime.process.pid, signal.SIGKILL)
    # The kernel kills them at once; their exits are reaped in turn, up the chain of parents
    # that died with the runtime, which takes longer on a machine busy with other work.
    await wait_for(lambda: not _processes_of(uid), 10, "no process of the app after kill -9")
