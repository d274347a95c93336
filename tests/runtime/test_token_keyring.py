"""Where the AppServer token is kept: in the keyring where a Secret Service is on the session
bus, one item per data dir, else in the data dir's 0600 file; a token in the file moves into
a keyring that appeared (the file removed only once the keyring has it); a locked or
unreachable keyring is said in one sentence, never a traceback."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from actors.runtime_token import TOKEN_FILE, TokenError, keep_token, load_token, token_home

from .keyring import items, lock, session_keyring


def _no_bus() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}


def test_the_token_moves_into_the_keyring_one_item_per_data_dir(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for data_dir in (first, second):
        data_dir.mkdir()
    file = first / TOKEN_FILE
    # No session bus: the file, 0600.
    assert keep_token(first, "token-1", _no_bus()) == "file"
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert token_home(first, _no_bus()).holder == "file"
    assert load_token(file, first, _no_bus()) == "token-1"
    # A bus address that leads nowhere is no keyring: the file still.
    nowhere = {**_no_bus(), "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path / 'no-bus'}"}
    assert load_token(file, first, nowhere) == "token-1" and file.exists()

    with session_keyring(tmp_path / "session") as env:
        # The transport's read moves the file's token into the keyring, then removes it.
        assert token_home(first, env).holder == "file"
        assert load_token(file, first, env) == "token-1"
        assert not file.exists()
        assert token_home(first, env).holder == "keyring"
        assert load_token(file, first, env) == "token-1"
        # Another data dir keeps its own token, under its own item.
        assert keep_token(second, "token-2", env) == "keyring"
        assert not (second / TOKEN_FILE).exists()
        assert load_token(second / TOKEN_FILE, second, env) == "token-2"
        assert load_token(file, first, env) == "token-1"
        kept = sorted(items(env))
        assert [label for label, _ in kept] == [
            f"LineUp Runtime: AppServer token for {first.resolve()}",
            f"LineUp Runtime: AppServer token for {second.resolve()}",
        ]
        assert {attrs["data_dir"] for _, attrs in kept} == {str(first), str(second)}
        # A file of the user's own, named by --config, is read as it is and left in place.
        own = tmp_path / "own-token"
        own.write_text("token-own\n")
        own.chmod(0o600)
        assert load_token(own, first, env) == "token-own" and own.exists()

        # Locked: said in one sentence, with what to do; a token still in the file is used.
        lock(env)
        with pytest.raises(TokenError, match=r"^the keyring is locked: unlock it"):
            load_token(file, first, env)
        assert token_home(first, env).detail == "in the keyring (locked)"
        assert keep_token(first, "token-3", env) == "file"  # never prompts: the file
        assert load_token(file, first, env) == "token-3" and file.exists()

    # The keyring gone with its session: the file is all there is, and none is said so.
    assert load_token(file, first, env) == "token-3"
    with pytest.raises(TokenError, match=r"^no AppServer token: .* write it to "):
        load_token(second / TOKEN_FILE, second, env)
    assert token_home(second, env).holder == "none"
