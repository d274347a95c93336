"""Reading the chat's log from outside its process: the terminal chat opens it while the
app may have created the file and not yet written its tables (the runtime just started),
and must see an empty conversation then, not fail."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from apps.chat import app_dir, conversations, history
from apps.sdk import EventLog


def test_a_log_file_not_yet_written_reads_as_no_conversation(tmp_path: Path) -> None:
    folder = app_dir(tmp_path)
    folder.mkdir(parents=True)
    sqlite3.connect(folder / "app.db").close()  # what the app's first connect leaves

    assert conversations(tmp_path) == []
    assert history(tmp_path, "main")["timeline"] == []


def test_a_written_log_is_read_once_its_tables_exist(tmp_path: Path) -> None:
    log = EventLog(app_dir(tmp_path))
    body = {"id": "m1", "type": "lineup.message", "conversation_id": "main",
            "sender": {"kind": "agent", "id": "demo"}, "payload": {"text": "hello"}}  # fmt: skip
    log.add_agent_messages("k1", [body])
    log.close()

    assert conversations(tmp_path) == ["main"]
    assert [item["text"] for item in history(tmp_path, "main")["timeline"]] == ["hello"]
