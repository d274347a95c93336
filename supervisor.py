"""The LineUp Runtime's root process: `python -m supervisor --data-dir DIR [--config FILE]`.

It spawns every actor as its own process, owns their channels and durable mailboxes
(`DIR/mailbox.db`), restarts them by Erlang/OTP rules and serves the debug control socket
(`DIR/control.sock`) and the UI sessions' socket (`DIR/ui.sock`). `lineup run` is the
friendly way to start it. The default children are the runtime's own
(`actors.runtime_children`); a JSON config file (`RuntimeConfig`) can replace them, which is
how the tests run their own actors. The root process loads only the kernel: what the
children run is loaded by the zygote they are forked from.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import trio

from actors.kernel import (
    DataDirInUse,
    DataDirUnusable,
    RuntimeConfig,
    Supervisor,
    prefork_zygote,
    settle_garbage_collector,
)


def run(data_dir: Path, config: RuntimeConfig) -> None:
    with prefork_zygote(config) as zygote:
        settle_garbage_collector()  # what is imported lives as long as the process
        trio.run(Supervisor(config, data_dir, zygote=zygote).run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m supervisor", description=__doc__)
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="where the runtime keeps its files"
    )
    parser.add_argument(
        "--config", type=Path, help="a RuntimeConfig JSON file (children, strategy, ...)"
    )
    parser.add_argument("--appserver", help="the AppServer's ws:// URL (default: none, offline)")
    args = parser.parse_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s supervisor %(levelname)s %(message)s")
    if args.config:
        config = RuntimeConfig.load(args.config)
    else:
        from actors.runtime_children import default_config  # noqa: PLC0415 - the default's only

        config = default_config(args.data_dir, appserver_url=args.appserver)
    # One sentence, not a traceback: what is wrong with the data dir, and what to do.
    refused: list[str] = []
    try:
        run(args.data_dir, config)
    except* DataDirInUse as group:
        refused.append(f"{group.exceptions[0]}: stop it first, or pass another --data-dir")
    except* DataDirUnusable as group:
        refused.append(str(group.exceptions[0]))
    if refused:
        print(f"error: {refused[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
