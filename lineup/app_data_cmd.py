"""`lineup app data [APP]`: each app instance's session data as the store keeps it, without
the data itself: its revision, its size and when it was last written.

It reads `runtime.db` read-only, so it works with the runtime up or stopped. The data stays
the app's: a person sees how much each instance keeps and how often it changed.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import (
    DATA_DIR_ENV,
    add_data_dir,
    data_dir_of,
    fail,
    local_time,
    print_json,
    print_table,
)


def _data(args: argparse.Namespace) -> int:
    from actors.store import read_session_data

    data_dir = data_dir_of(args)
    if not (data_dir / "runtime.db").exists():
        return fail(
            f"no runtime data in {data_dir} (no runtime.db); pass --data-dir with the"
            f" runtime's data dir, set ${DATA_DIR_ENV}, or start a runtime there with `lineup run`"
        )
    rows = [r for r in read_session_data(data_dir) if args.app in (None, r["app_scope"])]
    if args.json:
        print_json(rows)
        return 0
    title = "session data" + (f" of {args.app}" if args.app else "") + " (the data is the app's)"
    table = [
        [
            r["app_scope"],
            r["instance_id"],
            r["revision"],
            r["size_bytes"],
            local_time(r["updated_ms"]),
        ]
        for r in rows
    ]
    print_table(title, ["app", "instance", "revision", "bytes", "written"], table)
    return 0


def add_data_command(commands: Any) -> None:
    data = commands.add_parser(
        "data",
        help="each app instance's session data: revision, size, last write (never the data)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data.add_argument("app", nargs="?", help="only this app (its name, as `lineup app list` shows)")
    add_data_dir(data)
    data.add_argument("--json", action="store_true", help="print JSON, not a table")
    data.set_defaults(func=_data)
