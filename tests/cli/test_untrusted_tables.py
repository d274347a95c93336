"""Tables print what apps and agents named (an app's title, a tool's code, an error's
detail) as text: console markup stays literal, and no escape sequence or bidi control
reaches the terminal, whether the output is piped or coloured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOSTILE = (
    "[bold magenta]x[/bold magenta] [link=http://evil]click[/link]"
    " \x1b[31mred \x1b]8;;http://x\x07osc \u202eevil"
)
PROGRAM = (
    "from lineup._common import print_table;"
    "import sys; print_table(sys.argv[1], ['app', 'title'], [['hostile', sys.argv[1]]])"
)


@pytest.mark.parametrize("colour", ["NO_COLOR", "FORCE_COLOR"])
def test_a_table_cell_is_text(colour: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update({colour: "1", "PYTHONPATH": str(REPO), "COLUMNS": "300"})
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, HOSTILE], capture_output=True, env=env, check=True
    )
    out = done.stdout.decode()
    assert "[bold magenta]x[/bold magenta]" in out and "[link=http://evil]click[/link]" in out
    assert "\u202e" not in out and "\x07" not in out and "]8;;" not in out.replace("\\x1b]8;;", "")
    # The only escape sequences are the console's own colours (none when piped, NO_COLOR).
    stripped = out.replace("\\x1b", "")
    if colour == "NO_COLOR":
        assert "\x1b" not in stripped
    assert "\\x1b[31mred" in out and "\\u202eevil" in out
