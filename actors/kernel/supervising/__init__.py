"""What runs in the supervisor's process: the restart rules (`_supervisor`, `_children`),
the mailbox and its switchboard (`_mailbox`, `_switchboard`), the door's checks of what a
child says (`_wire`, `_gate`), liveness (`_waiting`), the operator's and the UI's sockets
(`_control`, `_ui_socket`), what an actor asks of the supervisor (`_delegation`), and the
upkeep of its data dir (`_preflight`, `_log_bound`). Loaded on first use, like the
kernel's own names; it imports nothing of the actor side.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_LAZY = {
    "Child": "._children",
    "DATABASES": "._preflight",
    "DataDirInUse": "._children",
    "DataDirUnusable": "._preflight",
    "Delivery": "._mailbox",
    "Endpoint": "._switchboard",
    "HOST": "._ui_socket",
    "MAX_ID": "._wire",
    "MailboxCounts": "._mailbox_views",
    "MailboxStore": "._mailbox",
    "MessageRow": "._mailbox_views",
    "Outcome": "._switchboard",
    "Refusal": "._gate",
    "State": "._mailbox_views",
    "Supervisor": "._supervisor",
    "Switchboard": "._switchboard",
    "WAL_KEPT_BYTES": "._mailbox",
    "bound_logs": "._log_bound",
    "check_body": "._gate",
    "check_data_dir": "._preflight",
    "check_databases": "._preflight",
    "classify": "._wire",
    "disk_full": "._mailbox",
    "inject": "._control",
    "mailbox_counts": "._inspect",
    "mailbox_listing": "._inspect",
    "mailbox_names": "._inspect",
    "message_path": "._inspect",
    "waits_for_work": "._waiting",
}

if TYPE_CHECKING:
    from ._children import (
        Child,
        DataDirInUse,
    )
    from ._control import (
        inject,
    )
    from ._gate import (
        Refusal,
        check_body,
    )
    from ._inspect import (
        mailbox_counts,
        mailbox_listing,
        mailbox_names,
        message_path,
    )
    from ._log_bound import (
        bound_logs,
    )
    from ._mailbox import (
        WAL_KEPT_BYTES,
        Delivery,
        MailboxStore,
        disk_full,
    )
    from ._mailbox_views import (
        MailboxCounts,
        MessageRow,
        State,
    )
    from ._preflight import (
        DATABASES,
        DataDirUnusable,
        check_data_dir,
        check_databases,
    )
    from ._supervisor import (
        Supervisor,
    )
    from ._switchboard import (
        Endpoint,
        Outcome,
        Switchboard,
    )
    from ._ui_socket import (
        HOST,
    )
    from ._waiting import (
        waits_for_work,
    )
    from ._wire import (
        MAX_ID,
        classify,
    )

__getattr__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "DATABASES",
    "HOST",
    "MAX_ID",
    "WAL_KEPT_BYTES",
    "Child",
    "DataDirInUse",
    "DataDirUnusable",
    "Delivery",
    "Endpoint",
    "MailboxCounts",
    "MailboxStore",
    "MessageRow",
    "Outcome",
    "Refusal",
    "State",
    "Supervisor",
    "Switchboard",
    "bound_logs",
    "check_body",
    "check_data_dir",
    "check_databases",
    "classify",
    "disk_full",
    "inject",
    "mailbox_counts",
    "mailbox_listing",
    "mailbox_names",
    "message_path",
    "waits_for_work",
]
