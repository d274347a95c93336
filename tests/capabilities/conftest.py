"""Capabilities end to end: a reference AppServer and an agent, the runtime as a real process
tree, and the keeper app (built, signed and installed through the CLI) asking the capability
gateway for effects when the agent's tool calls tell it to; the user answers the consent
cards through the host, as the terminal chat does."""

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
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "keepsmith")
    assert code == 0, err
    bundle = root / "keeper.bundle"
    code, _, err = lineup(
        "app", "build", REPO_ROOT / "tests" / "capabilities" / "keeper", "--out", bundle
    )
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", root / "keys" / "keepsmith.key")
    assert code == 0, err
    return bundle, root / "keys" / "keepsmith.pub"
