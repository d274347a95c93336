"""The `lineup` command line, run as the app's author runs it: each step of a test is a
command a person could type, in a subprocess of the test's interpreter."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import trio


class AppTestError(Exception):
    """A step of the test's setup failed: the command, and what it said."""


async def lineup(*args: str | Path, timeout: float = 120) -> tuple[int, str, str]:
    """`lineup ARGS`: exit status, stdout, stderr."""
    command = [sys.executable, "-m", "lineup.cli", *map(str, args)]
    with trio.fail_after(timeout):
        done = await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def lineup_ok(*args: str | Path) -> dict[str, Any]:
    """`lineup ARGS --json` that must succeed: what it printed."""
    code, out, err = await lineup(*args, "--json")
    if code != 0:
        shown = " ".join(map(str, args))
        raise AppTestError(f"`lineup {shown}` exited {code}: {(err or out).strip()}")
    value = json.loads(out)
    assert isinstance(value, dict)
    return value
