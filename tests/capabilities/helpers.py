"""What the capability tests do and read: the keeper's calls, the consent cards in the chat,
the user's answers through the host, and the gateway's own record (runtime.db)."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from actors import runtime_children
from actors.runtime_token import write_token
from apps.chat import history
from lineup.ui_session import UiSession
from tests.kernel.helpers import Runtime
from tests.runtime.helpers import CONVERSATION, Stack, runtime_config, wait_for
from tests.tools.helpers import Agent, app, final_of, new_revision, tools_of

SCOPE = "keeper"
AFTER_EFFECT = "capability_gateway.after_effect"


def crashing_once(once: Path) -> dict[str, str]:
    """The environment in which the gateway kills itself after its first effect, once."""
    once.mkdir()
    return {"LINEUP_CRASH": f"{AFTER_EFFECT}@1", "LINEUP_CRASH_ONCE_DIR": str(once)}


def configure(stack: Stack, gateway: dict[str, Any]) -> None:
    """The runtime the stack starts, its gateway with these settings besides its own."""
    assert stack.server is not None
    config = runtime_config(stack.data_dir, stack.url)
    for child in config["children"]:
        if child["name"] == "capability_gateway":
            child["config"].update(gateway)
    stack.data_dir.mkdir(parents=True, exist_ok=True)
    stack.runtime = Runtime(stack.data_dir, config, log_dir=stack.base)


async def keeper_ready(
    stack: Stack,
    keeper: tuple[Path, Path],
    *,
    rate_limit: dict[str, Any] | None = None,
    gateway: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Agent:
    """The AppServer, the runtime (its processes with `env`, the gateway's config with
    `gateway` and `rate_limit`) and the agent up, the keeper installed, enabled and in the
    agent's inventory: the agent's side of its calls."""
    await stack.start_appserver()
    configure(stack, {**(gateway or {}), **({"rate_limit": rate_limit} if rate_limit else {})})
    assert stack.server is not None and stack.runtime is not None
    write_token(
        stack.data_dir / runtime_children.TOKEN_FILE, stack.server.credentials.runtime_token
    )
    stack.runtime.start(wait=False, env=env)
    await stack.wait_lifecycle("online")
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    bundle, key = keeper
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(key, stack.data_dir / "trusted_keys")
    app(stack, "install", bundle)
    app(stack, "enable", SCOPE)
    await new_revision(stack, first)
    await wait_for(lambda: "keeper.ask" in tools_of(stack), 30, "the keeper's tools")
    return Agent(stack, client, SCOPE)


async def ask(
    agent: Agent,
    call_id: str,
    capability: str,
    input: Any = None,
    *,
    front: bool = False,
    timeout_s: float = 60,
    purpose: str = "the test needs it",
) -> None:
    """The agent tells the keeper to ask for `capability` (not waiting for the outcome)."""
    arguments: dict[str, Any] = {
        "capability": capability,
        "purpose": purpose,
        "timeout_s": timeout_s,
    }
    if input is not None:
        arguments["input"] = input
    method = "keeper.ask_front" if front else "keeper.ask"
    await agent.client.submit(agent.invoke(f"call_{call_id}", method, arguments))


async def outcome(stack: Stack, call_id: str, timeout: float = 60) -> dict[str, Any]:
    """What the gateway answered the keeper, as the keeper's call returned it."""
    row = await final_of(stack, f"call_{call_id}", timeout)
    assert row["state"] == "succeeded", row
    return dict(row["output"])


async def asked(agent: Agent, call_id: str, capability: str, **options: Any) -> dict[str, Any]:
    await ask(agent, call_id, capability, **options)
    return await outcome(agent.stack, call_id)


def cards(stack: Stack) -> list[dict[str, Any]]:
    """The consent cards the chat shows open in the conversation."""
    waiting = history(stack.data_dir, CONVERSATION)["pending_interactions"]
    return [card for card in waiting if card.get("origin") == "runtime"]


async def card_for(stack: Stack, capability: str, known: set[str] | None = None) -> str:
    """The id of an open consent card for `capability` (not one of `known`)."""

    def found() -> str | None:
        return next(
            (
                card["interaction_id"]
                for card in cards(stack)
                if card["capability"] == capability and card["interaction_id"] not in (known or ())
            ),
            None,
        )

    return await wait_for(found, 30, f"a consent card for {capability}")


def answer(stack: Stack, card: str, choice: str) -> None:
    """The user picks `choice` (once, session, always, deny) on a consent card, or dismisses
    it (`dismiss`), through the host as the terminal chat does."""
    body: dict[str, Any] = {"conversation_id": CONVERSATION, "interaction_id": card}
    if choice == "dismiss":
        body["kind"] = "dismiss"
    else:
        body.update(kind="answer", selected=[choice])
    UiSession(stack.data_dir, session_id="test").act(body)


def rows(stack: Stack, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    path = stack.data_dir / "runtime.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        return db.execute(query, params).fetchall()


def gateway_rows(stack: Stack, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of the capability gateway's own file (its requests and grants)."""
    path = stack.data_dir / "capability_gateway.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        return db.execute(query, params).fetchall()


def requests(stack: Stack) -> list[dict[str, Any]]:
    """The gateway's requests, oldest first."""
    keys = ("request_id", "capability", "state", "status", "code")
    query = f"SELECT {', '.join(keys)} FROM capability_requests ORDER BY created_ms, rowid"
    return [dict(zip(keys, row, strict=True)) for row in gateway_rows(stack, query)]


async def audit_of(stack: Stack, request_id: str) -> list[str]:
    """The audit codes the gateway wrote for one request, in order, once the store has
    every row the gateway wrote so far: it decides in its own file, the rows waiting in its
    `audit_outbox`, and hands them over after, so a row may trail the decision a test saw."""
    await wait_for(
        lambda: not gateway_rows(stack, "SELECT 1 FROM audit_outbox LIMIT 1"),
        30,
        "the gateway's audit rows handed to the store",
    )
    found = rows(
        stack,
        "SELECT code FROM audit WHERE source = 'capability_gateway' AND message_id = ?"
        " ORDER BY pos",
        (request_id,),
    )
    return [code for (code,) in found]


def audit_details(stack: Stack) -> list[str]:
    """The details of the gateway's audit rows, in order."""
    found = rows(stack, "SELECT detail FROM audit WHERE source = 'capability_gateway' ORDER BY pos")
    return [detail for (detail,) in found]
