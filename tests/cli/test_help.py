"""`lineup --help` loads no command's module (nothing heavy), and every command and option of
the command line has help text."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from lineup.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
HEAVY = [
    "actors",
    "apps",
    "contracts",
    "peers",
    "link",
    "trio",
    "rich",
    "pydantic",
    "bench",
    "supervisor",
]


def test_help_imports_no_command_module() -> None:
    probe = (
        "import sys\n"
        "from lineup.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = {HEAVY!r}\n"
        "loaded = sorted(n for n in sys.modules if n.split('.')[0] in heavy)\n"
        "loaded += sorted(n for n in sys.modules if n.startswith('lineup.') and\n"
        "                 n not in ('lineup.cli', 'lineup._common'))\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, cwd=REPO, timeout=60, check=True
    )
    assert b"COMMAND" in done.stdout
    assert "LOADED []" in done.stderr.decode(), done.stderr.decode()


def _undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if not helps.get(name):
                    missing.append(f"{path} {name}")
                missing += _undocumented(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction) and not action.help:
            missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_command_and_option_has_help() -> None:
    assert _undocumented(build_parser(), "lineup") == []


def test_help_speaks_of_the_product() -> None:
    text = subprocess.run(
        [sys.executable, "-m", "lineup.cli", "--help"],
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=True,
    ).stdout.decode()
    assert "§" not in text and "DESIGN" not in text
    for command in ("run", "chat", "debug", "app", "agent", "tools", "artifacts", "bench"):
        assert f"\n    {command} " in text, text
