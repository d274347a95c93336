"""The AppServer token in the user's keyring: a Secret Service (`org.freedesktop.secrets`,
GNOME Keyring, KeePassXC, KWallet's bridge) on the session bus, through `secretstorage`.

One item per data dir in the default collection, found by its attributes (`attributes`:
this application, the token's kind and the data dir's resolved path, so two runtimes never
share one) and labelled for a person who looks in their keyring (`label`). The runtime
never unlocks a keyring: that would prompt on the user's desktop; a locked one is said to
be locked, and what to do. Every call here blocks on the bus: callers run them in a thread
with a deadline (`KEYRING_TIMEOUT_S`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from jeepney.bus_messages import message_bus
from jeepney.io.blocking import DBusConnection, Proxy, open_dbus_connection

if TYPE_CHECKING:
    from secretstorage import Collection

SERVICE: Final = "org.freedesktop.secrets"
APPLICATION: Final = "lineup-runtime"
KIND: Final = "appserver-token"
# A healthy bus answers in milliseconds; past this, the keyring is as good as absent.
KEYRING_TIMEOUT_S: Final = 5.0


class KeyringUnusable(Exception):
    """The keyring is there but cannot be used now; the message is one sentence for a
    person, with what to do."""


class KeyringLocked(KeyringUnusable):
    pass


def attributes(data_dir: Path) -> dict[str, str]:
    return {"application": APPLICATION, "kind": KIND, "data_dir": str(Path(data_dir).resolve())}


def label(data_dir: Path) -> str:
    return f"LineUp Runtime: AppServer token for {Path(data_dir).resolve()}"


LOCKED: Final = (
    "the keyring is locked: unlock it (log in to the desktop session, or open your keyring"
    " app) and start the runtime again"
)


@contextlib.contextmanager
def _collection(env: Mapping[str, str]) -> Iterator[Collection | None]:
    """The default collection of the Secret Service on the session bus of `env`, or None
    where there is none: no bus address, no bus, or nobody owning the service's name."""
    address = env.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        yield None
        return
    try:
        connection: DBusConnection = open_dbus_connection(address)
    except (OSError, ValueError, KeyError):  # an address that leads to no bus
        yield None
        return
    # secretstorage brings `cryptography` (0.15 to 0.4 s to import): only with a bus to ask.
    from secretstorage import get_collection_by_alias
    from secretstorage.exceptions import ItemNotFoundException, SecretStorageException

    with contextlib.closing(connection):
        try:
            owned = Proxy(message_bus, connection).NameHasOwner(SERVICE)[0] == 1
            # The default collection (the login keyring), never made here: making one prompts.
            collection = get_collection_by_alias(connection, "default") if owned else None
        except ItemNotFoundException:
            raise KeyringUnusable(
                "the keyring has no default collection: make one in your keyring app"
            ) from None
        except (SecretStorageException, OSError, ValueError) as exc:
            raise KeyringUnusable(f"the keyring does not answer as a keyring ({exc})") from None
        yield collection


def present(env: Mapping[str, str]) -> bool:
    """Whether a Secret Service is on the session bus (locked or not)."""
    with _collection(env) as collection:
        return collection is not None


def locked(env: Mapping[str, str]) -> bool:
    with _collection(env) as collection:
        return collection is not None and bool(collection.is_locked())


def holds(data_dir: Path, env: Mapping[str, str]) -> bool:
    """Whether the keyring has this data dir's token (asked without reading the secret, so a
    locked keyring answers too)."""
    with _collection(env) as collection:
        return collection is not None and any(collection.search_items(attributes(data_dir)))


def read(data_dir: Path, env: Mapping[str, str]) -> str | None:
    """This data dir's token in the keyring, or None when it has none (or there is none)."""
    with _collection(env) as collection:
        if collection is None:
            return None
        if collection.is_locked():
            raise KeyringLocked(LOCKED)
        for item in collection.search_items(attributes(data_dir)):
            return bytes(item.get_secret()).decode("utf-8").strip() or None
        return None


def write(data_dir: Path, token: str, env: Mapping[str, str]) -> bool:
    """Keep `token` as this data dir's item (replacing any before it) and read it back: True
    once the keyring holds it, False where there is no keyring to hold it."""
    with _collection(env) as collection:
        if collection is None:
            return False
        if collection.is_locked():
            raise KeyringLocked(LOCKED)
        try:
            collection.create_item(
                label(data_dir), attributes(data_dir), token.encode(), replace=True
            )
            kept = [bytes(i.get_secret()) for i in collection.search_items(attributes(data_dir))]
        except Exception as exc:  # secretstorage's, or the bus's: said, never a traceback
            raise KeyringUnusable(f"the keyring did not keep the token ({exc})") from None
        if kept != [token.encode()]:
            raise KeyringUnusable("the keyring did not give the token back as it was kept")
        return True
