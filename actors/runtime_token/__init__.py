"""The runtime's AppServer token: where it is kept and how it is read (docs/architecture.md,
"Data dir"). Not an actor: the transport reads it at its start, `lineup run` keeps the
embedded AppServer's, `lineup debug status` says where it is. It imports no more than the
standard library and jeepney, so that a command asking where the token is stays quick.

`_keep` decides between the user's keyring (`_keyring`: a Secret Service on the session
bus) and the data dir's 0600 file, and moves a token from the file into a keyring that
appeared.
"""

from ._keep import (
    TOKEN_FILE,
    TokenError,
    TokenHome,
    keep_token,
    load_token,
    read_token,
    token_home,
    write_token,
)
from ._keyring import KEYRING_TIMEOUT_S, KeyringLocked, KeyringUnusable, attributes, label
from ._keyring import locked as keyring_locked
from ._keyring import present as keyring_present

__all__ = [
    "KEYRING_TIMEOUT_S",
    "TOKEN_FILE",
    "KeyringLocked",
    "KeyringUnusable",
    "TokenError",
    "TokenHome",
    "attributes",
    "keep_token",
    "keyring_locked",
    "keyring_present",
    "label",
    "load_token",
    "read_token",
    "token_home",
    "write_token",
]
