"""The app_manager actor: the app registry, bundles, instances and focus stack.

- `_registry`: `AppRecord`, `AppOperation` and the rules a request must pass;
- `_bundle`, `_cache`: signed bundles, their verification and the content-addressed cache;
- `_steps`: what each registry operation does, idempotently, before its rows are written;
- `_focus`: instances, the focus stack and the start-up target;
- `_requests`: who may ask for what, and what of a request an operation keeps;
- `_actor`: the actor that runs operations, keeps instances and starts app processes.


The signed bundle's tools (`lineup app keygen|build|sign|verify`) and a registry row read
back (`AppRecord`, `lineup app list`) are its public face for the command line.
"""

from ._actor import AppManagerActor
from ._bundle import (
    BundleError,
    key_id,
    load_public_key,
    load_signing_key,
    load_trusted_keys,
    sign_bundle,
    verify_bundle,
    write_bundle,
    write_keypair,
)
from ._registry import AppRecord

__all__ = [
    "AppManagerActor",
    "AppRecord",
    "BundleError",
    "key_id",
    "load_public_key",
    "load_signing_key",
    "load_trusted_keys",
    "sign_bundle",
    "verify_bundle",
    "write_bundle",
    "write_keypair",
]
