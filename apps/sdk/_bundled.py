"""The entry point of an installed app's process: its code comes from its bundle.

The app manager starts an installed app with the target `apps.sdk._bundled:BundledApp`
and its verified bundle's `app/` package as the isolation's code dir; the launcher mounts
that directory read-only in the app's view and says where in `LINEUP_APP_CODE` (the
directory holding the package `app`). Creating a `BundledApp` imports that package and
returns an instance of the one class it declares with `@declare_app`, so the runtime never
imports an app's code itself and the bundle names no class of its own.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Final

from ._declare import declared_app
from ._runtime_app import RuntimeApp

CODE_ENV: Final = "LINEUP_APP_CODE"
PACKAGE: Final = "app"  # a bundle's package, as `lineup app build` packs it


class BundledApp(RuntimeApp):
    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        code = os.environ.get(CODE_ENV)
        if not code:
            raise RuntimeError(f"{CODE_ENV} is not set: an installed app starts from its bundle")
        if code not in sys.path:
            sys.path.insert(0, code)
        return declared_app(importlib.import_module(PACKAGE))()
