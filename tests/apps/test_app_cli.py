"""`lineup app keygen | build | sign | verify`: real subprocesses, real files, exit codes."""

from __future__ import annotations

import compileall
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apps.conftest import REPO, Signed, lineup_app, lineup_app_json


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
    assert err == (
        f"error: {tmp_path}/k.key already exists and was left as it is; sign with the pair"
        f" you have (--key {tmp_path}/k.key), or pick another --name for a new one\n"
    )
    not_a_key = tmp_path / "k.pub"
    assert lineup_app("sign", signed.path, "--key", not_a_key)[0] == 2


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_keygen_writes_the_secret_key_for_its_owner_alone_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lineup.cli", "app", "keygen", "--out", "keys", "--name", "me"],
        cwd=tmp_path, capture_output=True, timeout=60, check=False, umask=umask,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((tmp_path / "keys" / "me.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700


def _git(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    git = shutil.which("git")
    assert git is not None, "the tests need git"
    return subprocess.run([git, *map(str, args)], cwd=cwd, capture_output=True, check=False)


def test_keygen_warns_when_git_could_commit_the_secret_key(tmp_path: Path) -> None:
    """In a work tree that does not ignore it, keygen says what to add to its .gitignore;
    once ignored (as this repository's .gitignore does), it says nothing."""
    tree = tmp_path / "project"
    tree.mkdir()
    assert _git("init", "-q", ".", cwd=tree).returncode == 0
    code, made = lineup_app_json("keygen", "--out", tree / "keys", "--name", "me")
    assert code == 0
    assert made["warning"] == (
        f"{tree / 'keys' / 'me.key'} is in the git work tree {tree}, which does not ignore"
        f" it: add /keys/ to {tree / '.gitignore'} so the secret key is never committed"
    )
    code, out, err = lineup_app("keygen", "--out", tree / "keys", "--name", "you")
    assert code == 0 and "secret key" in out
    assert err.startswith(f"warning: {tree / 'keys' / 'you.key'} is in the git work tree")
    (tree / ".gitignore").write_text((REPO / ".gitignore").read_text())
    code, made = lineup_app_json("keygen", "--out", tree / "keys", "--name", "again")
    assert code == 0 and "warning" not in made
    code, made = lineup_app_json("keygen", "--out", tmp_path / "outside", "--name", "me")
    assert code == 0 and "warning" not in made  # in no work tree at all


def test_the_repository_ignores_the_keys_and_bundles_its_readme_makes() -> None:
    for made in ("keys/me.key", "keys/me.pub", "pomodoro.bundle", "apps/x/me.key"):
        assert _git("check-ignore", "-q", made, cwd=REPO).returncode == 0, made


def _package_with_extras(root: Path) -> Path:
    """The pomodoro package, with what an author's folder holds beside the app."""
    package = root / "pomodoro"
    shutil.copytree(
        REPO / "apps" / "pomodoro", package, ignore=shutil.ignore_patterns("__pycache__")
    )
    extras = {
        "test_app.py": "def test_it(): pass\n",
        "timer_test.py": "",
        "conftest.py": "",
        "ui/conftest.py": "",
        "tests/test_more.py": "",
        "tests/data.json": "{}",
        ".env": "TOKEN=x\n",
        "old.bundle": "",
        "notes/me.key": "anything\n",
    }
    for name, text in extras.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    code, _, err = lineup_app("keygen", "--out", package / "signing", "--name", "mine")
    assert code == 0, err
    (package / "signing" / "renamed.txt").write_bytes(
        (package / "signing" / "mine.key").read_bytes()
    )
    return package


APP_FILES = [
    "app/__init__.py",
    "app/_app.py",
    "app/ui/index.html",
    "app/ui/timer.css",
    "app/ui/timer.js",
]


def test_a_bundle_holds_what_the_app_runs_and_says_what_it_left_out(tmp_path: Path) -> None:
    package = _package_with_extras(tmp_path)
    bundle = tmp_path / "pomodoro.bundle"
    code, built = lineup_app_json("build", package, "--out", bundle)
    assert code == 0
    assert built["files"] == sorted([*APP_FILES, "app/signing/mine.pub"])
    assert built["left_out"] == [
        ".env", "conftest.py", "notes/me.key", "old.bundle", "signing/mine.key",
        "signing/renamed.txt", "test_app.py", "tests/", "timer_test.py", "ui/conftest.py",
    ]  # fmt: skip
    code, out, err = lineup_app("build", package, "--out", bundle)
    assert code == 0, err
    assert (
        "  left out: .env, conftest.py, notes/me.key, old.bundle, signing/mine.key,"
        " signing/renamed.txt, test_app.py, tests/, timer_test.py, ui/conftest.py (tests,"
        " caches, dotfiles, keys and bundles are by default; .bundleignore in the package"
        " changes that)"
    ) in out


def test_a_build_reads_the_source_as_it_is_now_and_leaves_no_cache(tmp_path: Path) -> None:
    """An author bumps the version and builds in the same second: bytecode Python cached
    beside the package (same size, same second) must not stand in for the edited source."""
    package = tmp_path / "pomodoro"
    shutil.copytree(
        REPO / "apps" / "pomodoro", package, ignore=shutil.ignore_patterns("__pycache__")
    )
    app = package / "_app.py"
    stamp = app.stat().st_mtime_ns
    compileall.compile_dir(package, quiet=1)  # as running the app's own test would
    cached = sorted(package.glob("__pycache__/*.pyc"))
    app.write_text(app.read_text().replace('version="0.1.0"', 'version="0.2.0"'))
    os.utime(app, ns=(stamp, stamp))  # what an edit within the same second looks like
    code, built = lineup_app_json("build", package, "--out", tmp_path / "p.bundle")
    assert code == 0
    assert built["version"] == "0.2.0"
    assert sorted(package.glob("__pycache__/*.pyc")) == cached  # none written, none changed
    assert built["left_out"] == ["__pycache__/"]


def test_the_packages_bundleignore_changes_what_is_left_out(tmp_path: Path) -> None:
    """Its lines come after the defaults; the last pattern that matches decides. A secret
    signing key stays out whatever they say."""
    package = _package_with_extras(tmp_path)
    (package / ".bundleignore").write_text(
        "# the tests ship, but not their data; the signing folder stays home\n"
        "!test_app.py\n!tests/\n!tests/test_*.py\ntests/*.json\n\nsigning/\n!*.key\n"
        "!/conftest.py\n"
    )
    code, built = lineup_app_json("build", package, "--out", tmp_path / "p.bundle")
    assert code == 0
    assert built["files"] == sorted(
        [
            *APP_FILES,
            "app/conftest.py",
            "app/notes/me.key",
            "app/test_app.py",
            "app/tests/test_more.py",
        ]
    )
    assert built["left_out"] == [
        ".bundleignore", ".env", "old.bundle", "signing/", "tests/data.json", "timer_test.py",
        "ui/conftest.py",
    ]  # fmt: skip
    (package / ".bundleignore").write_text("!signing/\n!*.key\n!*.txt\n")
    code, built = lineup_app_json("build", package, "--out", tmp_path / "p.bundle")
    assert code == 0
    assert "signing/mine.key" in built["left_out"] and "signing/renamed.txt" in built["left_out"]
    assert "app/signing/mine.pub" in built["files"]
    assert not [name for name in built["files"] if "mine.key" in name or "renamed" in name]
