"""Loading the golden fixtures shipped in `contracts/fixtures/`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contracts import fixtures_dir

FIXTURES = fixtures_dir()


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def files(pattern: str) -> list[Path]:
    """The fixture files matching `pattern`, sorted; never empty (a typo must not pass)."""
    found = sorted(FIXTURES.glob(pattern))
    assert found, f"no fixtures match {pattern}"
    return found


def ids(paths: list[Path]) -> list[str]:
    return [path.stem for path in paths]


def valid_envelopes() -> dict[str, dict[str, Any]]:
    return {path.stem: load(path) for path in files("envelopes/valid/*.json")}
