"""The sample app's signed bundle, made with the real `lineup app` CLI, and what
`lineup bench apps` measures in the bench's own process: bundle verification beside the
bare cryptographic work it contains, the bare exec of an SDK process and the bare fork of
an interpreter that has the SDK loaded.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._procs import BenchError

SAMPLE_APP = "pomodoro"
KEY_NAME = "bench"
CLI_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class SignedSample:
    bundle: Path
    public_key: Path
    secret_key: Path


def _lineup(*args: str | Path) -> None:
    """`lineup ARGS` in a new interpreter, as the user runs it; BenchError if it fails."""
    command = [sys.executable, "-m", "lineup.cli", *map(str, args)]
    done = subprocess.run(command, capture_output=True, timeout=CLI_TIMEOUT_S, check=False)
    if done.returncode != 0:
        # An operation the runtime refused says why on stdout, as its success would.
        said = done.stderr + done.stdout
        tail = said.decode(errors="replace")[-2000:]
        raise BenchError(f"lineup {' '.join(map(str, args))} exited {done.returncode}\n{tail}")


def build_signed_sample(work: Path) -> SignedSample:
    """A key pair, and `apps/pomodoro` built and signed into `work` (from a copy, so that
    the build's import leaves nothing behind in the source tree)."""
    spec = importlib.util.find_spec(f"apps.{SAMPLE_APP}")  # not imported: only located
    if spec is None or spec.origin is None:
        raise BenchError(f"the sample app apps.{SAMPLE_APP} is not importable")
    source = work / "source" / SAMPLE_APP
    shutil.copytree(Path(spec.origin).parent, source, ignore=shutil.ignore_patterns("__pycache__"))
    keys = work / "keys"
    bundle = work / f"{SAMPLE_APP}.bundle"
    _lineup("app", "keygen", "--out", keys, "--name", KEY_NAME)
    _lineup("app", "build", source, "--out", bundle)
    _lineup("app", "sign", bundle, "--key", keys / f"{KEY_NAME}.key")
    return SignedSample(bundle, keys / f"{KEY_NAME}.pub", keys / f"{KEY_NAME}.key")


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1e3


class Verification:
    """`verify_bundle` beside the bare minimum of its cryptographic work: the file read
    and hashed (SHA-256) once, and one Ed25519 signature checked over a small message."""

    SMALL_MESSAGE = b"lineup bench apps: the signed data of a small bundle, roughly".ljust(64)

    def __init__(self, sample: SignedSample) -> None:
        from actors.app_manager import load_signing_key, load_trusted_keys

        self.bundle = sample.bundle
        self.trusted_keys: Mapping[str, Any] = load_trusted_keys([sample.public_key])
        signing_key = load_signing_key(sample.secret_key)
        self.verify_key = signing_key.verify_key
        self.signature = signing_key.sign(self.SMALL_MESSAGE).signature  # 64 bytes

    def ours_ms(self) -> float:
        from actors.app_manager import verify_bundle

        started = time.perf_counter()
        verify_bundle(self.bundle, self.trusted_keys)
        return _ms_since(started)

    def bare_ms(self) -> float:
        started = time.perf_counter()
        hashlib.sha256(self.bundle.read_bytes()).digest()
        self.verify_key.verify(self.SMALL_MESSAGE, self.signature)
        return _ms_since(started)


def bare_exec_ms() -> float:
    """A fresh interpreter that imports the SDK and exits: the floor of an exec'd app."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "import apps.sdk"],
        capture_output=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    elapsed = _ms_since(started)
    if done.returncode != 0:
        raise BenchError(f"python -c 'import apps.sdk' failed: {done.stderr.decode()[-2000:]}")
    return elapsed


def bare_fork_ms() -> float:
    """A fork of this interpreter, the SDK loaded, until the child says it runs: the floor
    of an app forked from a preloaded parent (no jail, no actor)."""
    importlib.import_module("apps.sdk._bundled")
    ready_r, ready_w = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.write(ready_w, b"!")
        os._exit(0)
    os.read(ready_r, 1)
    elapsed = _ms_since(started)
    os.close(ready_r)
    os.close(ready_w)
    os.waitpid(pid, 0)
    return elapsed
