"""`lineup app keygen | build | sign | verify`: real subprocesses, real files, exit codes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.apps.conftest import Signed, lineup_app, lineup_app_json


def test_keygen_build_sign_verify(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    code, made = lineup_app_json("keygen", "--out", keys, "--name", "dev")
    assert code == 0
    assert stat.S_IMODE(os.stat(keys / "dev.key").st_mode) == 0o600
    bundle = tmp_path / "pomodoro.bundle"
    code, built = lineup_app_json("build", "apps.pomodoro", "--out", bundle)
    assert code == 0
    assert (built["app_scope"], built["version"], built["signed"]) == ("pomodoro", "0.1.0", False)
    assert built["tools"] == ["pomodoro.start", "pomodoro.status", "pomodoro.stop"]
    assert built["files"] == [  # no __pycache__
        "app/__init__.py",
        "app/_app.py",
        "app/ui/index.html",
        "app/ui/timer.css",
        "app/ui/timer.js",
    ]

    code, refused = lineup_app_json("verify", bundle, "--trust", keys / "dev.pub")
    assert (code, refused["code"]) == (1, "bundle_unsigned")

    code, _ = lineup_app_json("sign", bundle, "--key", keys / "dev.key")
    assert code == 0
    code, verified = lineup_app_json("verify", bundle, "--trust", keys)  # a directory
    assert code == 0
    assert (verified["app_scope"], verified["key_id"]) == ("pomodoro", made["key_id"])
    assert [entry["path"] for entry in verified["files"]] == built["files"]


def test_a_build_is_deterministic(tmp_path: Path) -> None:
    # The directory and the module name are two ways to the same package: same bytes.
    first, second = tmp_path / "a.bundle", tmp_path / "b.bundle"
    assert lineup_app("build", "apps/pomodoro", "--out", first)[0] == 0
    assert lineup_app("build", "apps.pomodoro", "--out", second)[0] == 0
    assert first.read_bytes() == second.read_bytes()


def test_verify_refuses_with_code_and_detail(signed: Signed, tmp_path: Path) -> None:
    stranger = tmp_path / "keys"
    assert lineup_app("keygen", "--out", stranger)[0] == 0
    code, out, err = lineup_app("verify", signed.path, "--trust", stranger / "lineup-app.pub")
    assert (code, out) == (1, "")
    assert "bundle_untrusted_key: key " in err


def test_usage_errors_exit_2(signed: Signed, tmp_path: Path) -> None:
    assert lineup_app("verify", signed.path)[0] == 2  # --trust is required
    assert lineup_app("build", "apps.no_such_app", "--out", tmp_path / "x")[0] == 2
    assert lineup_app("build", "apps.sdk", "--out", tmp_path / "x")[0] == 2  # declares no app
    assert lineup_app("keygen", "--out", tmp_path, "--name", "k")[0] == 0
    code, _, err = lineup_app("keygen", "--out", tmp_path, "--name", "k")
    assert code == 2
    assert "exists" in err
    not_a_key = tmp_path / "k.pub"
    assert lineup_app("sign", signed.path, "--key", not_a_key)[0] == 2
