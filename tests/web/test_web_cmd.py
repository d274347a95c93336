"""`lineup run` prints the web host's address (`--web-port`, `--no-web`), `lineup web url`
prints a fresh one for a running runtime, and each says in one sentence what to do when
there is none."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import trio

from tests.kernel.helpers import REPO_ROOT, runtime_processes
from tests.runtime.helpers import wait_for

ADDRESS = re.compile(r"Web: (http://127\.0\.0\.1:(\d+)/\?key=([A-Za-z0-9_-]+))")


def _lineup(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineup.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=env,
    )


def _run(data_dir: Path, log: Path, *flags: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "lineup.cli", "run", "--headless", "--data-dir", str(data_dir),
             *flags],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
        )  # fmt: skip


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(30)
    assert not runtime_processes(process)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> tuple[int, str | None]:
    """The status of a GET of `url` and where it sends the browser (its Location)."""
    address = url.removeprefix("http://")
    host, _, rest = address.partition("/")
    connection = http.client.HTTPConnection(host, timeout=10)
    connection.request("GET", "/" + rest)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.status, response.getheader("location")


def _status_of(url: str) -> int:
    return _get(url)[0]


def _address(log: Path, n: int) -> tuple[str, str, str] | None:
    """The `n`th address `lineup run` printed into `log` (url, port, key), once it has."""
    found = ADDRESS.findall(log.read_text())
    return found[n] if len(found) > n else None


async def test_lineup_run_prints_the_address_and_lineup_web_url_a_fresh_one(
    tmp_path: Path,
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "run.log"
    missing = _lineup("web", "url", "--data-dir", str(data_dir))
    assert missing.returncode == 2
    assert "no runtime is running on" in missing.stderr and "Traceback" not in missing.stderr
    bad_port = _lineup("run", "--web-port", "70000", "--data-dir", str(data_dir))
    assert bad_port.returncode == 2 and "'70000' is not a port" in bad_port.stderr

    port = _free_port()
    runtime = _run(data_dir, log, "--web-port", str(port))
    try:
        printed = await wait_for(lambda: ADDRESS.search(log.read_text()), 60, "the Web: line")
        assert int(printed.group(2)) == port
        fresh = _lineup("web", "url", "--json", "--data-dir", str(data_dir))
        assert fresh.returncode == 0, fresh.stderr
        url = json.loads(fresh.stdout)["url"]
        assert url.startswith(f"http://127.0.0.1:{port}/?key=") and url != printed.group(1)
        # Each opens a session once.
        assert [_status_of(u) for u in (printed.group(1), url, url)] == [303, 303, 403]
    finally:
        _stop(runtime)


async def test_lineup_run_no_web_starts_no_web_host(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "run.log"
    runtime = _run(data_dir, log, "--no-web")
    try:

        def names() -> list[str]:
            done = _lineup("debug", "actors", "--json", "--data-dir", str(data_dir))
            return [actor["name"] for actor in json.loads(done.stdout or "[]")]

        # Every child started (the host is the last of the runtime's own).
        await wait_for(lambda: "host" in names(), 60, "the runtime's actors")
        assert "web_host" not in names()
        none = _lineup("web", "url", "--data-dir", str(data_dir))
        assert none.returncode == 2 and "has no web host listening" in none.stderr
    finally:
        _stop(runtime)
    assert "Web:" not in log.read_text()


async def test_a_port_in_use_is_said_in_one_sentence(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "run.log"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        runtime = _run(data_dir, log, "--web-port", str(port))
        try:
            said = await wait_for(
                lambda: re.search(r"Web: the web host cannot listen on .*\n", log.read_text()),
                60,
                "the web host's failure",
            )
            asked = _lineup("web", "url", "--data-dir", str(data_dir))
            assert asked.returncode == 2
            assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in asked.stderr
        finally:
            _stop(runtime)
    assert said.group(0) == (
        f"Web: the web host cannot listen on 127.0.0.1:{port} (Address already in use);"
        " start the runtime again with another --web-port\n"
    )


def test_a_failure_record_gives_no_address_while_its_writer_still_runs(tmp_path: Path) -> None:
    """The web host that could not listen writes why and exits; until it has exited, the
    record names a live process, which must not pass for one that listens."""
    from actors.web_host._state import write_failure
    from lineup.web_cmd import current_url

    write_failure(tmp_path, 8123, "Address already in use", "boot-1")  # this live process
    assert current_url(tmp_path) is None


async def test_the_window_keeps_its_address_across_runs_while_the_port_is_free(
    tmp_path: Path,
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "run.log"
    ports = []
    for run in range(2):
        runtime = _run(data_dir, log)
        try:
            printed = await wait_for(lambda n=run: _address(log, n), 60, "the Web: line")
            ports.append(int(printed[1]))
        finally:
            _stop(runtime)
    assert ports[0] == ports[1]
    # Its port taken meanwhile, the next run listens on another one, and says where.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports[0]))
        taken.listen()
        runtime = _run(data_dir, log)
        try:
            printed = await wait_for(lambda: _address(log, 2), 60, "the Web: line")
            assert int(printed[1]) != ports[0]
            assert _status_of(printed[0]) == 303
        finally:
            _stop(runtime)


async def test_lineup_open_hands_the_browser_a_one_time_address_of_the_conversation(
    tmp_path: Path,
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "run.log"
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser"  # the desktop's browser, as $BROWSER names it
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(0o755)
    missing = _lineup("open", "--data-dir", str(data_dir))
    assert missing.returncode == 2 and "no runtime is running on" in missing.stderr
    runtime = _run(data_dir, log)
    try:
        await wait_for(lambda: _address(log, 0), 60, "the Web: line")
        where = ("--conversation", "c2", "--data-dir", str(data_dir), "--json")
        done = await trio.to_thread.run_sync(
            lambda: _lineup("open", *where, env={**os.environ, "BROWSER": str(browser)})
        )
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout)
        assert said["opened"] is True
        assert opened.read_text() == said["url"]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?key=[\w-]+&conversation=c2", said["url"])
        # The first, keyed load keeps the conversation the address names.
        assert _get(said["url"]) == (303, "/?conversation=c2")

        printed = _lineup("open", "--print", "--data-dir", str(data_dir))
        assert printed.returncode == 0
        assert printed.stdout.startswith("http://127.0.0.1:") and printed.stdout != said["url"]
    finally:
        _stop(runtime)
