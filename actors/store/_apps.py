"""What the store keeps of each app, and the registry as the app manager committed it.

The registry is the app manager's (`app_manager.db`); the store reads it read-only where
it judges an app's request by it (a live instance for session data and artifacts, each
app's kind for the overview) through one kept connection (`RegistryReader`). When the app
manager removes an app, it tells the store first (`store.apps.removed`): the app's
session data, artifacts and diagnostics go, in one transaction applied once, and the
artifact files no row names any more after the commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from actors.app_manager.registry import RegistryReader
from actors.kernel import Actor, Message, handles

from ._artifacts import forget_artifacts
from ._diagnostics import forget_diagnostics
from ._session_data import forget_scopes
from .door import AppsRemoved


class AppTables(Actor):
    """The store's handler for a removed app (mixed into `StoreActor`)."""

    db: sqlite3.Connection
    registry: RegistryReader
    _once: Callable[[Message, Callable[[], Any]], Any]
    sweep_artifacts: Callable[[], int]

    @handles("store.apps.removed")
    async def apps_removed(self, msg: Message[AppsRemoved]) -> None:
        scopes = list(msg.body["app_scopes"])

        def apply() -> None:
            forget_scopes(self.db, scopes)
            forget_artifacts(self.db, scopes)  # their rows here, their files once committed
            for scope in scopes:
                forget_diagnostics(self.db, scope)

        self._once(msg, apply)
        self.sweep_artifacts()
