"""The reference AppServer: the far end of docs/protocol.md, on a real WebSocket.

`lineup run` embeds it on loopback when no AppServer URL is configured; the end-to-end tests
use it as the runtime's and the agent's peer, with faults switched on; the benchmarks use it
as the baseline. How the pieces fit:

- `_credentials`: the tokens in the data dir (mode 0600), created on first start;
- `_store`: the SQLite file: conversations, the numbered stream, the submissions' verdicts;
- `_admission`: the rules a submitted message passes before it is numbered (§4.5);
- `_faults`: the fault injector and the writer every outgoing frame goes through;
- `_session`: one connection: handshake, sync, live delivery, acks, heartbeats;
- `_server`: `AppServer`, the listener and what the sessions share.

`lineup appserver` is lineup/appserver_cmd.py.
"""

from ._core import Limits
from ._credentials import (
    CREDENTIALS_FILE,
    DEFAULT_AGENT_ID,
    OWN_AGENT_ID,
    Credentials,
    CredentialsError,
    ensure_credentials,
    load_credentials,
    read_credentials,
)
from ._faults import Faults
from ._server import (
    ENDPOINT_FILE,
    ENDPOINT_PATH,
    AppServer,
    AppServerStatistics,
    DataDirInUse,
    read_endpoint,
    write_endpoint,
)
from ._store import STORE_FILE, Store

__all__ = [
    "CREDENTIALS_FILE",
    "DEFAULT_AGENT_ID",
    "ENDPOINT_FILE",
    "ENDPOINT_PATH",
    "OWN_AGENT_ID",
    "STORE_FILE",
    "AppServer",
    "AppServerStatistics",
    "Credentials",
    "CredentialsError",
    "DataDirInUse",
    "Faults",
    "Limits",
    "Store",
    "ensure_credentials",
    "load_credentials",
    "read_credentials",
    "read_endpoint",
    "write_endpoint",
]
