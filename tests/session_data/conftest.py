"""Session data end to end: a reference AppServer, the runtime as a real process tree, an
agent on a real WebSocket, and the notebook app (its state in its session data) built,
signed and installed through the CLI like any app."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app_manager.conftest import lineup
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.conftest import stack  # noqa: F401 - the runtime tests' AppServer stack


@pytest.fixture(scope="session")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the signed notebook bundle, its publisher's public key)."""
    root = tmp_path_factory.mktemp("notebook")
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "scribe")
    assert code == 0, err
    bundle = root / "notebook.bundle"
    source = REPO_ROOT / "tests" / "session_data" / "notebook"
    code, _, err = lineup("app", "build", source, "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", root / "keys" / "scribe.key")
    assert code == 0, err
    return bundle, root / "keys" / "scribe.pub"
