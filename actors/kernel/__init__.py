"""The actor kernel, shared by the supervisor and every actor process.

Its sides, each a package with a face of its own, bottom up: `wire` (length-prefixed
msgpack frames, one socketpair end with one writer task, and what an app's body may be);
`spawning` (actor processes, exec'd or forked from the kernel's zygote, and the
supervisor's side of isolating an installed app: its zygote, jail plan, cgroup, log and
quota); `supervising` (what runs in the supervisor's process: the restart rules, the
mailbox and its switchboard, the door's checks, liveness, the operator's and the UI's
sockets); `actor_process` (what runs in an actor process: its entry point `child` and the
`Actor` base). Beside them, what both sides share: `_door` (who may send what), `_specs`
(the runtime's configuration), `_ids`, `_durability` (when a commit is on disk),
`_faults` (crash points), `_client` (the control socket's client), `_collector` (what
every zygote and actor process does with the garbage collector), `_applied`, `_read_only`
and `_rows` (an actor's own SQLite file). The supervisor's side never imports the actor
side, nor the actor side the supervisor's (`tests/runtime/test_boundaries.py`). Actors see only
`Actor`, `handles`, `Message`, the call errors, `REPLY_LATER` / `ACK_LATER` and
`applied_once`.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

# Everything loads on first use: a command that only asks the control socket (`lineup
# debug status`) imports neither trio nor the contracts, and an actor process imports what
# it uses (its restart time is mostly import time).
_LAZY = {
    "RUNTIME_SYNCHRONOUS": "._durability",
    "Synchronous": "._durability",
    "Actor": ".actor_process",
    "ActorStatistics": ".actor_process",
    "CallFailed": ".actor_process",
    "REPLY_LATER": ".actor_process",
    "ACK_LATER": ".actor_process",
    "CallTimeout": ".actor_process",
    "Message": ".actor_process",
    "handles": ".actor_process",
    "applied_once": "._applied",
    "ensure_applied_table": "._applied",
    "Channel": ".wire",
    "ChannelClosed": ".wire",
    "ChannelStatistics": ".wire",
    "settle_garbage_collector": "._collector",
    "APPS": "._door",
    "OPEN_DOOR": "._door",
    "Accept": "._door",
    "Door": "._door",
    "PayloadError": "._door",
    "accept": "._door",
    "load_door": "._door",
    "crash_point": "._faults",
    "RowCodec": "._rows",
    "open_read_only": "._read_only",
    "bound_wal": "._own_file",
    "KeptReader": "._read_only",
    "move_rows_once": "._read_only",
    "older_rows": "._read_only",
    "read_file": "._read_only",
    "DEFAULT_MAX_FRAME": ".wire",
    "FrameDecoder": ".wire",
    "FrameError": ".wire",
    "decode_body": ".wire",
    "encode": ".wire",
    "DerivedIds": "._ids",
    "derive_id": "._ids",
    "id_timestamp": "._ids",
    "is_valid_id": "._ids",
    "new_id": "._ids",
    "ControlError": "._client",
    "control_request": "._client",
    "control_stream": "._client",
    "supervisor_pid_alive": "._client",
    "ui_request": "._client",
    "mailbox_counts": ".supervising",
    "mailbox_listing": ".supervising",
    "message_path": ".supervising",
    "mailbox_names": ".supervising",
    "MailboxCounts": ".supervising",
    "MailboxStore": ".supervising",
    "MessageRow": ".supervising",
    "State": ".supervising",
    "ArtifactLimits": "._specs",
    "ChildSpec": "._specs",
    "Restart": "._specs",
    "RuntimeConfig": "._specs",
    "Supervisor": ".supervising",
    "DataDirInUse": ".supervising",
    "DataDirUnusable": ".supervising",
    "check_data_dir": ".supervising",
    "log_tail": ".spawning",
    "prefork_zygote": ".spawning",
}

if TYPE_CHECKING:
    from ._applied import applied_once, ensure_applied_table
    from ._client import (
        ControlError,
        control_request,
        control_stream,
        supervisor_pid_alive,
        ui_request,
    )
    from ._collector import settle_garbage_collector
    from ._door import APPS, OPEN_DOOR, Accept, Door, PayloadError, accept, load_door
    from ._durability import RUNTIME_SYNCHRONOUS, Synchronous
    from ._faults import crash_point
    from ._ids import DerivedIds, derive_id, id_timestamp, is_valid_id, new_id
    from ._own_file import bound_wal
    from ._read_only import KeptReader, move_rows_once, older_rows, open_read_only, read_file
    from ._rows import RowCodec
    from ._specs import ArtifactLimits, ChildSpec, Restart, RuntimeConfig
    from .actor_process import (
        ACK_LATER,
        REPLY_LATER,
        Actor,
        ActorStatistics,
        CallFailed,
        CallTimeout,
        Message,
        handles,
    )
    from .spawning import log_tail, prefork_zygote
    from .supervising import (
        DataDirInUse,
        DataDirUnusable,
        MailboxCounts,
        MailboxStore,
        MessageRow,
        State,
        Supervisor,
        check_data_dir,
        mailbox_counts,
        mailbox_listing,
        mailbox_names,
        message_path,
    )
    from .wire import (
        DEFAULT_MAX_FRAME,
        Channel,
        ChannelClosed,
        ChannelStatistics,
        FrameDecoder,
        FrameError,
        decode_body,
        encode,
    )


__getattr__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "ACK_LATER",
    "APPS",
    "DEFAULT_MAX_FRAME",
    "OPEN_DOOR",
    "REPLY_LATER",
    "RUNTIME_SYNCHRONOUS",
    "Accept",
    "Actor",
    "ActorStatistics",
    "ArtifactLimits",
    "CallFailed",
    "CallTimeout",
    "Channel",
    "ChannelClosed",
    "ChannelStatistics",
    "ChildSpec",
    "ControlError",
    "DataDirInUse",
    "DataDirUnusable",
    "DerivedIds",
    "Door",
    "FrameDecoder",
    "FrameError",
    "KeptReader",
    "MailboxCounts",
    "MailboxStore",
    "Message",
    "MessageRow",
    "PayloadError",
    "Restart",
    "RowCodec",
    "RuntimeConfig",
    "State",
    "Supervisor",
    "Synchronous",
    "accept",
    "applied_once",
    "bound_wal",
    "check_data_dir",
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
    "lazy_exports",
    "load_door",
    "log_tail",
    "mailbox_counts",
    "mailbox_listing",
    "mailbox_names",
    "message_path",
    "move_rows_once",
    "new_id",
    "older_rows",
    "open_read_only",
    "prefork_zygote",
    "read_file",
    "settle_garbage_collector",
    "supervisor_pid_alive",
    "ui_request",
]
