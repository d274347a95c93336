"""Whether a submitted message enters the stream: the rules of docs/protocol.md §4.5.

In order: a known idempotency key gets its stored verdict back (`duplicate: true`); then the
message is validated exactly as `validate_message` does; the sender kind must be one the
session's role may submit (`ROLE_SENDER_KINDS`), and an agent speaks only as itself
(`sender_not_allowed`); the sender must belong to the conversation (`agent_not_associated`);
an envelope id accepted before under another key is `duplicate`. Every verdict is kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from contracts import (
    MAX_ENVELOPE_BYTES,
    ROLE_SENDER_KINDS,
    RUNTIME_GLOBAL_CONVERSATION,
    Code,
    ContractError,
    LegacyContext,
    SubmitResult,
    validate_message,
)

from ._store import ALL_AGENTS, Accepted, Store

_MAX_DETAIL: Final = 4096


@dataclass(frozen=True, slots=True)
class Peer:
    """Who a session is: its role and the peer id its token was checked against."""

    role: Literal["runtime", "agent"]
    peer_id: str

    @property
    def key(self) -> str:
        """Idempotency keys are scoped per peer: one device's key never answers another's."""
        return f"{self.role}:{self.peer_id}"

    @property
    def agent_filter(self) -> str | None:
        """For `Store.visible_after`: an agent sees its conversations, a runtime all."""
        return self.peer_id if self.role == "agent" else None


@dataclass(frozen=True, slots=True)
class Verdict:
    result: SubmitResult
    conversation_id: str | None = None  # of a newly accepted message


def _stamp(message: dict[str, Any], seq: int, conversation_id: str) -> dict[str, Any]:
    """The message as forwarded: the server's number written in (§4.1), and a legacy
    message's conversation made explicit so that every reader maps it the same way."""
    stamped = dict(message)
    if isinstance(stamped.get("type"), str) and stamped["type"].startswith("lineup.v1."):
        stamped["seq"] = seq
        if stamped.get("conversation_id") is None:
            stamped["conversation_id"] = conversation_id
    else:
        correlation = stamped.get("correlation")
        stamped["correlation"] = {**(correlation or {}), "sequence": seq}
    return stamped


def _check_size(body: str) -> None:
    # Numbering adds a few bytes; a message at the limit must not grow past it in transit.
    if len(body.encode()) > MAX_ENVELOPE_BYTES:
        raise ContractError(Code.TOO_LARGE, f"over {MAX_ENVELOPE_BYTES} bytes once numbered")


class Admission:
    def __init__(self, store: Store, *, default_agent: str) -> None:
        self._store = store
        self._default_agent = default_agent

    def submit(
        self,
        peer: Peer,
        key: str,
        message: dict[str, Any],
        *,
        current_conversation: str | None = None,
    ) -> Verdict:
        known = self._store.verdict(peer.key, key)
        if known is not None:
            return Verdict(known)
        try:
            accepted = self._admit(peer, message, current_conversation)
            seq = self._store.last_seq + 1
            body = json.dumps(
                _stamp(message, seq, accepted.conversation_id),
                ensure_ascii=False,
                separators=(",", ":"),
            )
            _check_size(body)
        except ContractError as exc:
            detail = exc.detail[:_MAX_DETAIL]
            self._store.reject(peer.key, key, exc.code.value, detail)
            return Verdict(
                SubmitResult(
                    frame="submit_result",
                    idempotency_key=key,
                    status="rejected",
                    code=exc.code,
                    detail=detail,
                )
            )
        seq = self._store.append(peer.key, key, accepted, body)
        result = SubmitResult(
            frame="submit_result", idempotency_key=key, status="accepted", seq=seq
        )
        return Verdict(result, accepted.conversation_id)

    def _admit(
        self, peer: Peer, message: dict[str, Any], current_conversation: str | None
    ) -> Accepted:
        env = validate_message(
            message, legacy_context=LegacyContext(conversation_id=current_conversation)
        )
        sender = env.sender
        if sender.kind not in ROLE_SENDER_KINDS[peer.role]:
            raise ContractError(
                Code.SENDER_NOT_ALLOWED,
                f"sender.kind: a {peer.role} session cannot submit as {sender.kind!r}",
            )
        if peer.role == "agent" and sender.id != peer.peer_id:
            raise ContractError(
                Code.SENDER_NOT_ALLOWED,
                f"sender.id: agent {peer.peer_id!r} cannot submit as {sender.id!r}",
            )
        conversation = env.scope.conversation_id
        owner = self._store.conversation_agent(conversation)
        if conversation == RUNTIME_GLOBAL_CONVERSATION:
            if peer.role == "agent":
                raise ContractError(
                    Code.AGENT_NOT_ASSOCIATED,
                    "scope.conversation_id: runtime:global is not an agent's",
                )
            agent = ALL_AGENTS
        elif owner is None:
            # A conversation starts with its first message: an agent's is its own, the
            # account's (a runtime's) goes to the default agent.
            agent = peer.peer_id if peer.role == "agent" else self._default_agent
        elif peer.role == "agent" and owner != peer.peer_id:
            raise ContractError(
                Code.AGENT_NOT_ASSOCIATED,
                f"scope.conversation_id: agent {peer.peer_id!r} is not part of {conversation!r}",
            )
        else:
            agent = owner
        if self._store.has_message(env.id):
            raise ContractError(Code.DUPLICATE, f"id: {env.id} was already accepted")
        return Accepted(
            message_id=env.id,
            conversation_id=conversation,
            agent_id=agent,
            new_conversation=owner is None,
            sender_kind=sender.kind,
            sender_id=sender.id,
            type=env.type,
        )
