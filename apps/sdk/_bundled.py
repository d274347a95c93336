"""The entry point of an installed app's process: its code comes from its bundle.

The app manager stages the verified bundle's `app/` package in the app's private directory
(`.bundle/app`, the process's working directory once jailed) and starts the process with
the target `apps.sdk._bundled:BundledApp`. Creating a `BundledApp` imports that package and
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

STAGED_CODE: Final = ".bundle"  # relative to the app's working directory
PACKAGE: Final = "app"  # a bundle's package, as `lineup app build` packs it


class BundledApp(RuntimeApp):
    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        code = os.path.abspath(STAGED_CODE)
        if code not in sys.path:
            sys.path.insert(0, code)
        return declared_app(importlib.import_module(PACKAGE))()
