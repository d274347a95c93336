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

from typing import TYPE_CHECKING

from actors.kernel import lazy_exports

# Each name loads on first use: signing or verifying a bundle on the command line needs the
# bundle's module, not the actor (trio, the kernel).
_LAZY = {
    "AppManagerActor": "._actor",
    "AppRecord": "._registry",
    "BundleError": "._bundle",
    "is_secret_key": "._bundle",
    "key_id": "._bundle",
    "load_public_key": "._bundle",
    "load_signing_key": "._bundle",
    "load_trusted_keys": "._bundle",
    "sign_bundle": "._bundle",
    "verify_bundle": "._bundle",
    "write_bundle": "._bundle",
    "write_keypair": "._bundle",
}

if TYPE_CHECKING:
    from ._actor import AppManagerActor
    from ._bundle import (
        BundleError,
        is_secret_key,
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


__getattr__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "AppManagerActor",
    "AppRecord",
    "BundleError",
    "is_secret_key",
    "key_id",
    "load_public_key",
    "load_signing_key",
    "load_trusted_keys",
    "sign_bundle",
    "verify_bundle",
    "write_bundle",
    "write_keypair",
]
