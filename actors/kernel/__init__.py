"""The actor kernel, shared by the supervisor and every actor process.

Layers, bottom up: `_frames` (length-prefixed msgpack), `_channel` (one socketpair end,
one writer task), `_mailbox` (the durable mailbox file), `_switchboard` (group commit and
delivery with credits), `_process` / `_forked` + `zygote` (actor processes, exec'd or
forked from a preloaded parent), `_children` and `_supervisor` (OTP restart rules),
`_control` (the operator's debug socket), `_ui_socket` (the UI sessions' socket); `child`
is an actor process's entry point. Actors see only `Actor`, `handles`, `Message`, the call
errors and `applied_once`.
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._actor import (
    Actor,
    ActorStatistics,
    CallFailed,
    CallTimeout,
    Message,
    handles,
)
from ._applied import applied_once, ensure_applied_table
from ._channel import Channel, ChannelClosed, ChannelStatistics
from ._collector import settle_garbage_collector
from ._door import APPS, OPEN_DOOR, Accept, Door, PayloadError, accept, load_door
from ._faults import crash_point
from ._frames import DEFAULT_MAX_FRAME, FrameDecoder, FrameError, decode_body, encode
from ._ids import DerivedIds, derive_id, id_timestamp, is_valid_id, new_id

# The supervisor's side (pydantic specs, SQLite, the control socket) loads on first use:
# every actor process imports this package, and restart time is mostly import time.
_LAZY = {
    "ControlError": "._control",
    "control_request": "._control",
    "control_stream": "._control",
    "ui_request": "._ui_socket",
    "mailbox_counts": "._inspect",
    "mailbox_listing": "._inspect",
    "message_path": "._inspect",
    "mailbox_names": "._inspect",
    "MailboxCounts": "._mailbox",
    "MailboxStore": "._mailbox",
    "MessageRow": "._mailbox",
    "State": "._mailbox",
    "ChildSpec": "._specs",
    "Restart": "._specs",
    "RuntimeConfig": "._specs",
    "Supervisor": "._supervisor",
    "supervisor_pid_alive": "._children",
    "DataDirInUse": "._children",
    "log_tail": "._process",
}

if TYPE_CHECKING:
    from ._children import DataDirInUse, supervisor_pid_alive
    from ._control import ControlError, control_request, control_stream
    from ._inspect import mailbox_counts, mailbox_listing, mailbox_names, message_path
    from ._mailbox import MailboxCounts, MailboxStore, MessageRow, State
    from ._process import log_tail
    from ._specs import ChildSpec, Restart, RuntimeConfig
    from ._supervisor import Supervisor
    from ._ui_socket import ui_request


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "APPS",
    "DEFAULT_MAX_FRAME",
    "OPEN_DOOR",
    "Accept",
    "Actor",
    "ActorStatistics",
    "CallFailed",
    "CallTimeout",
    "Channel",
    "ChannelClosed",
    "ChannelStatistics",
    "ChildSpec",
    "ControlError",
    "DataDirInUse",
    "DerivedIds",
    "Door",
    "FrameDecoder",
    "FrameError",
    "MailboxCounts",
    "MailboxStore",
    "Message",
    "MessageRow",
    "PayloadError",
    "Restart",
    "RuntimeConfig",
    "State",
    "Supervisor",
    "accept",
    "applied_once",
    "control_request",
    "control_stream",
    "crash_point",
    "decode_body",
    "derive_id",
    "encode",
    "ensure_applied_table",
    "handles",
    "id_timestamp",
    "is_valid_id",
    "load_door",
    "log_tail",
    "mailbox_counts",
    "mailbox_listing",
    "mailbox_names",
    "message_path",
    "new_id",
    "settle_garbage_collector",
    "supervisor_pid_alive",
    "ui_request",
]
