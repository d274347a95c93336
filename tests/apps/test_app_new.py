"""`lineup app new`: the package it writes builds, signs and verifies as it is, and its own
test passes against a real runtime (pytest in a subprocess, as the app's author runs it);
each name or place it refuses gets one sentence saying what to do, and nothing is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apps.conftest import lineup_app

GENERATED = [
    "app/__init__.py",
    "app/_app.py",
    "app/ui/app.css",
    "app/ui/app.js",
    "app/ui/index.html",
]


def test_a_new_app_builds_signs_verifies_and_passes_its_own_test(tmp_path: Path) -> None:
    code, out, err = lineup_app("new", "hello-world", "--out", tmp_path)
    assert (code, err) == (0, ""), err
    package = tmp_path / "hello_world"
    assert f"created hello-world in {package}" in out

    assert lineup_app("keygen", "--out", tmp_path / "keys", "--name", "dev")[0] == 0
    bundle = tmp_path / "hello-world.bundle"
    code, out, err = lineup_app("build", package, "--out", bundle, "--json")
    assert code == 0, err
    built = json.loads(out)
    assert (built["app_scope"], built["tools"]) == ("hello-world", ["hello_world.greet"])
    assert built["files"] == GENERATED
    assert "test_app.py" in built["left_out"]  # its users run the app, not its test
    assert lineup_app("sign", bundle, "--key", tmp_path / "keys" / "dev.key")[0] == 0
    code, out, err = lineup_app("verify", bundle, "--trust", tmp_path / "keys", "--json")
    assert code == 0, err
    assert json.loads(out)["app_scope"] == "hello-world"

    # The author's first run: the generated test, from the directory that holds the package.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "error", "-q",
         "hello_world/test_app.py"],
        cwd=tmp_path, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    said = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 0, said
    assert "1 passed" in said


@pytest.mark.parametrize(
    ("name", "sentence"),
    [
        (
            "My_App",
            "'My_App' is not an app name: use lower case letters, digits and single hyphens,"
            " starting with a letter, at most 64 characters (e.g. my-app).",
        ),
        (
            "../evil",
            "'../evil' is not an app name: use lower case letters, digits and single hyphens,"
            " starting with a letter, at most 64 characters (e.g. my-app).",
        ),
        (
            "chat",
            "chat is reserved for the runtime and its core apps (app-registry, chat, runtime,"
            " settings); pick another name.",
        ),
        (
            "json",
            "json would make a package named json, which Python already knows as a module or"
            " keyword; pick another name.",
        ),
    ],
)
def test_a_name_the_app_cannot_have_is_refused(tmp_path: Path, name: str, sentence: str) -> None:
    code, out, err = lineup_app("new", name, "--out", tmp_path)
    assert (code, out) == (1, "")
    assert " ".join(err.split()) == f"error: {sentence}"
    assert list(tmp_path.iterdir()) == []


def test_an_existing_directory_is_left_as_it_is(tmp_path: Path) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("mine")
    code, out, err = lineup_app("new", "notes", "--out", tmp_path)
    assert (code, out) == (1, "")
    assert " ".join(err.split()) == (
        f"error: {mine} already exists and was left as it is; pick another name or --out DIR."
    )
    assert [p.name for p in mine.iterdir()] == ["todo.txt"]
    assert (mine / "todo.txt").read_text() == "mine"


def test_a_missing_name_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = lineup_app("new", "--out", tmp_path)
    assert code == 2
    assert "the following arguments are required: NAME" in err
