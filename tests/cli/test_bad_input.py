"""Every command of the command line, given bad input, fails as a person expects: a non-zero
exit, one message naming the problem, and no traceback or exception class name.

Each case runs `lineup ...` as a subprocess with `LINEUP_DATA_DIR` pointing at an empty
folder (so nothing touches the user's data); the cases that need a runtime share one,
started once for the module.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lineup.app_runtime_cmd import refusal_sentence

REPO = Path(__file__).resolve().parents[2]
# An exception class name as Python spells them: KeyError, ValueError, ExceptionGroup, ...
EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception|ExceptionGroup|Interrupt)\b")


def _lineup(env_dir: Path, *args: str | Path, stdin: bytes = b"") -> tuple[int, str]:
    env = {**os.environ, "LINEUP_DATA_DIR": str(env_dir), "NO_COLOR": "1", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "lineup.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        env=env,
        timeout=60,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace")


def _case_id(value: object) -> str | None:
    return " ".join(value) if isinstance(value, tuple) else None


def _assert_human(code: int, output: str, expected: str) -> None:
    assert code != 0, output
    assert "Traceback" not in output, output
    assert EXCEPTION_NAME.search(output) is None, output
    assert expected in " ".join(output.split()), output


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "junk.bundle").write_bytes(b"not a zip")
    (tmp_path / "junk.key").write_text("not a key\n")
    (tmp_path / "extra.json").write_text('{"no_such_option": 1}')
    (tmp_path / "a_file").write_text("")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "__init__.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "unparsable").mkdir()
    (tmp_path / "unparsable" / "__init__.py").write_text("def (\n")
    return tmp_path


# (arguments, what the message must name); {t} is a temp dir with the files above, {empty}
# a data dir with no runtime.
OFFLINE_CASES = [
    (("nosuch",), "unknown command 'nosuch'"),
    (("ap",), "did you mean 'app'?"),
    (("app", "instal", "x"), "did you mean 'install'?"),
    (("agent", "sned"), "did you mean 'send'?"),
    (("tools", "call"), "did you mean 'calls'?"),
    (("protocol", "validat"), "did you mean 'validate'?"),
    (("bench", "clii"), "did you mean 'cli'?"),
    (("run", "--log-level", "loud"), "unknown log-level 'LOUD'"),
    (("run", "--headless", "--config", "{t}/nosuch.json"), "nosuch.json: No such file"),
    (("run", "--headless", "--config", "{t}/extra.json"), "no_such_option"),
    (("run", "--headless", "--config", "{t}/junk.bundle"), "not a runtime configuration"),
    (
        ("run", "--headless", "--no-demo-agent", "--data-dir", "{t}/" + "d" * 100),
        "too long a path for the runtime's sockets",
    ),
    (("app", "list"), "no runtime data in {empty}"),
    (("app", "install", "{t}/junk.bundle"), "no runtime is running on {empty}"),
    (("app", "enable", "pomodoro"), "LINEUP_DATA_DIR"),
    (("app", "remove", "pomodoro", "--yes"), "no runtime is running on {empty}"),
    (("app", "focus", "chat"), "no runtime is running on {empty}"),
    (("app", "launch"), "required: APP"),
    (("app", "keygen", "--out", "{t}/a_file/keys"), "Not a directory"),
    (("app", "build", "{t}/nosuch", "--out", "{t}/o.bundle"), "nosuch"),
    (("app", "build", "{t}/broken", "--out", "{t}/o.bundle"), "__init__.py:1: boom"),
    (("app", "build", "{t}/unparsable", "--out", "{t}/o.bundle"), "__init__.py:1: invalid syntax"),
    (("app", "sign", "{t}/junk.bundle", "--key", "{t}/junk.key"), "junk.key"),
    (("app", "sign", "{t}/junk.bundle", "--key", "{t}/nosuch.key"), "No such file"),
    (("app", "verify", "{t}/junk.bundle", "--trust", "{t}/junk.key"), "junk.key"),
    (("app", "verify", "{t}/junk.bundle"), "required: --trust"),
    (("protocol", "schemas", "{t}/a_file/out"), "Not a directory"),
    (("protocol", "validate", "--kind", "nosuch"), "unknown kind 'nosuch'"),
    (("tools", "inventory"), "no runtime data in {empty}"),
    (("tools", "calls", "--state", "nosuch"), "unknown state 'nosuch'"),
    (("tools", "calls", "--limit", "0"), "not a positive integer"),
    (("capabilities", "lis"), "did you mean 'list'?"),
    (("capabilities", "list"), "no runtime data in {empty}"),
    (("capabilities", "revoke", "keeper"), "required: CAPABILITY"),
    (("capabilities", "revoke", "keeper", "file.save"), "no runtime is running on {empty}"),
    (("artifacts", "lis"), "did you mean 'list'?"),
    (("artifacts", "list"), "no runtime data in {empty}"),
    (("artifacts", "show"), "required: ID"),
    (("artifacts", "show", "art_x"), "no runtime data in {empty}"),
    (("artifacts", "save", "art_x"), "no runtime is running on {empty}"),
    (("agent", "send", "--conversation", "main", "--text", "hi"), "no AppServer credentials"),
    (("agent", "inventory", "--conversation", "main"), "{empty}/appserver"),
    (("agent", "call", "--conversation", "main", "--tool", "x", "--args", "[1"), "--args"),
    (("agent", "demo", "--appserver-dir", "{t}/nosuch"), "no AppServer credentials"),
    (("agent", "send", "--conversation", "bad id", "--text", "x"), "not a conversation id"),
    # A blank conversation id is bad input wherever a conversation is named.
    (("chat", "history", "--conversation", ""), "a blank id is not a conversation id"),
    (("chat", "send", "--conversation", " ", "--text", "x"), "not a conversation id"),
    (("chat", "attach", "--conversation", ""), "a blank id is not a conversation id"),
    (("run", "--conversation", ""), "a blank id is not a conversation id"),
    (("agent", "history", "--conversation", ""), "a blank id is not a conversation id"),
    (("agent", "inventory", "--conversation", ""), "a blank id is not a conversation id"),
    (("tools", "calls", "--conversation", ""), "a blank id is not a conversation id"),
    (("tools", "inventory", "--conversation", ""), "a blank id is not a conversation id"),
    (("artifacts", "list", "--conversation", ""), "a blank id is not a conversation id"),
    (("app", "launch", "x", "--conversation", ""), "a blank id is not a conversation id"),
    (("protocol", "validate", "--conversation", ""), "a blank id is not a conversation id"),
    (("appserver", "--port", "70000"), "not within 0"),
    (("appserver", "--agent", "Bad Id", "--appserver-dir", "{t}/as"), "not a valid agent id"),
    (("bench", "cli", "--runs", "0"), "--runs must be at least 1"),
]


@pytest.mark.parametrize(("args", "expected"), OFFLINE_CASES, ids=_case_id)
def test_bad_input_without_a_runtime(files: Path, args: tuple[str, ...], expected: str) -> None:
    empty = files / "data"
    filled = [a.format(t=files, empty=empty) for a in args]
    code, output = _lineup(empty, *filled)
    _assert_human(code, output, expected.format(t=files, empty=empty))


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A headless runtime on a data dir of its own, for the cases a runtime answers."""
    data_dir = tmp_path_factory.mktemp("runtime") / "data"
    log = data_dir.parent / "run.log"
    env = {**os.environ, "LINEUP_DATA_DIR": str(data_dir)}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lineup.cli", "run", "--headless", "--no-demo-agent"],
            stdout=out,
            stderr=out,
            cwd=REPO,
            env=env,
        )
    try:
        deadline = time.monotonic() + 30
        while not (data_dir / "control.sock").exists() or _lineup(data_dir, "app", "list")[0]:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the runtime did not start"
            time.sleep(0.1)
        yield data_dir
    finally:
        process.terminate()
        process.wait(timeout=30)


RUNTIME_CASES = [
    (("app", "focus", "chat"), "did you mean chat:main?"),
    (("app", "remove", "chat", "--yes"), "chat is a core app"),
    (("app", "rollback", "chat"), "chat is a core app"),
    (("app", "disable", "chatt"), "did you mean 'chat'?"),
    (("app", "enable", "nosuch"), "lineup app install BUNDLE"),
    (("app", "install", "{t}/junk.bundle"), "install of the bundle refused"),
    (("app", "close", "nosuch:main"), "lineup app list"),
    (("capabilities", "revoke", "nosuch", "file.save"), "nosuch has no grant for file.save"),
    (("run", "--headless"), "another runtime (pid"),
]


@pytest.mark.parametrize(("args", "expected"), RUNTIME_CASES, ids=_case_id)
def test_bad_input_to_a_running_runtime(
    runtime: Path, files: Path, args: tuple[str, ...], expected: str
) -> None:
    filled = [a.format(t=files) for a in args]
    code, output = _lineup(runtime, *filled)
    _assert_human(code, output, expected)
    assert " : " not in output and "rollbackd" not in output


def test_a_second_supervisor_on_the_same_data_dir(runtime: Path) -> None:
    """`python -m supervisor`, the runtime's root process run by hand, says who holds the data
    dir in one sentence rather than a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "supervisor", "--data-dir", str(runtime)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    _assert_human(done.returncode, done.stdout + done.stderr, "another runtime (pid")
    assert "--data-dir" in done.stderr


def test_a_data_dir_whose_files_cannot_be_read(tmp_path: Path) -> None:
    """A damaged file is not an empty one: said, not listed as nothing and not a traceback."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "runtime.db").write_bytes(b"")
    (data / "app_manager.db").write_bytes(b"not a database, " * 64)
    code, output = _lineup(data, "app", "list")
    _assert_human(code, output, "the runtime's files could not be read (file is not a database)")


APP_MANAGER_CODES = [
    "already_installed",
    "app_disabled",
    "app_not_installed",
    "app_start_failed",
    "bundle_bad_path",
    "bundle_bad_signature",
    "bundle_hash_mismatch",
    "bundle_malformed",
    "bundle_missing",
    "bundle_missing_file",
    "bundle_scope_mismatch",
    "bundle_signer_changed",
    "bundle_too_large",
    "bundle_unlisted_file",
    "bundle_unreadable",
    "bundle_unsigned",
    "bundle_untrusted_key",
    "bundle_version_mismatch",
    "confirmation_required",
    "core_app_protected",
    "instance_not_found",
    "invalid_entrypoint",
    "invalid_payload",
    "invalid_state",
    "no_previous_version",
    "older_version",
    "ownership_mismatch",
    "same_version",
    "sender_not_allowed",
]


def test_the_agent_commands_of_a_stopped_runtime(runtime: Path, tmp_path: Path) -> None:
    """Credentials saved by a runtime that has since stopped: said at once, not after a
    timeout; and an unreachable AppServer named with the reason, no exception class."""
    stopped = tmp_path / "data"
    (stopped / "appserver").mkdir(parents=True)
    credentials = runtime / "appserver" / "credentials.json"
    (stopped / "appserver" / "credentials.json").write_bytes(credentials.read_bytes())
    code, output = _lineup(stopped, "agent", "send", "--conversation", "main", "--text", "hi")
    _assert_human(code, output, f"no AppServer is running for {stopped / 'appserver'}")
    unreachable = ("--appserver", "ws://127.0.0.1:9/v1/ws", "--timeout", "0.5")
    code, output = _lineup(
        stopped, "agent", "send", "--conversation", "main", "--text", "hi", *unreachable
    )
    _assert_human(code, output, "all attempts to connect to 127.0.0.1:9 failed")


@pytest.mark.parametrize("code", APP_MANAGER_CODES)
def test_every_refusal_code_says_what_to_do_next(tmp_path: Path, code: str) -> None:
    for scope, request in (("pomodoro", {}), ("", {}), ("", {"instance_id": "chat"})):
        op = {
            "kind": "install" if not scope else "update",
            "app_scope": scope,
            "state": "rolled_back",
            "code": code,
            "detail": "the reason",
            "request": request,
        }
        sentence = refusal_sentence(op, tmp_path)
        assert sentence.endswith(".") and sentence.count("; ") >= 1, sentence
        assert "refused: " in sentence, sentence
        assert "rolled back" not in sentence and "rolled_back" not in sentence, sentence
        assert " : " not in sentence and "  " not in sentence, sentence
        assert "see `lineup debug status`" not in sentence, sentence  # a step of its own
    hints = {
        "confirmation_required": "--yes",
        "bundle_untrusted_key": f"{tmp_path}/trusted_keys/",
        "same_version": "higher version",
    }
    if code in hints:
        assert hints[code] in refusal_sentence({"kind": "update", "code": code}, tmp_path)


def test_focus_of_an_app_name_suggests_its_main_instance(tmp_path: Path) -> None:
    op = {
        "kind": "focus",
        "app_scope": "",
        "state": "failed",
        "code": "instance_not_found",
        "detail": "no running instance 'chat'",
        "request": {"instance_id": "chat"},
    }
    assert "did you mean chat:main?" in refusal_sentence(op, tmp_path)
