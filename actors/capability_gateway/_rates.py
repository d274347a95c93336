"""How often an app may ask for one capability: a token bucket per (app, capability).

Each bucket holds up to `burst` tokens and refills at `per_minute` tokens a minute; a request
takes one, and with none left it is refused (`rate_limited`) before the user is asked
anything, so an app cannot flood the user with consent cards. Buckets live in memory: a
restart of the gateway fills them again. Set in the gateway's config as `rate_limit`
{`burst`, `per_minute`}.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

DEFAULT_BURST: Final = 10
DEFAULT_PER_MINUTE: Final = 30.0


@dataclass
class RateLimiter:
    burst: int = DEFAULT_BURST
    per_minute: float = DEFAULT_PER_MINUTE
    _buckets: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Any) -> RateLimiter:
        settings = dict(config or {})
        return cls(
            burst=max(1, int(settings.get("burst", DEFAULT_BURST))),
            per_minute=max(0.0, float(settings.get("per_minute", DEFAULT_PER_MINUTE))),
        )

    def take(self, app_scope: str, capability: str) -> bool:
        """True if the app may ask now (a token taken), False if it must wait."""
        now = time.monotonic()
        tokens, at = self._buckets.get((app_scope, capability), (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - at) * self.per_minute / 60.0)
        if tokens < 1.0:
            self._buckets[(app_scope, capability)] = (tokens, now)
            return False
        self._buckets[(app_scope, capability)] = (tokens - 1.0, now)
        return True
