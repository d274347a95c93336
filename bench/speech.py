"""`lineup bench speech`: `speech.transcribe` through the runtime beside PocketSphinx alone on
the same audio, in the same run.

The runtime (`lineup run --headless --appserver URL`, with its own reference AppServer
process) gets the bench's speech app (`bench/speechapp`), built, signed, installed and enabled
with the real `lineup app` CLI. The agent has it speak `--text` (`speech.speak`: espeak-ng,
resampled by sox, kept as the app's WAV artifact), and the bench answers both consent cards
*Always allow* through the host, as the user would in the chat. Then, `--rounds` times,
interleaved so that load on a shared machine falls on both alike:

(a) PocketSphinx alone: the provider's engine (`_sphinx_worker.py`, a fresh `python -I`
process that loads the English model and decodes) on the artifact's samples, timed by the
bench from start to exit;

(b) the capability: the agent calls `benchspeech.hear`, whose app asks `speech.transcribe` for
the artifact and times its request to the gateway's answer (`request_ms`): the gateway's
checks and records, the store's read of the artifact, and the same engine.

`*_rtf` is time over the audio's duration (real-time factor: under 1 is faster than
speech); the target is (b) at most 1.2x (a). Everything lives in one fresh temp dir, removed
at the end; every process the bench starts is stopped at the end, on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import wave
from pathlib import Path
from typing import Any

import trio
from rich.console import Console

from ._e2e_procs import AppServerProcess, RuntimeProcess
from ._procs import BenchError, Processes
from ._runner import run_bench
from ._speech_options import add_arguments
from ._tools_app import SignedApp, build_signed_app, lineup
from ._tools_flow import CONVERSATION, open_bench_agent, wait_until
from ._trio_run import run_measure, term_as_ctrl_c
from .speechapp import APP_SCOPE, HEAR, SAY

TARGET_RATIO = 1.2
CALL_TIMEOUT_S = 180.0


def _problem(args: argparse.Namespace) -> str | None:
    from actors.capability_gateway import speaks, transcribes

    if args.rounds < 1:
        return "--rounds must be at least 1"
    if not (speaks(os.environ) and transcribes(os.environ)):
        return "this host serves no speech: install espeak-ng and sox, and pocketsphinx"
    return None


def _lists(agent: Any, method: str) -> bool:
    inventory = agent.inventory(CONVERSATION)
    return inventory is not None and any(t.method == method for t in inventory.tools)


async def _call(agent: Any, method: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call of the agent, followed to its final: the app's answer."""
    with trio.move_on_after(CALL_TIMEOUT_S):
        final = await agent.call(CONVERSATION, method, arguments).outcome()
        if final.type != "lineup.tool.result":
            raise BenchError(f"{method} ended {final.type}: {final.envelope.payload}")
        answer = dict(final.envelope.payload["output"])
        if answer.get("status") != "completed":
            raise BenchError(f"{method}: the capability answered {answer}")
        return answer
    raise BenchError(f"{method} did not end in {CALL_TIMEOUT_S:.0f} s")


async def _allowed(agent: Any, data_dir: Path, method: str, arguments: dict[str, Any]) -> Any:
    """A first call whose capability the user allows for good on its consent card."""
    from apps.chat import history
    from lineup.ui_session import UiSession

    capability = "speech.speak" if method == SAY else "speech.transcribe"

    def card() -> str | None:
        waiting = history(data_dir, CONVERSATION)["pending_interactions"]
        return next(
            (str(w["interaction_id"]) for w in waiting if w.get("capability") == capability),
            None,
        )

    async with trio.open_nursery() as nursery:
        answered: list[dict[str, Any]] = []

        async def call() -> None:
            answered.append(await _call(agent, method, arguments))

        nursery.start_soon(call)
        interaction = await wait_until(card, 60, f"the consent card for {capability}")
        body = {
            "conversation_id": CONVERSATION,
            "interaction_id": interaction,
            "kind": "answer",
            "selected": ["always"],
        }
        await trio.to_thread.run_sync(UiSession(data_dir, session_id="bench").act, body)
    return answered[0]


def _samples(wav_bytes: bytes) -> bytes:
    with wave.open(io.BytesIO(wav_bytes), "rb") as reader:
        return reader.readframes(reader.getnframes())


def _alone(pcm: bytes) -> tuple[float, str]:
    """PocketSphinx alone on `pcm`: the worker's process, start to exit (ms), and its text."""
    import json

    from actors.capability_gateway import worker_command

    started = time.perf_counter()
    done = subprocess.run(worker_command(), input=pcm, capture_output=True, check=True)
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, str(json.loads(done.stdout)["text"])


async def _rounds(
    procs: Processes, work: Path, app: SignedApp, args: argparse.Namespace, err: Console
) -> dict[str, Any]:
    server = AppServerProcess(procs, work / "appserver", "appserver")
    runtime = RuntimeProcess(procs, work / "rt", "runtime")  # short: socket paths are bounded
    await server.start()
    try:
        credentials = server.credentials()
        trusted = runtime.data_dir / "trusted_keys"
        trusted.mkdir(parents=True)
        shutil.copy(app.public_key, trusted / app.public_key.name)
        runtime.start(url=server.url, token=credentials.runtime_token)
        await runtime.wait_online()
        err.print("installing and enabling the bench's speech app", highlight=False)
        data_dir = ("--data-dir", runtime.data_dir)
        await trio.to_thread.run_sync(lineup, "app", "install", app.bundle, *data_dir)
        await trio.to_thread.run_sync(lineup, "app", "enable", APP_SCOPE, *data_dir)
        async with open_bench_agent(server.url, credentials) as agent:
            await agent.send_text(CONVERSATION, "hello")  # associates the conversation
            await wait_until(lambda: _lists(agent, HEAR), 60, f"an inventory listing {HEAR}")
            spoken = await _allowed(agent, runtime.data_dir, SAY, {"text": args.text})
            artifact_id = str(spoken["output"]["artifact"]["artifact_id"])
            duration_ms = int(spoken["output"]["duration_ms"])
            path = runtime.data_dir / "artifacts" / artifact_id
            pcm = _samples(await trio.to_thread.run_sync(path.read_bytes))
            hear = {"artifact_id": artifact_id}
            err.print(f"warming up on {duration_ms / 1000:.2f} s of speech", highlight=False)
            heard = (await _allowed(agent, runtime.data_dir, HEAR, hear))["output"]["text"]
            await trio.to_thread.run_sync(_alone, pcm)
            alone_ms, through_ms, texts = [], [], set()
            for n in range(args.rounds):
                err.print(f"round {n + 1} of {args.rounds}", highlight=False)
                elapsed, text = await trio.to_thread.run_sync(_alone, pcm)
                alone_ms.append(elapsed)
                texts.add(text)
                answer = await _call(agent, HEAR, hear)
                through_ms.append(float(answer["request_ms"]))
                texts.add(answer["output"]["text"])
    finally:
        runtime.stop()
        server.stop()
    alone, through = statistics.median(alone_ms), statistics.median(through_ms)
    return {
        "rounds": args.rounds,
        "text": args.text,
        "heard": heard,
        "same_text_each_way": texts == {heard},
        "audio_ms": duration_ms,
        "sphinx_alone_ms": round(alone, 1),
        "transcribe_ms": round(through, 1),
        "sphinx_alone_rtf": round(alone / duration_ms, 3),
        "transcribe_rtf": round(through / duration_ms, 3),
        "ratio": round(through / alone, 3),
        "target_ratio": TARGET_RATIO,
        "meets_target": through <= TARGET_RATIO * alone,
        "sphinx_alone_each_ms": [round(v, 1) for v in alone_ms],
        "transcribe_each_ms": [round(v, 1) for v in through_ms],
    }


async def _measure(
    work: Path, procs: Processes, args: argparse.Namespace, err: Console
) -> dict[str, Any]:
    term_as_ctrl_c()
    load_before = os.getloadavg()[0]
    err.print("building and signing the bench's speech app with `lineup app`", highlight=False)
    app = await trio.to_thread.run_sync(build_signed_app, work, "bench.speechapp", "bench-speech")
    record = await _rounds(procs, work, app, args, err)
    record["settings"] = {
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        # Other work on a shared machine shows up in every figure; say how much.
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    return record


def print_table(record: dict[str, Any], out: Console) -> None:
    verdict = "meets" if record["meets_target"] else "MISSES"
    out.print(
        f"speech.transcribe on {record['audio_ms'] / 1000:.2f} s of espeak-ng's"
        f" {record['text']!r}, heard as {record['heard']!r};"
        f" median of {record['rounds']} rounds each",
        highlight=False,
    )
    out.print(
        f"  (a) PocketSphinx alone   {record['sphinx_alone_ms']:8.1f} ms"
        f"  rtf {record['sphinx_alone_rtf']:.3f}",
        highlight=False,
    )
    out.print(
        f"  (b) the capability       {record['transcribe_ms']:8.1f} ms"
        f"  rtf {record['transcribe_rtf']:.3f}  {record['ratio']:.2f}x (a), {verdict} the"
        f" target of {record['target_ratio']}x",
        highlight=False,
    )
    out.print(f"  load average (1 min) before, after: {record['settings']['loadavg_1m']}")


def run(args: argparse.Namespace) -> int:
    """The `lineup bench speech` command; 0 when it measured, whatever the verdict."""

    def measure(work: Path, procs: Processes, err: Console) -> dict[str, Any]:
        return run_measure(_measure, work, procs, args, err)

    return run_bench(args, problem=_problem(args), measure=measure, print_table=print_table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup bench speech", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
