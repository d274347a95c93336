"""The AppServer's credentials: one runtime token and one token per agent, in its data dir.

Tokens are bearer secrets (docs/protocol.md §3.1): created on the AppServer's first start,
kept in `credentials.json` with mode 0600 in a data dir of mode 0700, and read back by
whoever embeds the server (the runtime, `lineup agent ...`). They are never logged and
never put in a frame other than `hello`.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from pydantic import ValidationError

from contracts import Sender, replace_file

CREDENTIALS_FILE: Final = "credentials.json"
CREDENTIALS_FORMAT: Final = "lineup.appserver.credentials.v1"
DEFAULT_AGENT_ID: Final = "demo"
# The default agent of an AppServer with no demo agent: whoever holds its token speaks as it
# (`lineup agent send`, an agent of the user's own), so it is not called the demo.
OWN_AGENT_ID: Final = "agent"


class CredentialsError(Exception):
    """The credentials file is missing, unreadable or malformed, or names no such agent."""


def check_agent_id(agent_id: str) -> str:
    """`agent_id`, or `ValueError` if it breaks the agent-id grammar of the contracts."""
    try:
        Sender(kind="agent", id=agent_id)
    except ValidationError:
        raise ValueError(f"{agent_id!r} is not a valid agent id") from None
    return agent_id


@dataclass(frozen=True, slots=True)
class Credentials:
    """The runtime token and the agents' tokens; the first agent is the default one."""

    runtime_token: str
    agent_tokens: Mapping[str, str] = field(repr=False)

    def __repr__(self) -> str:  # never print a secret by accident
        return f"Credentials(agents={list(self.agent_tokens)})"

    @property
    def agent_id(self) -> str:
        """The default agent: the one conversations opened by the runtime are associated with."""
        return next(iter(self.agent_tokens))

    @property
    def agent_token(self) -> str:
        return self.agent_tokens[self.agent_id]

    def token_for_agent(self, agent_id: str) -> str:
        try:
            return self.agent_tokens[agent_id]
        except KeyError:
            known = ", ".join(self.agent_tokens)
            raise CredentialsError(f"no agent {agent_id!r} here (known: {known})") from None

    def authenticate(self, role: Literal["runtime", "agent"], peer_id: str, token: str) -> bool:
        """Is `token` the credential of this role and peer? (Constant-time comparison.)

        A runtime token belongs to the account, not to one device, so any device id may use
        it; an agent token belongs to exactly one agent id.
        """
        tokens = self.agent_tokens
        expected = self.runtime_token if role == "runtime" else tokens.get(peer_id, "")
        return bool(expected) and hmac.compare_digest(expected.encode(), token.encode())

    def to_json(self) -> dict[str, object]:
        return {
            "format": CREDENTIALS_FORMAT,
            "runtime": {"token": self.runtime_token},
            "agents": [{"id": key, "token": value} for key, value in self.agent_tokens.items()],
        }


def _new_token() -> str:
    return secrets.token_urlsafe(32)


def _parse(text: str, path: Path) -> Credentials:
    try:
        data = json.loads(text)
        if data.get("format") != CREDENTIALS_FORMAT:
            raise CredentialsError(f"{path}: not a {CREDENTIALS_FORMAT} file")
        runtime = data["runtime"]["token"]
        agents = {entry["id"]: entry["token"] for entry in data["agents"]}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CredentialsError(f"{path}: malformed credentials file") from None
    tokens = [runtime, *agents.values()]
    if not agents or not all(isinstance(token, str) and token for token in tokens):
        raise CredentialsError(f"{path}: malformed credentials file")
    return Credentials(runtime, agents)


def load_credentials(path: Path) -> Credentials:
    """The credentials in the file `path` (`CredentialsError` if missing or malformed)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CredentialsError(f"no AppServer credentials in {path.parent}") from None
    except OSError as exc:
        raise CredentialsError(f"cannot read {path}: {exc.strerror}") from None
    return _parse(text, path)


def read_credentials(data_dir: Path) -> Credentials:
    """The credentials an AppServer created in `data_dir` (`CredentialsError` if none).

    This is how whoever embeds the AppServer (the runtime, `lineup agent`) gets its tokens.
    """
    return load_credentials(Path(data_dir) / CREDENTIALS_FILE)


def _write(path: Path, credentials: Credentials) -> None:
    replace_file(path, json.dumps(credentials.to_json(), indent=2) + "\n", mode=0o600)


def ensure_credentials(
    data_dir: Path, *, agents: Iterable[str] = (DEFAULT_AGENT_ID,)
) -> Credentials:
    """The credentials in `data_dir`, created (mode 0600) on first use.

    Agents named in `agents` that the file does not know yet get a token; existing tokens
    are never changed, so a runtime or agent configured earlier keeps working. The agents
    named come first, in their order: the first is the default agent of the AppServer
    started with them, and the one `lineup agent …` speaks as without `--agent`.
    """
    wanted = [check_agent_id(agent) for agent in agents]
    data_dir = Path(data_dir)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = data_dir / CREDENTIALS_FILE
    try:
        current = read_credentials(data_dir)
    except CredentialsError:
        if path.exists():
            raise
        if not wanted:
            raise ValueError("at least one agent is needed") from None
        current = Credentials(_new_token(), {})
        missing = wanted
    else:
        missing = [agent for agent in wanted if agent not in current.agent_tokens]
        leading = list(current.agent_tokens)[: len(wanted)] == wanted
        if not missing and leading and path.stat().st_mode & 0o077 == 0:
            return current
    known = dict(current.agent_tokens)
    known.update((agent, _new_token()) for agent in missing)
    tokens = {agent: known[agent] for agent in wanted} | known
    updated = Credentials(current.runtime_token, tokens)
    _write(path, updated)
    return updated
