"""The sample apps end to end: a real runtime with its web host on a real AppServer, each
app built, signed and installed from `apps/` through the CLI, and one headless Chromium per
test module (the web tests' fixtures)."""

import pytest

from tests.runtime.conftest import stack
from tests.web.conftest import browser

from .helpers import SampleApps

__all__ = ["browser", "sample_apps", "stack"]


@pytest.fixture(scope="session")
def sample_apps(tmp_path_factory: pytest.TempPathFactory) -> SampleApps:
    return SampleApps(tmp_path_factory.mktemp("sample-apps"))
