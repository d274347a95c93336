"""The contracts package stands alone: any process can import it without the runtime."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import contracts

PACKAGE = Path(contracts.__file__).parent
# typing_extensions: pydantic's TypedDict on Python 3.11.
THIRD_PARTY = {"pydantic", "pydantic_core", "jsonschema", "re2", "msgpack", "typing_extensions"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_contracts_import_only_stdlib_their_libraries_and_themselves() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 5
    for module in modules:
        for name in _imports(module):
            top = name.partition(".")[0]
            if top != "contracts":
                assert top in sys.stdlib_module_names or top in THIRD_PARTY, (module.name, name)


def test_public_face_is_complete_and_private_modules_stay_private() -> None:
    exported = set(contracts.__all__)
    assert all(hasattr(contracts, name) for name in exported)
    assert not any(name.startswith("_") for name in exported)
