"""`lineup bench web`: agent → the page in a browser, beside agent → the chat app, in one run.

The runtime is `lineup run --headless --appserver URL` with its web host, on its own
reference AppServer process (`lineup appserver`). The browser is headless Debian Chromium
driven by Selenium, which opens the address `lineup web url` prints (the one-time key
becomes its session cookie) and then the bench's conversation. A MutationObserver in the
page takes the page's wall clock (`performance.timeOrigin + performance.now()`) when each
message's element enters the timeline.

The agent sends `--messages` messages at 50 msg/s, each text stamped with its
`time.time_ns()` when it queued it (one machine, one clock). For each message the bench
has the time the chat app applied it (its log's `at_ns`, as `lineup bench e2e` reads it:
the runtime's own latency) and the time it entered the page's DOM; the target is the page
within one frame (16 ms) of the runtime at the median. Then `--loads` page loads are timed
from navigation start to the page's ready mark (its first view drawn on an open socket),
on the conversation the messages made, and the web host process's memory is read. Last,
`--launches` times the agent bringing an installed app in front: its call → the app's frame
on the page's stage, beside the runtime's own launch of it (`_web_stage`), and
`--recordings` times the user's Stop of a recording in the page → the recording kept as the
voice app's artifact, beside a bare upload of the same bytes through the same web host
(`_web_record`).

Everything lives in one fresh temp dir, removed at the end; every process the bench starts
(the AppServer, the runtime, chromedriver and Chromium) is stopped at the end, on Ctrl-C
or SIGTERM too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sqlite3
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import trio
from rich.console import Console

from ._e2e_flow import CONVERSATION, Arrivals, ChatLog, open_bench_agent, window
from ._e2e_procs import AppServerProcess, RuntimeProcess, tree_memory, wait_for
from ._procs import BenchError, Processes
from ._runner import run_bench
from ._trio_run import run_measure, term_as_ctrl_c
from ._web_browser import Browser
from ._web_options import RATE, add_arguments, check_arguments
from ._web_record import install_voice, measure_recordings, tone_wav
from ._web_report import print_table, result_record
from ._web_stage import install_pomodoro, measure_stage

T = TypeVar("T")
CLOCK_PROBES = 20


async def in_thread(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` in a worker thread: Selenium blocks, the agent must not."""
    return await trio.to_thread.run_sync(partial(call, *args))


async def _page_sees(browser: Browser, count: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while await in_thread(browser.seen_count) < count:
        if time.monotonic() >= deadline:
            raise BenchError(f"timed out after {timeout:.0f} s waiting for {what} in the page")
        await trio.sleep(0.1)


async def _ready(browser: Browser, url: str) -> float:
    """Load `url`; navigation start → the page's ready mark, ms."""
    await in_thread(browser.go, url)
    deadline = time.monotonic() + 30
    while (ready := await in_thread(browser.ready_ms)) is None:
        if time.monotonic() >= deadline:
            raise BenchError("the page did not get ready in 30 s")
        await trio.sleep(0.01)
    return ready


async def _web_url(data_dir: Path) -> str:
    """`lineup web url --json`, as the user asks for the address."""
    command = [sys.executable, "-m", "lineup.cli", "web", "url", "--json"]
    done = await trio.run_process(
        [*command, "--data-dir", str(data_dir)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"lineup web url exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return str(json.loads(done.stdout)["url"])


async def _clock(browser: Browser) -> dict[str, float]:
    """The page's wall clock against the bench's, from the tightest of a few probes: the
    offset at the probe's midpoint, and half its round trip as the bound."""
    best: tuple[float, float] | None = None
    for _ in range(CLOCK_PROBES):
        before = time.time_ns()
        page_ms = await in_thread(browser.now_ms)
        after = time.time_ns()
        bound = (after - before) / 2e6
        if best is None or bound < best[1]:
            best = (page_ms - (before + after) / 2e6, bound)
    assert best is not None
    return {"offset_ms": best[0], "bound_ms": best[1]}


def _page_arrivals(seen: list[tuple[str, float]]) -> Arrivals:
    arrivals = Arrivals()
    for text, at_ms in seen:
        arrivals.add(text, round(at_ms * 1e6))
    return arrivals


async def _apps_in_the_page(
    data_dir: Path,
    url: str,
    credentials: Any,
    browser: Browser,
    args: argparse.Namespace,
    *,
    offset_ms: float,
    work: Path,
    err: Console,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """The agent brings the pomodoro onto the stage (`--launches`), then asks the voice app
    for recordings the page makes (`--recordings`): their figures."""
    from peers.agent import open_agent

    err.print(f"{args.launches} launches of the pomodoro onto the page's stage", highlight=False)
    await install_pomodoro(data_dir, work)
    agent_id = credentials.agent_id
    token = credentials.token_for_agent(agent_id)
    async with open_agent(url, agent_id=agent_id, token=token, inbox=False) as client:
        stage = await measure_stage(data_dir, client, browser, args.launches, offset_ms)
        err.print(f"{args.recordings} recordings in the page", highlight=False)
        await install_voice(data_dir, work)
        recordings = await measure_recordings(data_dir, client, browser, args.recordings, offset_ms)
    return stage, recordings


async def _measure(
    work: Path, procs: Processes, browser: Browser, args: argparse.Namespace, err: Console
) -> dict[str, Any]:
    term_as_ctrl_c()
    load_before = os.getloadavg()[0]
    err.print("starting an AppServer and `lineup run` with its web host", highlight=False)
    server = AppServerProcess(procs, work / "appserver", "appserver")
    # A short name: the control socket's path (DATA_DIR/control.sock) is bounded.
    runtime = RuntimeProcess(procs, work / "rt", "runtime")
    from actors.web_host import endpoint_listening, read_endpoint
    from apps.chat import app_dir

    await server.start()
    credentials = server.credentials()
    runtime.start(url=server.url, token=credentials.runtime_token)
    await runtime.wait_online()

    def listening() -> dict[str, Any] | None:
        endpoint = read_endpoint(runtime.data_dir)
        return endpoint if endpoint is not None and endpoint_listening(endpoint) else None

    endpoint = await wait_for(listening, 30, "the web host to listen")
    err.print("opening the page in headless Chromium", highlight=False)
    chromium = await in_thread(browser.open)
    await in_thread(browser.go, await _web_url(runtime.data_dir))  # the key → the cookie
    page_url = f"http://127.0.0.1:{endpoint['port']}/?conversation={CONVERSATION}"
    await _ready(browser, page_url)
    await in_thread(browser.observe)
    clock = await _clock(browser)

    log = Arrivals()
    chat = ChatLog(app_dir(runtime.data_dir), log)
    budget = 60 + 2 * args.messages / RATE
    async with open_bench_agent(server.url, credentials) as agent:
        await agent.burst("warm", 1)  # creates the conversation
        await chat.wait("warm", 1, 60)
        await _page_sees(browser, 1, 60, "the first message")
        err.print(f"{args.messages:,} agent messages at {RATE:g} msg/s", highlight=False)
        await agent.paced("paced", args.messages, RATE)
        await chat.wait("paced", args.messages, budget)
        await _page_sees(browser, 1 + args.messages, budget, "every message")
    page = _page_arrivals(await in_thread(browser.seen))
    page_window = window(page, "paced", args.messages)
    chat_window = window(log, "paced", args.messages)
    in_log = {n: arrived for n, _, arrived in log.by_tag["paced"]}
    legs = [(arrived - in_log[n]) / 1e6 for n, _, arrived in page.by_tag["paced"]]

    err.print(f"{args.loads} page loads on that conversation", highlight=False)
    ready = [await _ready(browser, page_url) for _ in range(args.loads)]

    stage, recordings = await _apps_in_the_page(
        runtime.data_dir,
        server.url,
        credentials,
        browser,
        args,
        offset_ms=clock["offset_ms"],
        work=work,
        err=err,
    )
    memory = tree_memory(int(endpoint["pid"]))
    settings = {
        "messages": args.messages,
        "rate": RATE,
        "loads": args.loads,
        "launches": args.launches,
        "recordings": args.recordings,
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "chromium": chromium,
        # Other work on a shared machine shows up in every figure; say how much.
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    return result_record(
        settings=settings,
        page=page_window,
        chat=chat_window,
        web_legs_ms=legs,
        ready_ms=ready,
        memory=memory,
        clock=clock,
        stage=stage,
        recordings=recordings,
    )


def run(args: argparse.Namespace) -> int:
    """The `lineup bench web` command; 0 when it measured, whatever the verdict."""

    def measure(work: Path, procs: Processes, err: Console) -> dict[str, Any]:
        browser = Browser(work, microphone=tone_wav(work / "microphone.wav"))
        try:
            return run_measure(_measure, work, procs, browser, args, err)
        finally:
            browser.close()  # before the runner stops the runtime and removes the dir

    return run_bench(args, problem=check_arguments(args), measure=measure, print_table=print_table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup bench web", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
