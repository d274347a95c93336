"""A runtime on the real default children (offline: no AppServer), signed pomodoro
bundles in two versions, and the `lineup app` CLI run as the user runs it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actors import runtime_children
from actors.app_manager.registry import read_apps
from tests.kernel.conftest import RuntimeFactory
from tests.kernel.helpers import REPO_ROOT, Runtime, wait_until
from tests.runtime.conftest import stack  # noqa: F401 - the runtime tests' AppServer stack


def lineup(*args: str | Path, timeout: float = 120) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "lineup.cli", *map(str, args)],
        capture_output=True,
        cwd=REPO_ROOT,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@dataclass(frozen=True)
class Bundles:
    v1: Path
    v2: Path
    v3: Path
    untrusted: Path
    keys: Path  # publisher.pub is the trusted key


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Bundles:
    root = tmp_path_factory.mktemp("bundles")
    for name in ("publisher", "stranger"):
        assert lineup("app", "keygen", "--out", root / "keys", "--name", name)[0] == 0
    source = root / "pomodoro"
    shutil.copytree(
        REPO_ROOT / "apps" / "pomodoro", source, ignore=shutil.ignore_patterns("__pycache__")
    )
    made = {}
    for version in ("0.1.0", "0.2.0", "0.3.0"):
        app = source / "_app.py"
        app.write_text(app.read_text().replace('version="0.1.0"', f'version="{version}"'))
        out = root / f"pomodoro-{version}.bundle"
        code, _, err = lineup("app", "build", source, "--out", out)
        assert code == 0, err
        made[version] = out
        app.write_text(app.read_text().replace(f'version="{version}"', 'version="0.1.0"'))
    untrusted = root / "pomodoro-untrusted.bundle"
    shutil.copy(made["0.1.0"], untrusted)
    for path, key in (
        (made["0.1.0"], "publisher"),
        (made["0.2.0"], "publisher"),
        (made["0.3.0"], "publisher"),
        (untrusted, "stranger"),
    ):
        assert lineup("app", "sign", path, "--key", root / "keys" / f"{key}.key")[0] == 0
    return Bundles(made["0.1.0"], made["0.2.0"], made["0.3.0"], untrusted, root / "keys")


class Apps:
    """One runtime and the CLI against it."""

    def __init__(self, runtime: Runtime, keys: Path) -> None:
        self.runtime = runtime
        self.data_dir = runtime.data_dir
        trusted = self.data_dir / "trusted_keys"
        trusted.mkdir(parents=True, exist_ok=True)
        shutil.copy(keys / "publisher.pub", trusted / "publisher.pub")

    def app(self, *args: str | Path) -> tuple[int, dict[str, Any]]:
        code, out, err = lineup("app", *args, "--data-dir", self.data_dir, "--json")
        assert out, err
        return code, json.loads(out)

    def registry(self) -> dict[str, Any]:
        return read_apps(self.data_dir)

    def record(self, scope: str) -> dict[str, Any] | None:
        return next((r for r in self.registry()["records"] if r["app_scope"] == scope), None)

    def cache_entries(self) -> list[str]:
        root = self.data_dir / "bundles"
        return sorted(p.name for p in root.iterdir()) if root.is_dir() else []

    def wait_ready(self) -> None:
        wait_until(lambda: self.registry()["settings"].get("focus_stack"), 30, "the app manager")


def start_apps(
    factory: RuntimeFactory, keys: Path, env: dict[str, str] | None = None, **settings: Any
) -> Apps:
    runtime = factory({}, name="apps")
    config = runtime_children.default_config(runtime.data_dir).model_dump(mode="json")
    config.update(max_restarts=100, max_seconds=1.0, backoff_max=0.2)
    config.update(settings)
    runtime.start(config=config, env=env)
    apps = Apps(runtime, keys)
    apps.wait_ready()
    return apps


@pytest.fixture
def factory(tmp_path: Path) -> Iterator[RuntimeFactory]:
    made = RuntimeFactory(tmp_path / "runtimes")
    yield made
    made.cleanup()
