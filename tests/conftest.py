"""What every test shares: where its files go.

The tests' data dirs hold the runtime's Unix sockets, whose paths AF_UNIX limits to 108
bytes. pytest's own temporary root is long (`/tmp/pytest-of-USER/pytest-N/`) and each test
worker adds its name to it, so the session makes a short root of its own, one per run, and
removes it when every test passed (what a failure left is kept for a look).

Every process the suite starts keeps the compiled modules it imports (Python's `__pycache__`).

The runtimes the tests start keep their AppServer token in a file, never in the keyring of
the person running them: the session bus is hidden from them, and the keyring tests start a
bus and a keyring of their own (`tests/runtime/keyring.py`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

_MADE = pytest.StashKey[Path]()  # the root this session made


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)
    # The suite starts thousands of processes that import the project (supervisors, actors,
    # apps, the CLI): they keep its compiled modules, and pytest its rewritten tests, even
    # where the shell says not to write them, instead of compiling it all again in each.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    if config.option.basetemp is None and not _is_worker(config):
        config.option.basetemp = tempfile.mkdtemp(prefix="lineup-")
        config.stash[_MADE] = Path(config.option.basetemp)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    made = session.config.stash.get(_MADE, None)
    if made is not None and exitstatus == 0:
        shutil.rmtree(made, ignore_errors=True)
