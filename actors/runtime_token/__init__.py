"""The runtime's AppServer token: where it is kept and how it is read. Not an actor: the
transport reads it at its start, `lineup run` keeps the embedded AppServer's, `lineup debug
status` says where it is. It imports no more than the standard library and jeepney, so that
a command asking where the token is stays quick.

`_keep` decides between the user's keyring (`_keyring`: a Secret Service on the session
bus) and the data dir's 0600 file, and moves a token from the file into a keyring that
appeared.

Where a Secret Service is on the session bus (`DBUS_SESSION_BUS_ADDRESS` set and
`org.freedesktop.secrets` owned: GNOME Keyring, KeePassXC, KWallet's bridge), the data
dir's token is an item of the default collection, labelled "LineUp Runtime: AppServer
token for DATA_DIR" and found by its attributes (`application` lineup-runtime, `kind`
appserver-token, `data_dir` the resolved path: two runtimes never share one); elsewhere it
is the file `.runtime_token` (0600). `lineup run` keeps the embedded AppServer's token there
at each start. The transport reads it once at its start, in a thread, each keyring call
bounded to 5 s: a token found in the file once a keyring is there is moved into it, and
the file removed only after the keyring gives it back; a file named by `--config`'s
`token_file` outside the data dir is the user's and read as it is. The runtime never
unlocks a keyring (that prompts on the desktop): a locked one leaves a token in the file
where it is (moved at a later start), and with none there the transport goes
`offline_degraded` with one sentence ("the keyring is locked: unlock it … and start the
runtime again"); a bus that cannot be reached, or that no keyring answers on, is no
keyring. `lineup debug status` (and `--json`'s `token` {`holder`: keyring / file / none,
`detail`}) says which holds it, asked without reading it. No app reaches the bus: its
environment has no bus address, its network namespace none of the host's abstract
sockets, and its uid is not the user's. The tests start a `dbus-daemon --session` and
`gnome-keyring-daemon` of their own (`tests/runtime/keyring.py`), and hide the session bus
of the person running them."""

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
