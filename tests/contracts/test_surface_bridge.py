"""The surface bridge's messages as documented (docs/protocol.md, "The surface bridge"): each
valid fixture passes the web host's check, each rejected one is refused with its code and
names what is wrong; and a surface declared in a manifest keeps to its rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contracts import (
    MAX_BRIDGE_BYTES,
    Code,
    ContractError,
    SurfaceEvent,
    check_bridge_text,
    validate_manifest,
)
from tests.contracts._data import FIXTURES, files, ids, load

VALID = files("surface/valid/*.json")
REJECTED = files("surface/rejected/*.json")


def _declared() -> dict[str, Any]:
    declared = load(FIXTURES / "surface" / "declared.json")
    events = [SurfaceEvent.model_validate(raw) for raw in declared["events"]]
    return {
        "instance_id": declared["instance_id"],
        "events": {event.name: event for event in events},
        "capabilities": frozenset(declared["capabilities"]),
        "calls": frozenset(declared["calls"]),
    }


def _text(case: dict[str, Any]) -> str:
    if "text" in case:
        return str(case["text"])
    message = dict(case["message"])
    if case.get("pad_bytes"):
        message["pad"] = "x" * int(case["pad_bytes"])
    return json.dumps(message)


@pytest.mark.parametrize("path", VALID, ids=ids(VALID))
def test_a_valid_message_passes(path: Path) -> None:
    case = load(path)
    message = check_bridge_text(_text(case), **_declared())
    assert message.model_dump(mode="json", exclude_none=True) == {
        key: value for key, value in case["message"].items() if value is not None
    }


@pytest.mark.parametrize("path", REJECTED, ids=ids(REJECTED))
def test_a_rejected_message_is_refused_with_its_code(path: Path) -> None:
    case = load(path)
    with pytest.raises(ContractError) as caught:
        check_bridge_text(_text(case), **_declared())
    assert caught.value.code is Code(case["code"])
    assert case["detail"] in caught.value.detail, caught.value.detail


def test_the_size_limit_counts_utf8_bytes_not_characters() -> None:
    declared = _declared()
    message = {"v": 1, "id": "r", "instance_id": declared["instance_id"], "type": "session.get"}
    fits = json.dumps({**message, "pad": ""})
    room = MAX_BRIDGE_BYTES - len(fits.encode())
    # Within the limit by characters, over it by bytes: each "é" is two bytes of UTF-8.
    text = json.dumps({**message, "pad": "é" * room}, ensure_ascii=False)
    assert len(text) <= MAX_BRIDGE_BYTES < len(text.encode())
    with pytest.raises(ContractError) as caught:
        check_bridge_text(text, **declared)
    assert caught.value.code is Code.TOO_LARGE


def test_a_manifest_keeps_a_surface_inside_the_bundle() -> None:
    manifest = load(FIXTURES / "manifests" / "valid" / "canvas-surface.json")
    entry = validate_manifest(manifest).entrypoints[0]
    assert (entry.surface, [event.name for event in entry.surface_events or ()]) == (
        "ui/index.html",
        ["stroke"],
    )
    for path in ("/ui/index.html", "ui/../../x.html", "ui/.hidden.html", "ui//index.html", ""):
        entry_raw = {**manifest["entrypoints"][0], "surface": path}
        with pytest.raises(ContractError) as caught:
            validate_manifest({**manifest, "entrypoints": [entry_raw]})
        assert caught.value.detail.startswith("entrypoints[0].surface"), path
