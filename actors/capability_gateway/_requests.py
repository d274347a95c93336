"""A capability request's row as the gateway keeps it, what the app is told of it, and the
gateway's audit rows about it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from contracts import CapabilityResult, Code


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Pending:
    """A request that is not finished: its row and who waits for its outcome."""

    row: dict[str, Any]
    waiters: list[tuple[str, str]] = field(default_factory=list)

    def wait(self, caller: str, kernel_id: str) -> None:
        if (caller, kernel_id) not in self.waiters:
            self.waiters.append((caller, kernel_id))


def result_of(row: dict[str, Any]) -> dict[str, Any]:
    """What the app is told: the status, the provider's output, and for `failed` a code."""
    result: dict[str, Any] = {"status": row["status"], "output": row.get("output")}
    if row["status"] == CapabilityResult.FAILED:
        result["code"] = row.get("code") or str(Code.FAILED)
    return result


def audit_row(code: str, row: dict[str, Any], detail: str) -> dict[str, Any]:
    """An audit row about a request (`capability.<code>`), naming its capability and app."""
    who = f"{row['capability']} for {row['app_scope']}"
    return {
        "code": f"capability.{code}",
        "detail": f"{who}: {detail}",
        "message_id": row["request_id"],
    }


def finished_row(
    row: dict[str, Any], status: CapabilityResult, code: str | None, output: Any = None
) -> dict[str, Any]:
    # The input is the app's data: it is not kept once the request is over.
    return {
        **row,
        "state": "finished",
        "status": str(status),
        "code": code,
        "output": output,
        "input": None,
        "updated_ms": now_ms(),
    }
