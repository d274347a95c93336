"""The reference AppServer: the far end of docs/protocol.md, on a real WebSocket.

`lineup run` embeds it on loopback when no AppServer URL is configured; the end-to-end tests
use it as the runtime's and the agent's peer, with faults switched on; the benchmarks use it
as the baseline. How the pieces fit:

- `_credentials`: the tokens in the data dir (mode 0600), created on first start;
- `_store`: the SQLite file: conversations, the numbered stream, the submissions' verdicts;
- `_admission`: the rules a submitted message passes before it is numbered (§4.5);
- `_faults`: the fault injector and the writer every outgoing frame goes through;
- `_session`: one connection: handshake, sync, live delivery, acks, heartbeats;
- `_server`: `AppServer`, the listener and what the sessions share;
- `_cli`: `lineup appserver`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._common import lazy_exports
from ._cli import DEFAULT_PORT, register

if TYPE_CHECKING:
    from ._credentials import (
        CREDENTIALS_FILE,
        DEFAULT_AGENT_ID,
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
        Limits,
        read_endpoint,
    )

# `lineup --help` needs only `register`: the server's modules load on first use.
_LAZY = {
    **dict.fromkeys(
        [
            "CREDENTIALS_FILE",
            "DEFAULT_AGENT_ID",
            "Credentials",
            "CredentialsError",
            "ensure_credentials",
            "load_credentials",
            "read_credentials",
        ],
        "._credentials",
    ),
    "Faults": "._faults",
    **dict.fromkeys(
        [
            "ENDPOINT_FILE",
            "ENDPOINT_PATH",
            "AppServer",
            "AppServerStatistics",
            "DataDirInUse",
            "Limits",
            "read_endpoint",
        ],
        "._server",
    ),
}


__getattr__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "CREDENTIALS_FILE",
    "DEFAULT_AGENT_ID",
    "DEFAULT_PORT",
    "ENDPOINT_FILE",
    "ENDPOINT_PATH",
    "AppServer",
    "AppServerStatistics",
    "Credentials",
    "CredentialsError",
    "DataDirInUse",
    "Faults",
    "Limits",
    "ensure_credentials",
    "load_credentials",
    "read_credentials",
    "read_endpoint",
    "register",
]
