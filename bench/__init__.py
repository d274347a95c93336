"""`lineup bench`: measurements of the runtime beside bare baselines rebuilt in the same run.

A package of its own, outside the runtime and the command line: it drives the runtime, the
peers and the `lineup` commands as a user would, and nothing but `lineup bench` imports it.

Speed is measured here, never asserted in the test suite. Each benchmark
runs the raw baseline (the same bytes over a bare socket, the same rows into bare SQLite)
next to the runtime's path and prints the ratio, because absolute figures on shared
machines drift between runs. The heavy imports wait until a benchmark actually runs, so
`lineup --help` stays fast.
"""

from __future__ import annotations

import argparse


def _run_kernel(args: argparse.Namespace) -> int:
    from .kernel import run

    return run(args)


def _run_e2e(args: argparse.Namespace) -> int:
    from .e2e import run

    return run(args)


def _run_apps(args: argparse.Namespace) -> int:
    from .apps import run

    return run(args)


def _run_tools(args: argparse.Namespace) -> int:
    from .tools import run

    return run(args)


def _run_web(args: argparse.Namespace) -> int:
    from .web import run

    return run(args)


def _run_chaos(args: argparse.Namespace) -> int:
    from .chaos import run

    return run(args)


def _run_soak(args: argparse.Namespace) -> int:
    from .soak import run

    return run(args)


def _run_speech(args: argparse.Namespace) -> int:
    from .speech import run

    return run(args)


def _run_cli(args: argparse.Namespace) -> int:
    from .cli import run

    return run(args)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `bench` and its subcommands to the `lineup` command line."""
    from ._options import add_arguments

    bench = subparsers.add_parser(
        "bench",
        help="measure the runtime beside bare baselines",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    benches = bench.add_subparsers(dest="bench", metavar="BENCH", required=True)
    kernel = benches.add_parser(
        "kernel",
        help="durable actor→actor throughput, latency, restart time and memory of the kernel",
        description="Measures (a) a bare socketpair, (b) a bare durable relay and (c) the"
        " kernel's durable actor→actor path side by side, then restart time after SIGKILL"
        " and idle actor memory, and checks them against the kernel's targets.",
    )
    add_arguments(kernel)
    kernel.set_defaults(func=_run_kernel)
    from .e2e import add_arguments as add_e2e_arguments

    e2e = benches.add_parser(
        "e2e",
        help="agent → chat through the whole runtime beside a bare WebSocket",
        description="Measures live throughput, one-way agent → chat latency at 100 msg/s,"
        " catch-up of a backlog, `lineup run` cold start and the runtime's memory, for the"
        " runtime and for a bare WebSocket client of the same AppServer, and checks them"
        " against the end-to-end targets.",
    )
    add_e2e_arguments(e2e)
    e2e.set_defaults(func=_run_e2e)
    from ._apps_options import add_arguments as add_apps_arguments

    apps = benches.add_parser(
        "apps",
        help="bundle verification, install, launch, restart and memory of an installed app",
        description="Measures, over --rounds rounds each, bundle verification beside bare"
        " SHA-256 + Ed25519, install and launch of the signed sample app through the app"
        " manager (forked from the app zygote, beside a bare fork of a preloaded"
        " interpreter, and exec'd, beside a bare exec of an SDK process), its restart after"
        " SIGKILL both ways, and its RSS and PSS beside an idle forked actor, against the"
        " launch and memory targets.",
    )
    add_apps_arguments(apps)
    apps.set_defaults(func=_run_apps)
    from ._tools_options import add_arguments as add_tools_arguments

    tools = benches.add_parser(
        "tools",
        help="an agent's tool calls through the runtime beside a bare WebSocket round trip",
        description="Measures an agent's tool call (agent → runtime → the app's tool →"
        " agent) at 100 calls/s (p50, p99) and in a burst (calls/s), beside the bare round"
        " trip through the same kind of AppServer in the same run, and checks them against"
        " the tool targets.",
    )
    add_tools_arguments(tools)
    tools.set_defaults(func=_run_tools)
    from ._web_options import add_arguments as add_web_arguments

    web = benches.add_parser(
        "web",
        help="agent → the page in headless Chromium beside agent → the chat app",
        description="Measures, in one run, an agent message → visible in the page (a"
        " MutationObserver in headless Chromium) at 50 msg/s, p50 and p99, beside the"
        " runtime's own agent → chat app latency for the same messages; page load to ready;"
        " the web host's memory; and checks the page against its target of one frame (16 ms)"
        " over the runtime's p50.",
    )
    add_web_arguments(web)
    web.set_defaults(func=_run_web)
    from .cli import add_arguments as add_cli_arguments

    cli = benches.add_parser(
        "cli",
        help="how fast `lineup --help` and `lineup debug status` start beside bare Python",
        description="Measures, as medians over --runs rounds, a bare `python -c pass`,"
        " `lineup --help` and `lineup debug status` against an empty data dir, each a fresh"
        " process, and checks `lineup --help` against its target of 3x the bare start.",
    )
    add_cli_arguments(cli)
    cli.set_defaults(func=_run_cli)
    from ._chaos_options import add_arguments as add_chaos_arguments

    chaos = benches.add_parser(
        "chaos",
        help="the whole runtime under a mixed workload and random faults; counts what was"
        " lost, duplicated or reordered",
        description="Runs the runtime with the sample apps under a mixed workload (agent"
        " messages, typed user messages, tool calls, app launches, an update and a rollback)"
        " while killing, stopping and restarting its processes and the AppServer and filling"
        " its disk, then checks the agent's and the user's records against the chat timeline"
        " and the AppServer's record. Exits 1 if anything was lost, duplicated or reordered,"
        " or a tool call had no final outcome or several. With --power-cuts N (as root) the"
        " faults are N power cuts of the data dir's disk instead, each followed by a check"
        " of every file and of what was acknowledged before it.",
    )
    add_chaos_arguments(chaos)
    chaos.set_defaults(func=_run_chaos)
    from ._soak_options import add_arguments as add_soak_arguments

    soak = benches.add_parser(
        "soak",
        help="the chaos workload for a long while: how fast the data dir and each"
        " process's memory grow",
        description="Runs the chaos bench's workload (without its faults, or with them:"
        " --faults) for --minutes, sampling every 10 s the data dir's size by part, the"
        " user data the workload added and each process's RSS, and reports their growth an"
        " hour after a warm-up beside the targets: the data dir grows no faster than the"
        " user data, and no process's RSS by more than 5 MiB an hour.",
    )
    add_soak_arguments(soak)
    soak.set_defaults(func=_run_soak)
    from ._speech_options import add_arguments as add_speech_arguments

    speech = benches.add_parser(
        "speech",
        help="speech.transcribe through the runtime beside PocketSphinx alone",
        description="Measures, as medians over --rounds interleaved rounds, speech.transcribe"
        " of espeak-ng's speech through the runtime (the app's request to the gateway's"
        " answer) beside PocketSphinx alone on the same samples (a fresh process that loads"
        " the model and decodes), as real-time factors, and checks the capability against"
        " its target of 1.2x PocketSphinx alone.",
    )
    add_speech_arguments(speech)
    speech.set_defaults(func=_run_speech)
