"""The microphone's part of `lineup bench web`: the user's Stop → the recording kept as the
app's artifact, beside a bare upload of the same bytes through the same web host.

The voice app is built and signed with the real CLI into the bench's dir (by the key the
pomodoro was signed with), and installed and enabled as a user would. Chromium's microphone
is a file the bench writes (a tone), its prompt for it answered yes. Each round, the agent
asks for a recording (`voice.request_recording`); the page's card is pressed ("Start
recording"), the page records for `RECORD_S`, and its Stop is pressed: the page's clock
then, less its offset from the bench's, against the artifact row's `created_ms`
(`record_to_artifact_ms`: the recorder's last chunk, the upload, the gateway reading the
bytes, the store writing the file and its row), and its first part, the page's: Stop → the
recording sent on its way (`record_page_ms`: the recorder's last chunk and the upload
begun). Then the page POSTs the artifact's bytes to an upload address that expects
nothing, which the web host answers at once (`bare_upload_ms`, on the page's clock): the
same bytes through the same web host, handed to nobody.
"""

from __future__ import annotations

import base64
import math
import shutil
import struct
import time
import wave
from functools import partial
from pathlib import Path
from typing import Any

import trio

from apps.sdk import ASKS

from ._apps_baselines import KEY_NAME
from ._apps_baselines import _lineup as lineup
from ._e2e_flow import CONVERSATION
from ._procs import BenchError

APP_SCOPE = "voice"
METHOD = "voice.request_recording"
RECORD_S = 1.0  # how long each recording runs before its Stop
WAIT_S = 60.0
TONE_HZ = 440.0

_START = """
const button = document.querySelector("#timeline .card.consent .record-start");
if (!button || button.disabled) return false;
button.click();
return true;
"""
_STOP = """
if (document.body.dataset.recording !== "on") return null;
const at = performance.timeOrigin + performance.now();
document.getElementById("recording-stop").click();
return at;
"""
# The voice app asks to write the recording out where the host can: the bench says no, so
# that no recogniser runs beside what is measured.
# The card words the capability as the consent prompt does (`ASKS`), not by its name.
_DENY_TRANSCRIPTION = """
for (const card of document.querySelectorAll("#timeline .card.consent")) {
  if (!card.textContent.includes(arguments[0])) continue;
  const deny = [...card.querySelectorAll("button")].find((b) => b.textContent === "Deny");
  if (deny && !deny.disabled) { deny.click(); return true; }
}
return false;
"""
# When the page sent its last recording on its way (its mark), on the page's wall clock.
_SENT = """
const marks = performance.getEntriesByName("lineup:recording-sent");
return marks.length ? performance.timeOrigin + marks[marks.length - 1].startTime : null;
"""
# The same bytes to the same web host, at an address that expects nothing: ms, page clock.
_BARE = """
const done = arguments[arguments.length - 1];
const bytes = Uint8Array.from(atob(arguments[0]), (c) => c.charCodeAt(0));
const body = new Blob([bytes], { type: "audio/webm" });
const started = performance.now();
fetch("/upload/bench-expects-nothing", { method: "POST", body, credentials: "same-origin" })
  .then(() => done(performance.now() - started), () => done(null));
"""


def tone_wav(path: Path, seconds: float = 3.0, rate: int = 48_000) -> Path:
    """A tone as a WAV: what the browser's fake microphone plays, in a loop."""
    frames = b"".join(
        struct.pack("<h", int(12_000 * math.sin(2 * math.pi * TONE_HZ * n / rate)))
        for n in range(int(seconds * rate))
    )
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)
    return path


async def install_voice(data_dir: Path, work: Path) -> None:
    """The voice app built into `work` from a copy of `apps/voice`, signed by the bench's key
    (made for the pomodoro, and trusted already), installed and enabled as a user would."""
    import apps.voice

    source = work / "source" / APP_SCOPE
    shutil.copytree(
        Path(apps.voice.__file__).parent, source, ignore=shutil.ignore_patterns("__pycache__")
    )
    bundle = work / f"{APP_SCOPE}.bundle"
    where = ("--data-dir", data_dir)
    steps: list[tuple[str | Path, ...]] = [
        ("app", "build", source, "--out", bundle),
        ("app", "sign", bundle, "--key", work / "keys" / f"{KEY_NAME}.key"),
        ("app", "install", bundle, *where),
        ("app", "enable", APP_SCOPE, *where),
    ]
    for step in steps:
        await trio.to_thread.run_sync(partial(lineup, *step))


async def _until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (found := await check()):
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {WAIT_S:.0f} s waiting for {what}")
        await trio.sleep(0.005)
    return found


def _recordings(data_dir: Path) -> list[dict[str, Any]]:
    from actors.store import read_artifacts

    return [a for a in read_artifacts(data_dir) if a["app_scope"] == APP_SCOPE]


async def _follow(call: Any, script: Any) -> None:
    """Follow `call` to its final, denying the transcription its app asks for meanwhile."""
    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as denying:

            async def deny() -> None:
                while True:
                    await script(_DENY_TRANSCRIPTION, ASKS["speech.transcribe"])
                    await trio.sleep(0.05)

            denying.start_soon(deny)
            async for _ in call:
                pass
            denying.cancel_scope.cancel()


async def measure_recordings(
    data_dir: Path, client: Any, browser: Any, rounds: int, offset_ms: float
) -> dict[str, list[float]]:
    """`rounds` recordings: the page's Stop → the artifact's row (`record_to_artifact_ms`),
    of which the page's part (`record_page_ms`), and the page's bare POST of the same bytes
    (`bare_upload_ms`)."""
    from actors.store import read_artifact_data

    driver = browser.driver

    def script(source: str, *args: Any) -> Any:
        return trio.to_thread.run_sync(lambda: driver.execute_script(source, *args))

    async def listed() -> bool:
        inventory = client.inventory(CONVERSATION)
        return inventory is not None and any(t.method == METHOD for t in inventory.tools)

    await _until(listed, f"{METHOD} in the agent's inventory")
    kept: list[float] = []
    page: list[float] = []
    bare: list[float] = []
    for n in range(rounds):
        async with trio.open_nursery() as following:
            arguments = {"prompt": "Say something for the bench", "max_seconds": 30}
            following.start_soon(_follow, client.call(CONVERSATION, METHOD, arguments), script)
            await _until(lambda: script(_START), "the card's Start recording")
            await _until(lambda: script("return document.body.dataset.recording === 'on';"),
                         "the page recording")  # fmt: skip
            await trio.sleep(RECORD_S)  # the recording itself: a person speaking
            stopped_ms = await script(_STOP)
            if stopped_ms is None:
                raise BenchError("the page stopped recording before its Stop")

            async def row(n: int = n) -> dict[str, Any] | None:
                found = await trio.to_thread.run_sync(_recordings, data_dir)
                return found[n] if len(found) > n else None

            artifact = await _until(row, "the recording's artifact")
            kept.append(artifact["created_ms"] - (stopped_ms - offset_ms))
            sent_ms = await script(_SENT)
            if sent_ms is None or sent_ms < stopped_ms:
                raise BenchError("the page did not mark when it sent the recording")
            page.append(sent_ms - stopped_ms)
        found = read_artifact_data(data_dir, artifact["artifact_id"])
        if found is None:
            raise BenchError("the recording's artifact is not whole")
        encoded = base64.b64encode(found[1]).decode("ascii")
        took = await trio.to_thread.run_sync(driver.execute_async_script, _BARE, encoded)
        if took is None:
            raise BenchError("the page's bare upload did not reach the web host")
        bare.append(float(took))
    return {"record_to_artifact_ms": kept, "record_page_ms": page, "bare_upload_ms": bare}
