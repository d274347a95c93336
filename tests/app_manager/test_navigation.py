"""What an installed app may ask of navigation: any app may navigate, but
only within its own conversations and instances, and only the user's side chooses the
default app or manages the registry. The app here is a real bundle, built, signed,
installed and run jailed; it tries each request at its start and keeps the answers."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tests.kernel.conftest import RuntimeFactory
from tests.kernel.helpers import wait_until

from .conftest import Bundles, lineup, start_apps

NAVIGATOR = """
from typing import Any

from apps.sdk import CallFailed, RuntimeApp, declare_app


@declare_app(
    app_scope="navigator",
    version="1.0.0",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=["app.lifecycle.v1", "app.navigation.v1"],
)
class Navigator(RuntimeApp):
    async def on_app_start(self) -> None:
        self.answers: list[Any] = []
        self.sdk.lifecycle.on("start", self._tries)

    def statistics_extra(self) -> dict[str, Any]:
        return {**super().statistics_extra(), "answers": self.answers}

    async def _try(self, what: str, request: Any) -> None:
        try:
            self.answers.append([what, "ok", await request])
        except CallFailed as exc:
            self.answers.append([what, "refused", exc.code])

    async def _tries(self, event: dict[str, Any]) -> None:
        nav = self.sdk.navigation
        here = nav.launch("pomodoro", conversation_id="conv-1")
        await self._try("launch in its conversation", here)
        await self._try("launch elsewhere", nav.launch("pomodoro", conversation_id="conv-9"))
        await self._try("focus chat", nav.focus("chat:main"))
        await self._try("set default", self.sdk.apps.request("set_default", app_scope="navigator"))
        await self._try("install", self.sdk.apps.request("install", bundle="/x.bundle"))
        apps = await nav.list_available()
        self.answers.append(["available", "ok", sorted(a["app_scope"] for a in apps)])
"""


def _build(root: Path, keys: Path) -> Path:
    package = root / "navigator"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(NAVIGATOR))
    bundle = root / "navigator.bundle"
    code, _, err = lineup("app", "build", package, "--out", bundle)
    assert code == 0, err
    assert lineup("app", "sign", bundle, "--key", keys / "publisher.key")[0] == 0
    return bundle


def test_an_app_navigates_within_its_own_scope(
    factory: RuntimeFactory, bundles: Bundles, tmp_path: Path
) -> None:
    apps = start_apps(factory, bundles.keys)
    for bundle in (bundles.v1, _build(tmp_path, bundles.keys)):
        assert apps.app("install", bundle)[0] == 0
    for scope in ("pomodoro", "navigator"):
        assert apps.app("enable", scope)[0] == 0
    assert apps.app("launch", "navigator", "--conversation", "conv-1")[0] == 0

    def answers() -> list[Any] | None:
        actors = apps.runtime.control({"type": "actors", "stats": True})["actors"]
        stats = next(a for a in actors if a["name"] == "app.navigator").get("statistics") or {}
        found = stats.get("extra", {}).get("answers", [])
        return found if len(found) == 6 else None

    found = wait_until(answers, 60, "the navigator's six answers")
    assert found[0] == ["launch in its conversation", "ok", "pomodoro:conv-1"]
    assert found[1:5] == [
        ["launch elsewhere", "refused", "ownership_mismatch"],
        ["focus chat", "refused", "ownership_mismatch"],
        ["set default", "refused", "sender_not_allowed"],
        ["install", "refused", "sender_not_allowed"],
    ]
    available = ["app-registry", "chat", "navigator", "pomodoro", "settings"]
    assert found[5] == ["available", "ok", available]
    assert apps.registry()["settings"]["default_app"] is None
    stack: list[str] = apps.registry()["settings"]["focus_stack"]
    assert stack == ["chat:main", "navigator:conv-1", "pomodoro:conv-1"]
