"""How big `DATA_DIR/logs/` may grow: every log turned over past a cap, old ones gone.

An actor's stdout and stderr are its log file, opened for appending; the actor keeps
writing to that file for its whole life, so a log is turned over by copying it to
`NAME.log.1` (replacing the previous copy) and cutting it back to nothing: the actor's
next write lands at the start of the emptied file. Lines written between the copy and
the cut are lost, a few at most. An installed app's log is turned over by the supervisor
as it copies it (`AppLog`), at its own cap. A log untouched for `LOG_KEPT_DAYS` (an app
removed long ago) goes. So the logs take at most twice `LOG_CAP` per actor.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Final

LOG_CAP: Final = 4 << 20
LOG_KEPT_DAYS: Final = 30


def bound_logs(log_dir: Path, *, cap: int = LOG_CAP, kept_days: float = LOG_KEPT_DAYS) -> int:
    """Turn over every log past `cap` and remove those untouched for `kept_days`; the
    bytes freed."""
    freed = 0
    if not log_dir.is_dir():
        return 0
    too_old = time.time() - kept_days * 86400
    for path in sorted(log_dir.iterdir()):
        with contextlib.suppress(FileNotFoundError):
            stat = path.stat()
            if not path.name.endswith((".log", ".log.1")) or not path.is_file():
                continue
            if stat.st_mtime < too_old:
                path.unlink()
                freed += stat.st_size
            elif path.name.endswith(".log") and stat.st_size > cap:
                older = path.with_name(path.name + ".1")
                freed += older.stat().st_size if older.exists() else 0
                shutil.copyfile(path, older)
                os.truncate(path, 0)
    return freed
