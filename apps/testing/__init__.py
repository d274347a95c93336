"""Test an app against a real runtime, as its author's pytest-trio tests do.

```python
from apps.testing import running_app

async def test_greet() -> None:
    async with running_app(Path(__file__).parent) as runtime:
        outcome = await runtime.call("hello.greet", {"name": "Ada"})
        assert outcome.output == {"greeting": "Hello, Ada!", "waves": 0}
```

`running_app(APP_DIR)` builds the app's package into a bundle, signs it with a key made
for the test, starts `lineup run` (headless, its embedded AppServer, no demo agent) on a
data dir of its own that trusts that key, installs and enables the app, and stops the
runtime when the block ends. Within it, `AppRuntime.call` calls a tool as the agent and
returns the call's one final `Outcome`; `instances` and `session_data` show what the app
keeps. Each step is a `lineup` command in a subprocess:

- `_cli`: the command line as the tests run it, and `AppTestError`;
- `_bundle`: `signed_bundle`, build and sign with a throwaway key;
- `_runtime`: `running_app` and `AppRuntime`.
"""

from ._bundle import SignedBundle, signed_bundle
from ._cli import AppTestError
from ._runtime import CONVERSATION, AppRuntime, Outcome, running_app

__all__ = [
    "CONVERSATION",
    "AppRuntime",
    "AppTestError",
    "Outcome",
    "SignedBundle",
    "running_app",
    "signed_bundle",
]
