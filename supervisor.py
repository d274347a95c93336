"""The LineUp Runtime's root process: `python -m supervisor --data-dir DIR [--config FILE]`.

It spawns every actor as its own process, owns their channels and durable mailboxes
(`DIR/mailbox.db`), restarts them by Erlang/OTP rules and serves the debug control socket
(`DIR/control.sock`). `lineup run` is the friendly way to start it. The default children,
in start order (stopped in reverse), are the runtime's actors below; a JSON config file
(`RuntimeConfig`) can replace them, which is how the tests run their own actors.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import trio

from actors.kernel import ChildSpec, RuntimeConfig, Supervisor

RUNTIME_CHILDREN = [
    ChildSpec(name="store", target="actors.store:StoreActor"),
    ChildSpec(name="router", target="actors.router:RouterActor"),
    ChildSpec(name="app_manager", target="actors.app_manager:AppManagerActor"),
    ChildSpec(name="tool_router", target="actors.tool_router:ToolRouterActor"),
    ChildSpec(name="capability_gateway", target="actors.capability_gateway:CapabilityGatewayActor"),
    ChildSpec(name="transport", target="actors.transport:TransportActor"),
]


def default_config() -> RuntimeConfig:
    return RuntimeConfig(children=RUNTIME_CHILDREN, strategy="one_for_one")


def run(data_dir: Path, config: RuntimeConfig) -> None:
    trio.run(Supervisor(config, data_dir).run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m supervisor", description=__doc__)
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="where the runtime keeps its files"
    )
    parser.add_argument(
        "--config", type=Path, help="a RuntimeConfig JSON file (children, strategy, ...)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s supervisor %(levelname)s %(message)s")
    config = RuntimeConfig.load(args.config) if args.config else default_config()
    run(args.data_dir, config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
