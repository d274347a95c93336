"""Imports follow the message boundaries (DESIGN §2): no actor package imports another
actor's package; apps import only the SDK and the contracts; the SDK reaches the kernel."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.kernel.helpers import REPO_ROOT

ACTORS = [
    "store",
    "router",
    "transport",
    "app_manager",
    "tool_router",
    "capability_gateway",
    "host",
]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(package: str) -> list[Path]:
    return sorted((REPO_ROOT / package).rglob("*.py"))


def test_no_actor_imports_another_actors_package() -> None:
    for actor in ACTORS:
        modules = _modules(f"actors/{actor}")
        assert modules, actor
        for module in modules:
            for name in _imports(module):
                parts = name.split(".")
                if parts[0] == "actors" and len(parts) > 1:
                    assert parts[1] in ("kernel", "contracts", actor), f"{module}: {name}"
                assert parts[0] not in ("apps", "supervisor"), f"{module}: {name}"


def test_apps_import_only_the_sdk_and_the_contracts() -> None:
    for module in _modules("apps"):
        if "sdk" in module.relative_to(REPO_ROOT / "apps").parts:
            continue
        for name in _imports(module):
            parts = name.split(".")
            if parts[0] == "actors":
                assert name.startswith("actors.contracts"), f"{module}: {name}"
            if parts[0] == "apps" and len(parts) > 1:
                assert parts[1] in ("sdk", module.relative_to(REPO_ROOT / "apps").parts[0]), (
                    f"{module}: {name}"
                )
            assert parts[0] not in ("lineup", "supervisor"), f"{module}: {name}"


def test_the_sdk_reaches_the_runtime_only_through_the_kernel_and_the_contracts() -> None:
    for module in _modules("apps/sdk"):
        for name in _imports(module):
            parts = name.split(".")
            if parts[0] == "actors":
                assert parts[1] in ("kernel", "contracts"), f"{module}: {name}"
            assert parts[0] not in ("lineup", "supervisor"), f"{module}: {name}"
