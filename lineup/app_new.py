"""`lineup app new NAME [--out DIR]`: a new app package to start from.

It writes DIR/PACKAGE (PACKAGE is NAME with `_` for `-`): a `@declare_app` app whose scope is
NAME, with one query tool that reads its instance's session data, an entrypoint with a
surface (`ui/`) that emits one declared event the app handles, and `test_app.py`, a test
that builds, signs and installs the app into a real runtime and calls its tool as the
agent. What it writes builds, signs and verifies as it is.
"""

from __future__ import annotations

import importlib.util
import keyword
from pathlib import Path

from contracts import CORE_APP_SCOPES, SCOPE_RUNTIME, is_app_scope


class NameRefused(ValueError):
    """A NAME, or a place, the new app cannot have; the message says what to do."""


def package_name(scope: str) -> str:
    return scope.replace("-", "_")


def check_name(scope: str) -> None:
    """Refuses a NAME that is no app scope, a core app's or the runtime's own scope, or
    whose package would not import as itself (a keyword, a module Python already finds)."""
    if not is_app_scope(scope):
        raise NameRefused(
            f"{scope!r} is not an app name: use lower case letters, digits and single"
            " hyphens, starting with a letter, at most 64 characters (e.g. my-app)"
        )
    reserved = sorted(CORE_APP_SCOPES | {SCOPE_RUNTIME})
    if scope in reserved:
        raise NameRefused(
            f"{scope} is reserved for the runtime and its core apps ({', '.join(reserved)});"
            " pick another name"
        )
    package = package_name(scope)
    # The generated test imports the package by its name: another module of that name
    # would be imported in its place.
    if keyword.iskeyword(package) or importlib.util.find_spec(package) is not None:
        raise NameRefused(
            f"{scope} would make a package named {package}, which Python already knows as"
            " a module or keyword; pick another name"
        )


def create_app(scope: str, out: Path) -> Path:
    """Writes the new app's package under `out` and returns its directory; an existing
    directory is never written into."""
    check_name(scope)
    target = out / package_name(scope)
    if target.exists():
        raise NameRefused(
            f"{target} already exists and was left as it is; pick another name or --out DIR"
        )
    if not out.is_dir():
        raise NameRefused(f"{out} is not a directory; create it first or pass another --out")
    words = scope.split("-")
    fill = {
        "__SCOPE__": scope,
        "__PACKAGE__": package_name(scope),
        "__TITLE__": " ".join(word.capitalize() for word in words),
        "__CLASS__": "".join(word.capitalize() for word in words) + "App",
    }
    target.mkdir()
    (target / "ui").mkdir()
    for relative, template in _FILES.items():
        text = template
        for token, value in fill.items():
            text = text.replace(token, value)
        (target / relative).write_text(text, encoding="utf-8")
    return target


_INIT = '''"""__TITLE__: a LineUp app.

Its tool `__PACKAGE__.greet` greets whom the agent names and says how often the user waved
on the app's surface. Build it with `lineup app build . --out __SCOPE__.bundle`.
"""

from ._app import __CLASS__

__all__ = ["__CLASS__"]
'''

_APP = '''"""The __TITLE__ app: one process per runtime, one instance per conversation.

The surface (`ui/`) has a Wave button: each press is a `wave` event, which the app counts in
the instance's session data (`{"waves": n}`) and shows on the surface through a state patch.
The tool `__PACKAGE__.greet` reads that count: the agent learns how often the user waved.
"""

from __future__ import annotations

from typing import Any

from apps.sdk import RuntimeApp, ToolCall, declare_app, tool

# The one event the surface may emit: its payload is checked against this schema by the
# page, the web host and the app's process before `wave` below runs.
WAVE = {"name": "wave", "payload_schema": {"type": "object", "additionalProperties": False}}


@declare_app(
    app_scope="__SCOPE__",
    version="0.1.0",
    title="__TITLE__",
    entrypoints=[
        {"id": "main", "kind": "primary", "surface": "ui/index.html", "surface_events": [WAVE]}
    ],
    required_features=["app.lifecycle.v1", "app.tools.v1", "app.session-data.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class __CLASS__(RuntimeApp):
    async def on_app_start(self) -> None:
        self.sdk.surface.on_event("wave", self.wave)

    async def wave(self, payload: dict[str, Any], instance_id: str) -> None:
        """The user pressed Wave: one more wave, kept and shown."""
        current = await self.sdk.session_data.get(instance_id=instance_id)
        waves = int((current["data"] or {}).get("waves", 0)) + 1
        await self.sdk.session_data.replace(
            {"waves": waves}, current["revision"], instance_id=instance_id
        )
        await self.sdk.surface.patch({"waves": waves}, instance_id=instance_id)

    @tool(
        "__PACKAGE__.greet",
        title="Greet someone",
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 80}},
            "required": ["name"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "greeting": {"type": "string"},
                "waves": {"type": "integer", "minimum": 0},
            },
            "required": ["greeting", "waves"],
            "additionalProperties": False,
        },
        call_model="query",
        idempotent=True,
        risk="low",
        # The conversation's instance is started if it has none, behind what the user sees.
        launch_policy={"launch": "if_needed", "focus": "background"},
        annotations={"read_only_hint": True},
    )
    async def greet(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Greets `name`, and says how often the user waved on the app's surface."""
        waves = 0
        if call.instance_id is not None:
            current = await self.sdk.session_data.get(instance_id=call.instance_id)
            waves = int((current["data"] or {}).get("waves", 0))
        return {"greeting": f"Hello, {arguments['name']}!", "waves": waves}
'''

_TEST = '''"""__TITLE__ against a real runtime: built, signed with a throwaway key, installed and
called as the agent would call it.

Run it with `python -m pytest __PACKAGE__/test_app.py` from the directory that holds the
package: the runtime starts and stops within the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.testing import running_app

APP_DIR = Path(__file__).resolve().parent


@pytest.mark.trio
async def test_greet_answers_the_agent() -> None:
    async with running_app(APP_DIR) as runtime:
        outcome = await runtime.call("__PACKAGE__.greet", {"name": "Ada"})
        assert outcome.output == {"greeting": "Hello, Ada!", "waves": 0}
        # The call started the conversation's instance, which has kept nothing yet.
        assert len(await runtime.instances("__SCOPE__")) == 1
        assert runtime.session_data("__SCOPE__") == {}
'''

_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>__TITLE__</title>
<link rel="stylesheet" href="app.css">
<script src="/surface-bridge.js"></script>
<script src="app.js" defer></script>
</head>
<body>
<h1>__TITLE__</h1>
<p>Waves so far: <output id="waves">0</output></p>
<button id="wave" type="button">Wave</button>
</body>
</html>
"""

_JS = """// The __TITLE__ surface: shows the app's count of waves, and emits `wave` on each press.
(async function () {
  "use strict";
  const shown = document.getElementById("waves");
  // The app patches the surface's state after each wave it counted.
  lineup.onState((state) => { shown.textContent = String(state.waves || 0); });
  await lineup.ready;
  // Before the first wave of this visit, the count the instance kept.
  const saved = await lineup.session.get();
  shown.textContent = String((saved.data && saved.data.waves) || 0);
  document.getElementById("wave").addEventListener("click", () => {
    lineup.emit("wave", {}).catch((error) => { document.body.dataset.error = error.code; });
  });
})();
"""

_CSS = """body { font-family: sans-serif; margin: 16px; }
#waves { font-weight: bold; }
button { font-size: 1.2em; padding: 4px 16px; }
"""

_FILES = {
    "__init__.py": _INIT,
    "_app.py": _APP,
    "test_app.py": _TEST,
    "ui/index.html": _HTML,
    "ui/app.js": _JS,
    "ui/app.css": _CSS,
}
