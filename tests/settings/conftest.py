"""The settings app end to end: a reference AppServer, the runtime as a real process tree,
an agent on a real WebSocket, and the keeper app (which keeps session data, an artifact and
diagnostics) built, signed and installed through the CLI like any app."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app_manager.conftest import lineup
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.conftest import stack  # noqa: F401 - the runtime tests' AppServer stack


@pytest.fixture(scope="session")
def keeper(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the signed keeper bundle, its publisher's public key)."""
    root = tmp_path_factory.mktemp("keeper")
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "archivist")
    assert code == 0, err
    bundle = root / "keeper.bundle"
    source = REPO_ROOT / "tests" / "settings" / "keeper"
    code, _, err = lineup("app", "build", source, "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", root / "keys" / "archivist.key")
    assert code == 0, err
    return bundle, root / "keys" / "archivist.pub"


@pytest.fixture(scope="session")
def asker(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the signed bundle of the capability tests' app, which asks for capabilities when the
    agent tells it to, and its publisher's public key)."""
    root = tmp_path_factory.mktemp("asker")
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "asker")
    assert code == 0, err
    bundle = root / "asker.bundle"
    source = REPO_ROOT / "tests" / "capabilities" / "keeper"
    code, _, err = lineup("app", "build", source, "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", root / "keys" / "asker.key")
    assert code == 0, err
    return bundle, root / "keys" / "asker.pub"
