"""The bench's apps (`bench/toolapp`, `bench/speechapp`), built and signed with the real
`lineup app` CLI."""

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


def build_signed_app(work: Path, package: str = PACKAGE, key_name: str = KEY_NAME) -> SignedApp:
    """A fresh key pair, and the bench's app `package` built and signed into `work` (from a
    copy, so that the build's import leaves nothing behind in the source tree)."""
    spec = importlib.util.find_spec(package)  # located, not imported
    if spec is None or spec.origin is None:
        raise BenchError(f"the bench's app {package} is not importable")
    name = package.rsplit(".", 1)[-1]
    source = work / "source" / name
    shutil.copytree(Path(spec.origin).parent, source, ignore=shutil.ignore_patterns("__pycache__"))
    keys = work / "keys"
    bundle = work / f"{name}.bundle"
    lineup("app", "keygen", "--out", keys, "--name", key_name)
    lineup("app", "build", source, "--out", bundle)
    lineup("app", "sign", bundle, "--key", keys / f"{key_name}.key")
    return SignedApp(bundle, keys / f"{key_name}.pub")
