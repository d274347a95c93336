"""`lineup appserver` and `lineup agent send|demo` as real processes, through `python -m`."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from lineup.agent_cmd import register as register_agent
from lineup.appserver_cmd import register as register_appserver
from link import Link
from peers.appserver import read_credentials, read_endpoint

from .helpers import TIMEOUT, collect, text_of, user_text

ROOT = Path(__file__).resolve().parents[2]


async def _lineup(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    module = "lineup.appserver_cmd" if args[0] == "appserver" else "lineup.agent_cmd"
    with trio.fail_after(timeout):
        return await trio.run_process(
            [sys.executable, "-m", module, *args[1:]],
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


async def _first_line(stream: trio.abc.ReceiveStream) -> str:
    data = b""
    with trio.fail_after(TIMEOUT * 2):
        while b"\n" not in data:
            chunk = await stream.receive_some()
            assert chunk, "the process closed its output"
            data += chunk
    return data.split(b"\n")[0].decode()


@asynccontextmanager
async def _process(*args: str) -> AsyncIterator[trio.Process]:
    module = "lineup.appserver_cmd" if args[0] == "appserver" else "lineup.agent_cmd"
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", module, *args[1:]],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                await stream.aclose()


async def _terminate(process: trio.Process, sig: signal.Signals = signal.SIGTERM) -> int:
    process.send_signal(sig)
    with trio.fail_after(TIMEOUT):
        return await process.wait()


async def test_agent_send_count_reaches_an_appserver_process_once_in_order(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "appserver"
    async with _process("appserver", "--port", "0", "--appserver-dir", str(data_dir)) as server:
        assert server.stdout is not None
        url = await _first_line(server.stdout)
        assert url.startswith("ws://127.0.0.1:") and url.endswith("/v1/ws")
        assert read_endpoint(data_dir) == url
        sent = await _lineup(
            "agent",
            "send",
            "--appserver-dir",
            str(data_dir),
            "--conversation",
            "conv-cli",
            "--text",
            "hello",
            "--count",
            "5",
            "--json",
        )
        assert sent.returncode == 0, sent.stderr.decode()
        report = json.loads(sent.stdout)
        assert [m["text"] for m in report["messages"]] == [f"hello #{i}" for i in range(1, 6)]
        assert [m["seq"] for m in report["messages"]] == [1, 2, 3, 4, 5]
        single = await _lineup(
            "agent",
            "send",
            "--appserver",
            url,
            "--token-file",
            str(data_dir / "credentials.json"),
            "--conversation",
            "conv-cli",
            "--text",
            "one",
        )
        assert single.returncode == 0, single.stderr.decode()
        assert single.stdout.decode().strip() == "sent 1 message(s) to conv-cli (seq 6)"

        link = Link(
            url,
            role="runtime",
            peer_id="laptop",
            token=read_credentials(data_dir).runtime_token,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(link.run)
            got = await collect(link, 6)
            nursery.cancel_scope.cancel()
        assert [text_of(r.message) for r in got] == [f"hello #{i}" for i in range(1, 6)] + ["one"]
        assert await _terminate(server) == 0
    assert read_endpoint(data_dir) is None  # removed on the way out


async def test_the_demo_agent_runs_in_the_foreground(tmp_path: Path) -> None:
    data_dir = tmp_path / "appserver"
    async with _process("appserver", "--port", "0", "--appserver-dir", str(data_dir)) as server:
        assert server.stdout is not None
        url = await _first_line(server.stdout)
        async with _process("agent", "demo", "--appserver-dir", str(data_dir)) as demo:
            link = Link(
                url,
                role="runtime",
                peer_id="laptop",
                token=read_credentials(data_dir).runtime_token,
            )
            async with trio.open_nursery() as nursery:
                await nursery.start(link.run)
                await link.submit(user_text("What can you do?"))
                await link.submit(user_text("Ask me something"))
                replies = await collect(link, 6, keep=lambda m: m["sender"]["kind"] == "agent")
                nursery.cancel_scope.cancel()
            assert text_of(replies[0].message).startswith("Here is what I can do here.")
            assert "> Ask me something" in text_of(replies[1].message)
            assert replies[-1].message["payload"]["kind"] == "choice"
            code = await _terminate(demo, signal.SIGINT)
            assert demo.stderr is not None
            said = b""
            while chunk := await demo.stderr.receive_some():
                said += chunk
            assert code == 130, said.decode()
        assert await _terminate(server) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("agent", "send", "--conversation", "c", "--text", "x", "--count", "0"),
            "not a positive integer",
        ),
        (("agent", "send", "--conversation", "c"), "required: --text"),
        (
            ("agent", "send", "--conversation", "c", "--text", "x", "--appserver-dir", "{empty}"),
            "no AppServer credentials",
        ),
        (
            ("agent", "send", "--conversation", "c", "--text", "x", "--token-file", "{empty}/t"),
            "cannot read",
        ),
        (
            ("agent", "demo", "--appserver", "http://x", "--token-file", "{token}"),
            "not a ws:// or wss:// URL",
        ),
        (
            (
                "agent",
                "send",
                "--conversation",
                "no spaces",
                "--text",
                "x",
                "--token-file",
                "{token}",
            ),
            "not a conversation id",
        ),
        (
            ("agent", "send", "--conversation", "c", "--text", "", "--token-file", "{token}"),
            "invalid_payload",
        ),
        (
            (
                "agent",
                "send",
                "--conversation",
                "c",
                "--text",
                "x",
                "--token-file",
                "{token}",
                "--appserver",
                "ws://127.0.0.1:9/v1/ws",
                "--timeout",
                "0.5",
            ),
            "no answer from the AppServer at ws://127.0.0.1:9/v1/ws for 0.5 s (0 of 1 accepted",
        ),
        (("appserver", "--port", "70000"), "not within 0"),
        (("appserver", "--delay-ms", "-1"), "non-negative"),
        (
            ("appserver", "--heartbeat-ms", "5", "--appserver-dir", "{empty}"),
            "heartbeat_interval_ms",
        ),
        (("appserver", "--agent", "Bad Id", "--appserver-dir", "{empty}"), "not a valid agent id"),
    ],
)
async def test_bad_input_gets_a_definite_error_not_a_traceback(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    token = tmp_path / "token"
    token.write_text("not-a-real-token\n")
    filled = [a.format(empty=tmp_path / "empty", token=token) for a in args]
    result = await _lineup(*filled)
    stderr = result.stderr.decode()
    assert result.returncode in (1, 2)
    assert message in " ".join(stderr.split()), stderr
    assert "Traceback" not in stderr


async def test_a_second_appserver_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "appserver"
    async with _process("appserver", "--port", "0", "--appserver-dir", str(data_dir)) as server:
        assert server.stdout is not None
        await _first_line(server.stdout)
        second = await _lineup("appserver", "--port", "0", "--appserver-dir", str(data_dir))
        assert second.returncode == 2
        assert "another AppServer (pid" in " ".join(second.stderr.decode().split())
        assert await _terminate(server) == 0


def test_every_command_and_option_has_help() -> None:
    parser = argparse.ArgumentParser(prog="lineup")
    commands = parser.add_subparsers()
    register_appserver(commands)
    register_agent(commands)
    parsers = [parser]
    checked = 0
    while parsers:
        current = parsers.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
                for choice in action._choices_actions:
                    assert choice.help, f"{current.prog} {choice.dest}"
            elif not isinstance(action, argparse._HelpAction):
                assert action.help, f"{current.prog} {action.option_strings}"
                checked += 1
    assert checked >= 20
