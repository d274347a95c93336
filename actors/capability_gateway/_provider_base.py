"""What every provider is made of: its run's facts (`Effect`), what its run gives back
(`Served`, with any artifact it made for the app as a `NewArtifact`), its description
(`Provider`), and the checks its input shares."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from contracts import Code, ContractError


@dataclass(frozen=True)
class Effect:
    """One run of a provider: the request's key (for idempotence), its app, its input, and
    what the gateway prepared before recording it as started (`prepared`); for a provider
    that reads one of the app's artifacts, its bytes (`content`) and media type."""

    key: str
    app_scope: str
    input: dict[str, Any]
    prepared: dict[str, Any]
    content: bytes | None = None
    media_type: str | None = None


@dataclass(frozen=True)
class NewArtifact:
    """Bytes a provider made for the app: the gateway has the store keep them as the app's
    artifact and puts its reference in the output in their place."""

    data: bytes
    media_type: str
    title: str


@dataclass(frozen=True)
class Served:
    """What a provider's run gives the app (`output`, where a `NewArtifact` stands for the
    artifact the gateway has the store keep), and which way of the host's served it (`by`,
    for the effect's audit row)."""

    output: dict[str, Any]
    by: str


@dataclass(frozen=True)
class Provider:
    foreground: bool
    idempotent: bool
    check: Callable[[Any], dict[str, Any]]
    run: Callable[[Effect], Awaitable[Served]]
    # Its input may name one of the app's artifacts (`artifact_id`), which the gateway reads.
    reads_artifact: bool = False


def invalid(detail: str) -> ContractError:
    return ContractError(Code.INVALID_PAYLOAD, detail)


def text_field(value: Any, field: str, limit: int, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise invalid(f"input.{field}: a non-empty string is needed")
    if len(value) > limit:
        raise invalid(f"input.{field}: at most {limit} characters")
    return value


def with_fields(raw: Any, fields: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise invalid("input: an object is needed")
    extra = sorted(set(raw) - fields)
    if extra:
        raise invalid(f"input.{extra[0][:40]}: not a field of this capability")
    return raw
