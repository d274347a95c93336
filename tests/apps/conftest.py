"""The pomodoro bundle, built, keyed and signed once per session by the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nacl.signing
import pytest

from actors.app_manager._bundle import load_signing_key, load_trusted_keys

REPO = Path(__file__).resolve().parents[2]


def lineup_app(*args: str | Path) -> tuple[int, str, str]:
    """`lineup app ARGS` in a subprocess: exit status, stdout, stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "lineup.cli", "app", *map(str, args)],
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def lineup_app_json(*args: str | Path) -> tuple[int, dict[str, Any]]:
    code, out, err = lineup_app(*args, "--json")
    assert not err, err
    return code, json.loads(out)


@dataclass(frozen=True)
class Signed:
    """A signed pomodoro bundle and the keys around it."""

    path: Path
    key: nacl.signing.SigningKey
    trusted: dict[str, nacl.signing.VerifyKey]
    other_key: nacl.signing.SigningKey  # valid, but in no trust store

    def data(self) -> bytes:
        return self.path.read_bytes()


@pytest.fixture(scope="session")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    root = tmp_path_factory.mktemp("signed")
    for name in ("publisher", "stranger"):
        assert lineup_app("keygen", "--out", root / "keys", "--name", name)[0] == 0
    bundle = root / "pomodoro.bundle"
    assert lineup_app("build", "apps/pomodoro", "--out", bundle)[0] == 0
    assert lineup_app("sign", bundle, "--key", root / "keys" / "publisher.key")[0] == 0
    return Signed(
        path=bundle,
        key=load_signing_key(root / "keys" / "publisher.key"),
        trusted=load_trusted_keys([root / "keys" / "publisher.pub"]),
        other_key=load_signing_key(root / "keys" / "stranger.key"),
    )
