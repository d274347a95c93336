"""A surface is one of its bundle's signed files: a bundle declaring a surface it lacks is
refused (`bundle_missing_file`), before anything of it is cached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.app_manager import (
    BundleError,
    load_signing_key,
    load_trusted_keys,
    sign_bundle,
    verify_bundle,
    write_bundle,
    write_keypair,
)
from contracts import Code
from tests.contracts._data import FIXTURES, load

MANIFEST = load(FIXTURES / "manifests" / "valid" / "canvas-surface.json")


def _signed(tmp_path: Path, files: dict[str, bytes]) -> Path:
    secret, _ = write_keypair(tmp_path / "keys", "pat")
    bundle = tmp_path / "canvas.bundle"
    write_bundle(bundle, manifest=json.dumps(MANIFEST).encode(), files=files)
    sign_bundle(bundle, load_signing_key(secret))
    return bundle


def test_a_bundle_with_its_surface_is_admitted(tmp_path: Path) -> None:
    files = {"app/__init__.py": b"", "app/ui/index.html": b"<!doctype html><p>board</p>"}
    bundle = _signed(tmp_path, files)
    verified = verify_bundle(bundle, load_trusted_keys([tmp_path / "keys"]))
    assert verified.manifest.entrypoints[0].surface == "ui/index.html"


def test_a_declared_surface_that_is_missing_is_refused(tmp_path: Path) -> None:
    # Signed as it is, the file list complete: the surface is simply not there.
    bundle = _signed(tmp_path, {"app/__init__.py": b"", "app/ui/board.html": b"<p>board</p>"})
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, load_trusted_keys([tmp_path / "keys"]))
    assert caught.value.code is Code.BUNDLE_MISSING_FILE
    assert caught.value.detail == ("app/ui/index.html: the surface of entrypoint 'board' is absent")
