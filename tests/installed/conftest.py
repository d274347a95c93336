"""The sample apps end to end: a real runtime with its web host on a real AppServer, each
app built, signed and installed from `apps/` through the CLI, and one headless Chromium per
test module (the web tests' fixtures)."""

from tests.runtime.conftest import stack
from tests.web.conftest import browser

__all__ = ["browser", "stack"]
