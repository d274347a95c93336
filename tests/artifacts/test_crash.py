"""The store SIGKILLed in the middle of a create, with half the bytes in the temporary file
and with the whole file in place but its row not committed: the restarted store sweeps
what was left, takes the create again, and the app gets one artifact. No row without its
whole file, no file without its row."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtime.helpers import Stack

from .helpers import assert_whole, files, made, stored, toolbox_with_artifacts

SIZE = 100_000


@pytest.mark.parametrize("point", ["store.artifact_mid_file", "store.artifact_before_commit"])
async def test_a_store_killed_during_a_create_leaves_no_half_artifact(
    stack: Stack, toolbox: tuple[Path, Path], tmp_path: Path, point: str
) -> None:
    once = tmp_path / "crashed"
    once.mkdir()
    agent = await toolbox_with_artifacts(
        stack,
        toolbox,
        env={"LINEUP_CRASH": f"{point}@1", "LINEUP_CRASH_ONCE_DIR": str(once)},
    )
    row = await agent.call(
        "call_through_a_crash",
        "box.artifact",
        arguments={"size": SIZE, "media_type": "application/octet-stream", "title": "crash"},
    )
    assert (once / point).exists(), "the store was not killed where the test meant it to be"
    assert row["state"] == "succeeded", row
    reference = row["output"]["artifact"]
    assert list(stored(stack)) == [reference["artifact_id"]]
    assert files(stack) == {reference["artifact_id"]: made(SIZE)}
    assert_whole(stack)
