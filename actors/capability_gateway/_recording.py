"""The microphone (`audio.record`, mixed into `CapabilityGatewayActor`): a recording the
user starts and sees, that becomes one of the app's artifacts.

A microphone hears whoever is in the room, so no grant ever covers it: each request asks
the user, whose yes starts the recording at once (`ASKED_EACH_TIME`). The card carries what
it takes (`recorder`: `max_seconds`, `max_bytes`) and two ways to say yes:

- **in the page** (the web host, `record_start`): the page's "Start recording" opens the
  browser's microphone, then asks the web host, which asks the gateway; from the gateway's
  yes the page records (`MediaRecorder`) with its indicator, elapsed time and Stop, and
  sends what it recorded to the web host's upload route, which hands it over
  (`recorded`);
- **in the terminal** (the chat's "Record now", `/1`): the gateway records itself from the
  sound server (`parec`, PulseAudio's or PipeWire's), a 16 kHz mono WAV, while the terminal
  chat shows that it does; its `/stop` ends it (`record_stop`, through the host).

Whichever records, the gateway keeps the clock: a recording ends when the user stops it,
at its `max_seconds` (and, in the terminal, when the byte quota is full), or when the app
leaves the foreground, which the gateway looks at every `WATCH_S` while it records. Then
the page is told to stop (`web_host.recording.stop`) and has `UPLOAD_GRACE_S` to send it;
what arrives is read from its bytes (`_audio`): WebM, Ogg or WAV, lasting at most as long
as the microphone was allowed on (`SLACK_MS` for the recorder's own framing), at most
`max_bytes`. It is kept as the app's artifact, and the app's answer is its reference:
{`artifact_id`, `title`, `media_type`, `duration_ms`, `size`, `stopped`: `user` / `limit` /
`background`}. A recording that never comes ends `failed`; one that breaks the rules
`failed` with its code (`invalid_payload`, `too_large`). A gateway killed while a recording
runs finds it `running` at its start: it ends `in_doubt`, never recorded twice.

Only once, deny or dismiss answer its card; any other answer is ignored. The card shows
*Record now* or *Deny* in the chat (the terminal's `/1` and `/2`) and *Start recording* in
the page. The yes records the request `running` (`prepared`: the recorder, the most it may
last) and closes the card as `recording`. The terminal's recording is `parec` (16-bit mono
16 kHz, 50 ms latency) read until the end and kept as a WAV, whose 192 KiB end it at six
seconds. A declared type that contradicts the bytes, a file that breaks off, a track that
is not audio, or a duration past the time the microphone was allowed on (plus 1.5 s) is
`invalid_payload`; no sound at all is the user's cancel when they stopped it
(`cancelled_by_user`), else `failed`. A recording taken is kept by the store as the app's
artifact under an id derived from the request's key, titled `Recording of N s`, with the
container's own media type; the card says again how it ended (`recorded`, `not
recorded`). The page's upload after a gateway restart finds nothing waiting
(`invalid_state`). A recording whose call ended first (the agent cancelled it: the SDK
takes the request back) stops there and nothing of it is kept (`failed`, `withdrawn`). The
gateway's statistics list the recordings under way (recorder, seconds, bytes read);
`lineup settings show` says how this host records. Tested in Chromium whose fake
microphone plays espeak-ng's speech (`tests/installed/test_voice.py`: stopped by the user,
at the limit, by the app leaving the front) and on a real PulseAudio whose null sink plays
it (`tests/capabilities/test_microphone.py`).
"""

from __future__ import annotations

import io
import logging
import math
import os
import shutil
import subprocess
import wave
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from actors.kernel import Actor, CallFailed, Message, derive_id, handles
from contracts import CapabilityResult, Code, ContractError

from ._apps import app_facts
from ._audio import ALIASES, WAV, AudioError, base_type, read_recording
from ._requests import Pending, audit_row, finished_row, now_ms, result_of
from .door import MAX_RECORDING_BYTES, Recorded, RecordStart, Withdraw

TALK_PREFIX: Final = "chat/talk."  # a push-to-talk recording's key (`_talk`)

log = logging.getLogger("lineup.capability_gateway")

RECORD: Final = "audio.record"
ASKED_EACH_TIME: Final = frozenset({RECORD})
MAX_RECORD_S: Final = 120  # the runtime's cap on one recording, whatever an app asks
DEFAULT_RECORD_S: Final = 30
WATCH_S: Final = 0.25  # how often a recording's app is looked at: is it still in front
UPLOAD_GRACE_S: Final = 15.0  # after a recording's end, how long the page has to send it
SLACK_MS: Final = 1500  # a recorder's framing may pass the gateway's clock by this much
PCM_RATE: Final = 16_000
PCM_BYTES_PER_S: Final = PCM_RATE * 2
WAV_HEADER: Final = 44
MADE_SLOT: Final = 3  # the slot of a request's kept artifact (the cards' are 1 and 2)
STOP_SLOT: Final = 4  # the slot of the page's word to stop
END_SLOT: Final = 5  # the slot of the card's last word: recorded, or not


class NothingRecorded(Exception):
    """A recording that holds no sound: stopped before its recorder captured any."""


@dataclass(frozen=True)
class RecordInput:
    max_seconds: int


def check_record(raw: Any) -> dict[str, Any]:
    """`{max_seconds?}`: 1 to `MAX_RECORD_S` seconds (`DEFAULT_RECORD_S` left out)."""
    value = {} if raw is None else raw
    if not isinstance(value, dict):
        raise ContractError(Code.INVALID_PAYLOAD, "input: an object is needed")
    extra = sorted(set(value) - {"max_seconds"})
    if extra:
        raise ContractError(
            Code.INVALID_PAYLOAD, f"input.{extra[0][:40]}: not a field of this capability"
        )
    seconds = value.get("max_seconds", DEFAULT_RECORD_S)
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise ContractError(Code.INVALID_PAYLOAD, "input.max_seconds: a whole number is needed")
    if not 1 <= seconds <= MAX_RECORD_S:
        raise ContractError(Code.INVALID_PAYLOAD, f"input.max_seconds: 1 to {MAX_RECORD_S} seconds")
    return value


def record_input(raw: Any) -> RecordInput:
    return RecordInput(int((raw or {}).get("max_seconds", DEFAULT_RECORD_S)))


def recorder_card(raw: Any) -> dict[str, int]:
    """What a card asking for the microphone shows the user: how long, at most how much."""
    return {"max_seconds": record_input(raw).max_seconds, "max_bytes": MAX_RECORDING_BYTES}


def terminal_recorder(env: Mapping[str, str]) -> list[str] | None:
    """The command that records 16-bit mono 16 kHz samples to its output from this host's
    sound server, or None: `parec` on PATH and a server to reach (PulseAudio's socket, or
    PipeWire's PulseAudio socket, in the user's runtime directory, or `PULSE_SERVER`)."""
    if not shutil.which("parec", path=env.get("PATH", "")):
        return None
    runtime_dir = env.get("XDG_RUNTIME_DIR", "")
    socket = Path(runtime_dir, "pulse", "native") if runtime_dir else None
    if not env.get("PULSE_SERVER") and not (socket is not None and socket.exists()):
        return None
    # A short latency: what it has recorded comes out at once, and little is lost at its end.
    rate = f"--rate={PCM_RATE}"
    return ["parec", "--raw", "--format=s16le", rate, "--channels=1", "--latency-msec=50"]


def as_wav(pcm: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(PCM_RATE)
        writer.writeframes(pcm)
    return out.getvalue()


@dataclass
class LiveRecording:
    """A recording under way: its request, who records it, and the gateway's clock on it."""

    pending: Pending
    recorder: str  # "web" (the page) or "terminal" (the sound server, here)
    limit_s: float
    started: float  # trio's clock when the gateway said yes
    cutoff: float | None = None  # when it had to end, once it had to
    stopped: str = ""  # why: "user", "limit", "background"
    recorded_bytes: int = 0  # what a recorder here has read so far
    dropped: bool = False  # taken back: what it recorded is not kept
    stop: trio.Event = field(default_factory=trio.Event)  # the user's stop (the terminal)
    done: trio.Event = field(default_factory=trio.Event)

    @property
    def key(self) -> str:
        return str(self.pending.row["request_id"])

    def cut(self, why: str) -> None:
        if self.cutoff is None:
            self.cutoff, self.stopped = trio.current_time(), why

    def allowed_ms(self) -> float:
        """How long the recording may last: the time the microphone was allowed on."""
        end = self.cutoff if self.cutoff is not None else trio.current_time()
        return min(end - self.started, self.limit_s) * 1000 + SLACK_MS


class Recordings(Actor):
    """The gateway's recordings: started by the user's yes, watched, kept as an artifact."""

    data_dir: Path
    core: dict[str, Any]
    call_timeout: float
    web_host: str | None
    open: dict[str, Pending]
    loaded: trio.Event
    counts: dict[str, int]
    write: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    store: Callable[[str, dict[str, Any]], Awaitable[Any]]
    registry: Callable[[], Awaitable[dict[str, Any]]]
    _card: Callable[..., Awaitable[None]]
    _changed_since: Callable[[dict[str, Any]], Awaitable[tuple[CapabilityResult, str] | None]]
    _settle: Callable[[Pending, dict[str, Any], str], Awaitable[None]]
    _talked: Callable[[dict[str, Any], dict[str, Any]], Awaitable[None]]

    recordings: dict[str, LiveRecording]
    terminal_command: list[str] | None

    def _start_recordings(self) -> None:
        self.recordings = {}
        self.terminal_command = terminal_recorder(os.environ)

    def recordings_now(self) -> dict[str, dict[str, Any]]:
        """The recordings under way, for the gateway's statistics: who records each, for
        how long so far, and how many bytes a recorder here has read."""
        now = trio.current_time()
        return {
            key: {
                "recorder": live.recorder,
                "seconds": round(now - live.started, 1),
                "bytes": live.recorded_bytes,
            }
            for key, live in self.recordings.items()
        }

    def recorded_by(self) -> str:
        """How this host records, in the user's words (`lineup settings show`)."""
        ways = []
        if self.web_host:
            ways.append("the browser's microphone, in the page that asks")
        if self.terminal_command is not None:
            ways.append(f"the sound server ({self.terminal_command[0]}), from the terminal")
        return " or ".join(ways)

    # -- the user's yes -----------------------------------------------------------------------

    @handles("capability_gateway.record_start")
    async def record_start(self, msg: Message[RecordStart]) -> Any:
        """The page's "Start recording" (from the web host): the yes to a waiting
        `audio.record` request, recorded by the page. {`max_ms`, `max_bytes`}: how long and
        how much it may send; a request not waiting for it is `invalid_state`."""
        await self.loaded.wait()
        pending = self.open.get(str(msg.body["request_id"]))
        waiting = pending is not None and pending.row["state"] == "asking"
        if pending is None or not waiting or pending.row["capability"] != RECORD:
            raise ContractError(Code.INVALID_STATE, "This request does not wait for a recording.")
        live = await self._begin(pending, "web", "allowed once by the user: the page records")
        if live is None:
            raise ContractError(Code.INVALID_STATE, "This request ended before it could record.")
        return {"max_ms": int(live.limit_s * 1000), "max_bytes": MAX_RECORDING_BYTES}

    async def _record_in_terminal(self, pending: Pending) -> None:
        """The chat's "Record now" (the terminal's answer): recorded here from the sound
        server; with none, the request ends `unsupported_on_host`."""
        row = pending.row
        if self.terminal_command is None:
            status = CapabilityResult.UNSUPPORTED_ON_HOST
            finished = finished_row(row, status, None)
            why = "no sound server to record from here: record in the page instead"
            await self.write({"requests": [finished], "audit": [audit_row(str(status), row, why)]})
            self.counts[status.value] += 1
            await self._settle(pending, result_of(finished), str(status))
            return
        live = await self._begin(pending, "terminal", "allowed once by the user: recording here")
        if live is not None:
            self.nursery.start_soon(self._record_here, live, self.terminal_command)

    async def _begin(self, pending: Pending, recorder: str, why: str) -> LiveRecording | None:
        """Record the request as started and watch it; None when what changed while the
        user decided refuses it (then it is settled)."""
        row = pending.row
        row["state"] = "deciding"  # before any await: no deadline or other answer applies
        changed = await self._changed_since(row)
        if changed is not None:
            status, reason = changed
            finished = finished_row(row, status, None)
            audit = audit_row(str(status), row, reason)
            await self.write({"requests": [finished], "audit": [audit]})
            self.counts[status.value] += 1
            await self._settle(pending, result_of(finished), "answered")
            return None
        limit_s = float(record_input(row["input"]).max_seconds)
        if recorder == "terminal":  # a WAV's quota runs out first
            limit_s = min(limit_s, (MAX_RECORDING_BYTES - WAV_HEADER) / PCM_BYTES_PER_S)
        prepared = {"recorder": recorder, "max_ms": int(limit_s * 1000)}
        started = {**row, "state": "running", "prepared": prepared, "updated_ms": now_ms()}
        await self.write({"requests": [started], "audit": [audit_row("started", row, why)]})
        pending.row = started
        live = LiveRecording(pending, recorder, limit_s, trio.current_time())
        self.recordings[live.key] = live
        # The card closes saying it records: the chat shows it, the terminal says how to stop.
        await self._card(started, "closed", outcome="recording")
        self.nursery.start_soon(self._watch, live)
        return live

    # -- while it records ---------------------------------------------------------------------

    async def _watch(self, live: LiveRecording) -> None:
        """End the recording at its limit, when its app leaves the foreground or the user
        stops it; give up on a page that sends nothing."""
        row = live.pending.row
        while not live.done.is_set():
            with trio.move_on_after(WATCH_S):
                await live.stop.wait()
            if live.done.is_set():
                return
            if live.cutoff is None:
                if live.stop.is_set():
                    live.cut("user")
                elif trio.current_time() - live.started >= live.limit_s:
                    live.cut("limit")
                elif not live.key.startswith(TALK_PREFIX) and not await self._in_front(
                    row["app_scope"]
                ):  # push-to-talk follows the user's page, not an app in front
                    live.cut("background")
                if live.cutoff is not None:
                    await self._tell_stop(live)
            elif trio.current_time() > live.cutoff + UPLOAD_GRACE_S:
                why = "no recording came from the page in time"
                await self._end(live, CapabilityResult.FAILED, str(Code.FAILED), None, why)

    async def _in_front(self, app_scope: str) -> bool:
        return app_facts(await self.registry(), app_scope, self.core).foreground

    async def _tell_stop(self, live: LiveRecording) -> None:
        log.info("the recording %s stops: %s", live.key, live.stopped)
        if live.recorder != "web" or not self.web_host:
            return
        body = {
            "conversation_id": live.pending.row["conversation_id"],
            "request_id": live.key,
        }
        await self.cast(
            self.web_host, "web_host.recording.stop", body, id=derive_id(live.key, STOP_SLOT)
        )

    @handles("capability_gateway.record_stop")
    async def record_stop(self, msg: Message[RecordStart]) -> Any:
        """The user's stop of a recording the gateway makes (the terminal's `/stop`):
        {`stopped`}: whether one was under way."""
        live = self.recordings.get(str(msg.body["request_id"]))
        if live is None:
            return {"stopped": False}
        live.stop.set()
        return {"stopped": True}

    async def _drop_recording(self, key: str, why: str) -> None:
        """End a recording under way without keeping it: `failed`, code `withdrawn`."""
        live = self.recordings[key]
        live.cut("user")
        live.dropped = True  # before any await: a recording arriving meanwhile is not kept
        await self._tell_stop(live)
        await self._end(live, CapabilityResult.FAILED, str(Code.WITHDRAWN), None, why)

    @handles("capability_gateway.stop")
    async def stop_own(self, msg: Message[Withdraw]) -> None:
        """An app ends its own recording early (its surface's Stop); another's, or one
        not under way, is left alone."""
        scope = msg.sender.removeprefix("app.")
        live = self.recordings.get(f"{scope}/{msg.body['request_id']}")
        if live is not None and msg.sender.startswith("app."):
            live.stop.set()

    async def _record_here(self, live: LiveRecording, command: list[str]) -> None:
        """Record from the sound server until the recording is cut, then keep it."""
        limit = int(live.limit_s * PCM_BYTES_PER_S) // 2 * 2
        pcm = bytearray()
        try:
            process = await trio.lowlevel.open_process(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            log.exception("the recorder %s could not run", command[0])
            await self._end(live, CapabilityResult.FAILED, str(Code.FAILED), None, "no recorder")
            return
        assert process.stdout is not None
        try:
            while len(pcm) < limit and live.cutoff is None:
                with trio.move_on_after(WATCH_S):
                    chunk = await process.stdout.receive_some(8192)
                    if not chunk:
                        break
                    pcm += chunk
                    live.recorded_bytes = len(pcm)
        finally:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
        live.cut("limit")
        data = as_wav(bytes(pcm[:limit]))
        await self._take(live, data, WAV)

    # -- what was recorded --------------------------------------------------------------------

    @handles("capability_gateway.recorded")
    async def recorded(self, msg: Message[Recorded]) -> Any:
        """What the page recorded (from the web host's upload route): {`status`, `code`?},
        the request's outcome."""
        live = self.recordings.get(str(msg.body["request_id"]))
        if live is None or live.recorder != "web" or live.done.is_set():
            raise ContractError(Code.INVALID_STATE, "This recording is not expected any more.")
        live.cut(str(msg.body.get("stopped") or "user"))
        result = await self._take(live, bytes(msg.body["data"]), str(msg.body["media_type"]))
        answer = {"status": result["status"]}
        if result.get("code"):
            answer["code"] = result["code"]
        return answer

    async def _take(self, live: LiveRecording, data: bytes, declared: str) -> dict[str, Any]:
        """The recording checked from its bytes and kept as the app's artifact: the result."""
        if live.dropped or live.done.is_set():
            return {"status": str(CapabilityResult.FAILED), "code": str(Code.INVALID_STATE)}
        try:
            shown = self._checked(live, data, declared)
        except NothingRecorded:
            # Stopped by the user before a sound was captured: their stop, nothing to keep.
            status = (
                CapabilityResult.CANCELLED_BY_USER
                if live.stopped == "user"
                else CapabilityResult.FAILED
            )
            code = None if status == CapabilityResult.CANCELLED_BY_USER else str(Code.FAILED)
            return await self._end(live, status, code, None, "nothing was recorded")
        except ContractError as refused:
            failed = CapabilityResult.FAILED
            return await self._end(live, failed, str(refused.code), None, refused.detail)
        row = live.pending.row
        seconds = max(1, math.floor(shown.duration_ms / 1000 + 0.5))
        body = {
            "app_scope": row["app_scope"],
            "conversation_id": row["conversation_id"],
            "data": data,
            "media_type": shown.media_type,
            "title": f"Recording of {seconds} s",
        }
        try:
            kept = await self.call(
                "store",
                "store.artifacts.keep",
                body,
                timeout=self.call_timeout * 5,
                id=derive_id(live.key, MADE_SLOT),
            )
        except CallFailed as exc:
            code = exc.code if exc.code in (Code.TOO_LARGE, Code.QUOTA_EXCEEDED) else Code.FAILED
            log.warning("the recording %s was not kept: %s", live.key, exc)
            return await self._end(live, CapabilityResult.FAILED, str(code), None, str(exc))
        output = {
            "artifact_id": kept["artifact_id"],
            "title": kept["title"],
            "media_type": kept["media_type"],
            "duration_ms": shown.duration_ms,
            "size": kept["size"],
            "stopped": live.stopped or "user",
        }
        detail = f"recorded {shown.duration_ms} ms ({live.stopped}), kept as {kept['artifact_id']}"
        return await self._end(live, CapabilityResult.COMPLETED, None, output, detail)

    def _checked(self, live: LiveRecording, data: bytes, declared: str) -> Any:
        if len(data) > MAX_RECORDING_BYTES:
            raise ContractError(
                Code.TOO_LARGE, f"the recording is over {MAX_RECORDING_BYTES} bytes"
            )
        try:
            shown = read_recording(data)
        except AudioError as exc:
            raise ContractError(Code.INVALID_PAYLOAD, str(exc)) from None
        if declared and base_type(declared) not in ALIASES[shown.media_type]:
            raise ContractError(
                Code.INVALID_PAYLOAD, f"the recording is {shown.media_type}, not {declared[:60]}"
            )
        if shown.duration_ms <= 0:
            raise NothingRecorded
        if shown.duration_ms > live.allowed_ms():
            raise ContractError(
                Code.INVALID_PAYLOAD,
                f"the recording lasts {shown.duration_ms} ms, longer than the microphone"
                f" was allowed on ({int(live.allowed_ms())} ms)",
            )
        return shown

    async def _end(
        self,
        live: LiveRecording,
        status: CapabilityResult,
        code: str | None,
        output: dict[str, Any] | None,
        detail: str,
    ) -> dict[str, Any]:
        """The recording's outcome recorded and answered; its card closed already."""
        if live.done.is_set():  # ended meanwhile (a late upload, the grace run out)
            return {"status": str(CapabilityResult.FAILED), "code": str(Code.INVALID_STATE)}
        live.done.set()
        self.recordings.pop(live.key, None)
        row = live.pending.row
        finished = finished_row(row, status, code, output)
        await self.write({"requests": [finished], "audit": [audit_row(str(status), row, detail)]})
        self.counts[status.value] += 1
        result = result_of(finished)
        self.open.pop(live.key, None)
        said = "recorded" if status == CapabilityResult.COMPLETED else "not recorded"
        await self._card(row, "closed", outcome=said, slot=END_SLOT)
        for caller, kernel_id in live.pending.waiters:
            await self.reply(caller, kernel_id, result)
        if live.key.startswith(TALK_PREFIX) and status == CapabilityResult.COMPLETED:
            await self._talked(row, dict(output or {}))
        return result
