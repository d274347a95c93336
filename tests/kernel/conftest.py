from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import Runtime

MakeRuntime = Callable[..., Runtime]


class RuntimeFactory:
    """Builds (does not start) supervisors on fresh data dirs under `base`."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.made: list[Runtime] = []

    def __call__(self, config: dict[str, Any], *, name: str = "rt") -> Runtime:
        where = self.base / f"{name}-{len(self.made)}"
        where.mkdir(parents=True)
        runtime = Runtime(where / "data", config, log_dir=where)
        self.made.append(runtime)
        return runtime

    def cleanup(self) -> None:
        """SIGTERM, then SIGKILL, every supervisor made; no actor process may outlive them."""
        orphans = [pid for runtime in self.made for pid in runtime.cleanup()]
        assert not orphans, f"actor processes outlived their supervisor: {orphans}"


@pytest.fixture
def make_runtime(tmp_path: Path) -> Iterator[MakeRuntime]:
    factory = RuntimeFactory(tmp_path / "runtimes")
    yield factory
    factory.cleanup()


@pytest.fixture(scope="module")
def make_module_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRuntime]:
    factory = RuntimeFactory(tmp_path_factory.mktemp("module-runtimes"))
    yield factory
    factory.cleanup()
