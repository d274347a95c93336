"""What a jail enforced and what it could not, in the words the operator reads: the
launcher and the app zygote fill one in as they confine an app, and the runtime reads its
level (`level_of`)."""

from __future__ import annotations

import sys
from typing import Any, Final

# The steps without which an app is not confined at all: with one of them, it is partly.
CORE_STEPS: Final = ("network", "filesystem", "identity")


class Report:
    """What was enforced and what was not, in the words the operator will read."""

    def __init__(self) -> None:
        self.enforced: dict[str, str] = {}
        self.not_enforced: dict[str, str] = {}

    def ok(self, step: str, detail: str) -> None:
        self.enforced[step] = detail

    def missing(self, step: str, reason: str) -> None:
        self.not_enforced[step] = reason
        print(f"jail: NOT enforced: {step}: {reason}", file=sys.stderr, flush=True)

    def record(self, fds: list[int]) -> dict[str, Any]:
        return {
            "level": level_of(self.enforced, self.not_enforced),
            "enforced": self.enforced,
            "not_enforced": self.not_enforced,
            "fds": fds,
        }


def level_of(enforced: dict[str, str], not_enforced: dict[str, str]) -> str:
    """full: nothing missing; partial: some of the core steps enforced; else none."""
    if not not_enforced:
        return "full"
    return "partial" if any(step in enforced for step in CORE_STEPS) else "none"
