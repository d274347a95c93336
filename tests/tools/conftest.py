"""Agent tools end to end: a reference AppServer, the runtime as a real process tree, an
agent on a real WebSocket, and signed bundles (pomodoro, and the toolbox whose tools
behave in every way a tool can) installed through the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.app_manager.conftest import bundles, lineup  # noqa: F401 - the signed pomodoro bundles
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.conftest import stack  # noqa: F401 - the runtime tests' AppServer stack


@pytest.fixture(scope="session")
def toolbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the signed toolbox bundle, its publisher's public key)."""
    root = tmp_path_factory.mktemp("toolbox")
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "toolsmith")
    assert code == 0, err
    bundle = root / "toolbox.bundle"
    source = REPO_ROOT / "tests" / "tools" / "toolbox"
    code, _, err = lineup("app", "build", source, "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", root / "keys" / "toolsmith.key")
    assert code == 0, err
    return bundle, root / "keys" / "toolsmith.pub"


@pytest.fixture(scope="session")
def toolbox_update(toolbox: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toolbox at version 1.1.0, signed by the same publisher."""
    root = tmp_path_factory.mktemp("toolbox-update")
    source = root / "toolbox"
    shutil.copytree(
        REPO_ROOT / "tests" / "tools" / "toolbox",
        source,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    app = source / "_app.py"
    app.write_text(app.read_text().replace('version="1.0.0"', 'version="1.1.0"'))
    bundle = root / "toolbox-1.1.0.bundle"
    code, _, err = lineup("app", "build", source, "--out", bundle)
    assert code == 0, err
    key = toolbox[1].with_suffix(".key")
    code, _, err = lineup("app", "sign", bundle, "--key", key)
    assert code == 0, err
    return bundle
