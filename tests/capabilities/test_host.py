"""What this host serves: the clipboard only where a clipboard tool is on PATH and its
display is set; file names made safe before anything is written."""

from __future__ import annotations

import os
from pathlib import Path

from actors.capability_gateway import served_capabilities
from actors.capability_gateway._files import safe_name
from actors.capability_gateway._providers import clipboard_command, host_providers


def _tool(directory: Path, name: str) -> str:
    path = directory / name
    path.write_text("#!/bin/sh\ncat >/dev/null\n")
    path.chmod(0o755)
    return str(directory)


def test_the_clipboard_needs_a_tool_and_its_display(tmp_path: Path) -> None:
    wayland = _tool(tmp_path, "wl-copy")
    assert clipboard_command({"PATH": wayland, "WAYLAND_DISPLAY": "wayland-0"}) == ["wl-copy"]
    assert clipboard_command({"PATH": wayland, "DISPLAY": ":0"}) is None
    x11 = _tool(tmp_path, "xclip")
    assert clipboard_command({"PATH": x11, "DISPLAY": ":0"}) == ["xclip", "-selection", "clipboard"]
    assert clipboard_command({"PATH": str(tmp_path / "none"), "DISPLAY": ":0"}) is None
    served = host_providers(tmp_path, {"PATH": wayland, "WAYLAND_DISPLAY": "wayland-0"})
    assert sorted(served) == ["clipboard.write", "file.open", "file.save", "notification.show"]
    assert sorted(host_providers(tmp_path, {"PATH": ""})) == [
        "file.open",
        "file.save",
        "notification.show",
    ]
    # What the tool router offers agents is what the gateway serves, with or without one.
    for env in ({"PATH": wayland, "WAYLAND_DISPLAY": "wayland-0"}, {"PATH": ""}):
        assert served_capabilities(env) == set(host_providers(tmp_path, env))


def test_names_are_made_safe() -> None:
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name("C:\\Users\\x\\report.pdf") == "report.pdf"
    assert safe_name("nul") == "_nul"
    assert safe_name("LPT1.log") == "_LPT1.log"
    assert safe_name("  two   spaces\t.txt ") == "two spaces.txt"
    assert safe_name("\u200bhidden\u2066.txt") == "hidden.txt"
    assert safe_name("..") == safe_name("") == "download"
    long = safe_name("é" * 300 + ".tar")
    assert long.endswith(".tar") and len(long.encode()) <= 200


def test_the_tool_router_is_told_what_the_gateway_serves(tmp_path: Path) -> None:
    from actors import runtime_children

    config = runtime_children.default_config(tmp_path)
    tool_router = next(child for child in config.children if child.name == "tool_router")
    assert set(tool_router.config["host_capabilities"]) == set(host_providers(tmp_path, os.environ))
