"""Agent tools end to end: a reference AppServer, the runtime as a real process tree, an
agent on a real WebSocket, and signed pomodoro bundles installed through the CLI."""

from tests.app_manager.conftest import bundles  # noqa: F401 - the signed pomodoro bundles
from tests.runtime.conftest import stack  # noqa: F401 - the runtime tests' AppServer stack
