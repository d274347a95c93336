"""`file.save`: bytes from an app saved under DATA_DIR/downloads/ with a name that is safe to
show, whatever the app asked for, never outside that directory and never over another file;
the app learns the saved file's name, never its path. A session grant lasts until the
runtime restarts."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from tests.app_manager.conftest import lineup
from tests.runtime.helpers import Stack

from .helpers import answer, ask, asked, audit_of, card_for, keeper_ready, outcome, requests

HOSTILE = {
    "../../escape.txt": "escape.txt",
    "/etc/passwd": "passwd",
    "..\\..\\win.txt": "win.txt",
    "a\x00b.txt": "ab.txt",
    "evil\u202etxt.exe": "eviltxt.exe",
    ".bashrc": "bashrc",
    "CON.txt": "_CON.txt",
    "...": "download",
    "report.txt": "report (1).txt",  # the first save took report.txt
}


def _data(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def test_hostile_names_stay_inside_downloads_and_session_grants_end_with_the_run(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper, rate_limit={"burst": 50, "per_minute": 60})
    first = {"name": "report.txt", "data_base64": _data("first")}
    await ask(agent, "f-0", "file.save", first, front=True)
    answer(stack, await card_for(stack, "file.save"), "session")
    assert await outcome(stack, "f-0") == {"status": "completed", "output": {"name": "report.txt"}}
    code, out, _ = lineup("capabilities", "list", "--json", "--data-dir", stack.data_dir)
    assert code == 0 and [g["scope"] for g in json.loads(out)] == ["session"]

    for n, (raw, shown) in enumerate(HOSTILE.items(), 1):
        saved = await asked(
            agent, f"f-{n}", "file.save", input={"name": raw, "data_base64": _data(raw)}, front=True
        )
        assert saved == {"status": "completed", "output": {"name": shown}}, raw
    long = await asked(
        agent,
        "f-long",
        "file.save",
        input={"name": "x" * 1000 + ".txt", "data_base64": ""},
        front=True,
    )
    name = long["output"]["name"]
    assert name.endswith(".txt") and len(name.encode()) <= 200 and set(name[:-4]) == {"x"}

    downloads = stack.data_dir / "downloads"
    assert sorted(os.listdir(downloads)) == sorted(["report.txt", *HOSTILE.values(), name])
    assert (downloads / "report.txt").read_text() == "first"
    assert (downloads / "report (1).txt").read_text() == "report.txt"
    assert (downloads / "escape.txt").read_text() == "../../escape.txt"
    # Nothing anywhere else under the test's folders carries a saved name.
    outside = [
        path
        for shown in ("escape.txt", "win.txt", "passwd")
        for path in stack.base.rglob(shown)
        if path.parent != downloads
    ]
    assert outside == []

    broken = await asked(
        agent, "f-bad", "file.save", input={"name": "a", "data_base64": "%%%"}, front=True
    )
    assert broken == {"status": "failed", "output": None, "code": "invalid_payload"}

    # A session grant ends with the run: after a restart the user is asked again.
    assert stack.runtime is not None
    stack.runtime.stop()
    await stack.start_runtime()
    await ask(agent, "f-after", "file.save", {"name": "b", "data_base64": ""}, front=True)
    answer(stack, await card_for(stack, "file.save", _cards_before(stack)), "deny")
    assert (await outcome(stack, "f-after"))["status"] == "permission_denied"

    for row in requests(stack):  # every decision audited under its request
        assert await audit_of(stack, row["request_id"]), row


def _cards_before(stack: Stack) -> set[str]:
    """The consent cards decided before (the first save's)."""
    return {r["request_id"] for r in requests(stack) if r["state"] == "finished"}


async def test_an_artifact_of_the_app_is_saved_and_no_other(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper)
    made = await agent.call(
        "call_make", "keeper.make", arguments={"text": "kept", "title": "../Notes"}
    )
    reference = made["output"]
    await ask(agent, "a-1", "file.save", {"artifact_id": reference["artifact_id"]}, front=True)
    answer(stack, await card_for(stack, "file.save"), "always")
    # No name given: the artifact's title, made safe.
    assert await outcome(stack, "a-1") == {"status": "completed", "output": {"name": "Notes"}}
    assert (stack.data_dir / "downloads" / "Notes").read_text() == "kept"
    nobodys = {"artifact_id": "art_" + "0" * 26, "name": "x"}
    missing = await asked(agent, "a-2", "file.save", input=nobodys, front=True)
    assert missing == {"status": "failed", "output": None, "code": "artifact_not_found"}
    assert sorted(os.listdir(stack.data_dir / "downloads")) == ["Notes"]
    # A downloads directory that is a symlink leads nowhere: nothing is written through it.
    elsewhere = stack.base / "elsewhere"
    elsewhere.mkdir()
    (stack.data_dir / "downloads").rename(stack.base / "kept")
    (stack.data_dir / "downloads").symlink_to(elsewhere)
    through = await asked(
        agent, "a-3", "file.save", input={"name": "x", "data_base64": ""}, front=True
    )
    assert through == {"status": "failed", "output": None, "code": "failed"}
    assert os.listdir(elsewhere) == []
