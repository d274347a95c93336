"""The durability contract (docs/architecture.md, "Durability: what a power cut may take")
names, for each promise, the tests that prove it: each one named must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Durability: what a power cut may take"


def test_every_test_the_contract_names_exists() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split(SECTION, 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", section)
    assert len(named) >= 8
    for path, name in named:
        source = (ROOT / path).read_text()
        if name:
            assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), (path, name)
