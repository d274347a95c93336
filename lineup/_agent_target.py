"""Where the agent commands connect: the AppServer's URL, the agent's id and token, read
from the options (`--appserver`, `--data-dir` / `--appserver-dir`, `--token-file`,
`--agent`), for `lineup agent` and its MCP bridge alike."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Target:
    url: str
    agent_id: str
    token: str
    data_dir: Path


def _token(args: argparse.Namespace, data_dir: Path) -> tuple[str, str]:
    """The agent id and its token, from --token-file or the AppServer's data dir."""
    from peers.appserver import load_credentials, read_credentials

    if args.token_file is None:
        credentials = read_credentials(data_dir)
    else:
        path = Path(args.token_file)
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror}") from None
        if not text:
            raise ValueError(f"{path} is empty")
        if not text.startswith("{"):  # a bare token
            return args.agent or "demo", text
        credentials = load_credentials(path)
    agent_id = args.agent or credentials.agent_id
    return agent_id, credentials.token_for_agent(agent_id)


def resolve_target(args: argparse.Namespace) -> Target:
    """The URL, agent id and token from the options (a `--conversation` was checked by its
    option's type); `ValueError` with a definite reason."""
    from peers.appserver import CREDENTIALS_FILE, CredentialsError, read_endpoint

    from .appserver_cmd import DEFAULT_PORT, appserver_dir_of

    data_dir = appserver_dir_of(args)
    try:
        agent_id, token = _token(args, data_dir)
    except CredentialsError as exc:
        missing = args.token_file is None and not (data_dir / CREDENTIALS_FILE).exists()
        if missing:
            raise ValueError(
                f"no AppServer credentials in {data_dir}; start the runtime there with "
                "`lineup run` (or `lineup appserver`), point at it with --data-dir DIR or "
                "--appserver-dir DIR, or pass --token-file"
            ) from None
        raise ValueError(str(exc)) from None
    recorded = read_endpoint(data_dir)
    if not args.appserver and not recorded and args.token_file is None:
        raise ValueError(
            f"no AppServer is running for {data_dir} (it records its address there while it"
            " runs); start the runtime with `lineup run`, or pass --appserver URL"
        )
    url = args.appserver or recorded or f"ws://127.0.0.1:{DEFAULT_PORT}/v1/ws"
    if not url.startswith(("ws://", "wss://")):
        raise ValueError(f"--appserver: {url!r} is not a ws:// or wss:// URL")
    return Target(url, agent_id, token, data_dir)
