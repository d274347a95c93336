"""The bench's app (`bench/toolapp`), built and signed with the real `lineup app` CLI."""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

from ._apps_baselines import _lineup as lineup
from ._procs import BenchError

PACKAGE = "bench.toolapp"
KEY_NAME = "bench-tools"

__all__ = ["SignedApp", "build_signed_app", "lineup"]


@dataclass(frozen=True)
class SignedApp:
    bundle: Path
    public_key: Path


def build_signed_app(work: Path) -> SignedApp:
    """A fresh key pair, and `bench/toolapp` built and signed into `work` (from a copy, so
    that the build's import leaves nothing behind in the source tree)."""
    spec = importlib.util.find_spec(PACKAGE)  # located, not imported
    if spec is None or spec.origin is None:
        raise BenchError(f"the bench's app {PACKAGE} is not importable")
    source = work / "source" / "toolapp"
    shutil.copytree(Path(spec.origin).parent, source, ignore=shutil.ignore_patterns("__pycache__"))
    keys = work / "keys"
    bundle = work / "benchtool.bundle"
    lineup("app", "keygen", "--out", keys, "--name", KEY_NAME)
    lineup("app", "build", source, "--out", bundle)
    lineup("app", "sign", bundle, "--key", keys / f"{KEY_NAME}.key")
    return SignedApp(bundle, keys / f"{KEY_NAME}.pub")
