"""Artifacts end to end: a reference AppServer, the runtime as a real process tree, an agent
on a real WebSocket, and the toolbox app, whose tools make, read and list artifacts, built,
signed and installed through the CLI."""

from tests.runtime.conftest import stack  # noqa: F401 - the runtime tests' AppServer stack
from tests.tools.conftest import toolbox  # noqa: F401 - the signed toolbox bundle
