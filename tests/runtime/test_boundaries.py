"""Imports follow the process and message boundaries (docs/architecture.md
"Import boundaries"), read from every module's source (ast), relative imports resolved:

- the contracts (`contracts/`) import nothing of the project: every process stands on them;
- the runtime (`supervisor.py`, `actors/`, `apps/`, `contracts/`) never imports the command line
  (`lineup`), the peers (`peers`) or the bench (`bench`); of it, only the transport imports
  the link (`link`), the client end of the AppServer's WebSocket;
- a peer imports only the contracts, the link and its own package (and the standard
  library and its third-party libraries); the link only the contracts;
- no module imports another package's private (`_name`) module;
- no actor package imports another actor's package: the actors are the runtime's own
  child specs (`runtime_children.default_config()`, with the web host), not a list kept here;
  the web host, a UI client like the command line, reads the projections it shows with
  the readers the command line uses (`READERS`) and imports nothing else of the runtime;
  the transport reads the AppServer token with `actors.runtime_token`, as they do;
- apps import only the SDK and the contracts; the SDK reaches the kernel;
- the tool router keeps its own state: nothing of the store's, and the store nothing of
  its tables.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from actors import runtime_children
from tests.kernel.helpers import REPO_ROOT

# Every top-level package of the project; any other top-level name is the standard library
# or a third-party library.
PROJECT = frozenset(
    {"actors", "apps", "bench", "contracts", "lineup", "link", "peers", "supervisor"}
)
RUNTIME = ("supervisor.py", "actors", "apps", "contracts")
OUTSIDE_THE_RUNTIME = frozenset({"lineup", "peers", "bench"})


def _modules(*roots: str, base: Path = REPO_ROOT) -> list[Path]:
    paths: list[Path] = []
    for root in roots:
        path = base / root
        paths.extend([path] if path.suffix == ".py" else sorted(path.rglob("*.py")))
    return paths


def imports_of(path: Path, base: Path = REPO_ROOT) -> Iterator[str]:
    """Every name `path` imports, absolute, with each `from X import y` also as `X.y`
    (y may be a module)."""
    parts = path.relative_to(base).with_suffix("").parts
    package = parts[:-1]  # an __init__'s package is its directory, as a module's is
    yield from _imports_in(path.read_text(encoding="utf-8"), package)


@functools.cache
def _imports_in(source: str, package: tuple[str, ...]) -> tuple[str, ...]:
    """What `imports_of` yields for this source in this package: each copy of the tree the
    rule tests make is parsed only where it differs."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module.split(".") if node.module else []
            if node.level:
                module = [*package[: len(package) - node.level + 1], *module]
            found.append(".".join(module))
            found.extend(".".join([*module, alias.name]) for alias in node.names)
    return tuple(found)


def _private_owner(name: str, base: Path) -> tuple[str, ...] | None:
    """The package whose private module (or a module's private name) `name` reaches
    into, if it does."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            owner = tuple(parts[:i])
            # A private name of a module belongs to that module's package.
            return owner if base.joinpath(*owner).is_dir() else owner[:-1]
    return None


def private_import_violations(base: Path = REPO_ROOT) -> list[str]:
    found = []
    for module in _modules(*sorted(PROJECT - {"supervisor"}), "supervisor.py", base=base):
        package = module.relative_to(base).with_suffix("").parts[:-1]
        for name in imports_of(module, base):
            owner = _private_owner(name, base)
            if owner and owner[0] in PROJECT and package[: len(owner)] != owner:
                found.append(f"{module.relative_to(base)}: {name}")
    return found


def circle_violations(base: Path = REPO_ROOT) -> list[str]:
    """Modules of one package that import each other in a circle, however long and for
    whatever reason (a type annotation's import too), in every package of the project. A
    package's face is left out: it imports each name lazily, or is what its modules are
    imported through."""
    found = []
    packages = sorted(
        init.parent.relative_to(base).as_posix()
        for root in sorted(PROJECT - {"supervisor"})
        for init in (base / root).rglob("__init__.py")
        if "__pycache__" not in init.parts
    )
    assert "apps/sdk" in packages and "actors/kernel" in packages, packages
    for package in packages:
        folder = base / package
        dotted = package.replace("/", ".")
        names = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
        edges = {
            name: {
                imported.split(".")[len(package.split("/"))]
                for imported in imports_of(folder / f"{name}.py", base)
                if imported.startswith(f"{dotted}.")
                and imported.split(".")[len(package.split("/"))] in names
            }
            - {name}
            for name in names
        }
        for start in sorted(names):
            # Depth first from `start`: a way back to it is a circle through it.
            stack, seen = [(start, (start,))], set()
            while stack:
                name, way = stack.pop()
                for after in sorted(edges[name]):
                    if after == start:
                        found.append(f"{dotted}: " + " -> ".join([*way, start]))
                    elif after not in seen:
                        seen.add(after)
                        stack.append((after, (*way, after)))
    return found


def runtime_violations(base: Path = REPO_ROOT) -> list[str]:
    found = []
    for module in _modules(*RUNTIME, base=base):
        in_transport = module.relative_to(base).parts[:2] == ("actors", "transport")
        for name in imports_of(module, base):
            top = name.partition(".")[0]
            if top in OUTSIDE_THE_RUNTIME or (top == "link" and not in_transport):
                found.append(f"{module.relative_to(base)}: {name}")
    return found


def peer_violations(base: Path = REPO_ROOT) -> list[str]:
    found = []
    for module in _modules("peers", "link", base=base):
        own = module.relative_to(base).parts[:2]  # ("peers", NAME) or ("link", ...)
        allowed = {"contracts", "link", ".".join(own)}
        if own[0] == "link":
            allowed = {"contracts", "link"}
        for name in imports_of(module, base):
            if name.partition(".")[0] not in PROJECT:
                continue
            if not any(name == a or name.startswith(f"{a}.") for a in allowed):
                found.append(f"{module.relative_to(base)}: {name}")
    return found


def runtime_actors() -> list[str]:
    """The actor packages of the runtime's own children (`actors.NAME:Class`)."""
    targets = [child.target for child in runtime_children.default_config(web_port=0).children]
    return sorted({t.split(":")[0].split(".")[1] for t in targets if t.startswith("actors.")})


# What an actor reads of another's, read-only. The app registry is the app manager's file,
# read through its one public reader (`actors.app_manager.registry`) by those who judge by
# it as it is now. The web host reads as `lineup chat history` and `lineup app list` do: the
# chat app's view (the SDK's log reader, the chat's text helpers), the registry, and the
# store's read-only readers of the link state. The transport reads the AppServer token
# with the package `lineup run` keeps it with and `lineup debug status` finds it with.
REGISTRY: Final = "actors.app_manager.registry"
READERS: Final = {
    "web_host": ("apps.sdk", "apps.chat", "actors.store", REGISTRY),
    "transport": ("actors.runtime_token",),
    "store": (REGISTRY,),
    "router": (REGISTRY,),
    "tool_router": (REGISTRY,),
    "capability_gateway": (REGISTRY,),
}


def actor_violations(base: Path = REPO_ROOT) -> list[str]:
    found = []
    for actor in runtime_actors():
        modules = _modules(f"actors/{actor}", base=base)
        assert modules, actor
        readers = READERS.get(actor, ())
        for module in modules:
            for name in imports_of(module, base):
                if any(name == r or name.startswith(f"{r}.") for r in readers):
                    continue
                parts = name.split(".")
                if parts[0] == "actors" and len(parts) > 1:
                    if parts[1] not in ("kernel", actor):
                        found.append(f"{module.relative_to(base)}: {name}")
                elif parts[0] in ("apps", "supervisor"):
                    found.append(f"{module.relative_to(base)}: {name}")
    return found


def test_the_actors_are_the_runtimes_children() -> None:
    actors = runtime_actors()
    assert {"store", "router", "transport", "app_manager", "host"} <= set(actors), actors
    assert "kernel" not in actors


def test_the_runtime_imports_neither_the_command_line_nor_the_peers_nor_the_bench() -> None:
    assert runtime_violations() == []


def test_peers_import_only_the_contracts_and_the_link() -> None:
    assert _modules("peers/appserver") and _modules("peers/agent")
    assert peer_violations() == []


def test_no_module_imports_another_packages_private_module() -> None:
    assert private_import_violations() == []


def test_no_actor_imports_another_actors_package() -> None:
    assert actor_violations() == []


# The tool router's tables: its own file's, named nowhere in the store.
TOOL_TABLES: Final = ("tool_calls", "tool_deadlines", "tool_inventories", "tool_state")


def test_the_tool_router_keeps_its_own_state() -> None:
    """The tool router's rows are in its own file: it imports nothing of the store (no
    reader, no row format), the store has no module or table of them, and of the tool
    router only the migration of an older data dir reads `runtime.db`."""
    tool_router = _modules("actors/tool_router")
    for module in tool_router:
        assert not [n for n in imports_of(module) if n.startswith("actors.store")], module
    assert not (REPO_ROOT / "actors/store/_tools.py").exists()
    for module in _modules("actors/store"):
        text = module.read_text(encoding="utf-8")
        assert not [table for table in TOOL_TABLES if table in text], module
    readers = [m.name for m in tool_router if "runtime.db" in m.read_text(encoding="utf-8")]
    assert readers == ["_migration.py"], readers


def test_the_capability_gateway_keeps_its_own_state() -> None:
    """The gateway's requests and grants are in its own file: the store has no module,
    table or message of them, and of the gateway only the migration of an older data dir
    reads `runtime.db`."""
    gateway = _modules("actors/capability_gateway")
    for module in gateway:
        assert not [n for n in imports_of(module) if n.startswith("actors.store")], module
    for module in _modules("actors/store"):
        text = module.read_text(encoding="utf-8")
        found = [t for t in ("capability_requests", "capability_grants") if t in text]
        assert not found and "store.capabilities" not in text, (module, found)
    readers = [m.name for m in gateway if "runtime.db" in m.read_text(encoding="utf-8")]
    assert readers == ["_migration.py"], readers


# What each side package of the kernel may import of the rest of the kernel: the wire
# nothing but the lazy loader; spawning the wire and the shared declarations, and the
# actor side's entry point only where the zygote hands each fork to it; the supervisor's
# side the wire, spawning and the shared modules, never the actor side; the actor side the
# wire and the shared modules alone.
_SHARED: Final = {
    f"actors.kernel.{name}"
    for name in ("_lazy", "_specs", "_ids", "_door", "_durability", "_faults", "_client")
}
KERNEL_SIDES: Final = {
    "wire": {"actors.kernel._lazy"},
    "spawning": {
        "actors.kernel._lazy",
        "actors.kernel._own_process",
        "actors.kernel.wire",
        "actors.kernel._specs",
        "actors.kernel._ids",
        "actors.kernel._collector",
    },
    "supervising": {*_SHARED, "actors.kernel.wire", "actors.kernel.spawning"},
    "actor_process": {
        *_SHARED,
        "actors.kernel.wire",
        "actors.kernel._collector",
        "actors.kernel._own_process",
    },
}
# The zygotes run an actor in what they fork: the one import of the actor side from theirs.
ZYGOTES: Final = ("actors/kernel/spawning/zygote.py", "actors/kernel/spawning/jail/app_zygote.py")
ACTOR_ENTRY: Final = "actors.kernel.actor_process.child"


def kernel_side_violations(base: Path = REPO_ROOT) -> list[str]:
    found = []
    for side, allowed in KERNEL_SIDES.items():
        modules = _modules(f"actors/kernel/{side}", base=base)
        assert modules, side
        for module in modules:
            own = f"actors.kernel.{side}"
            for name in imports_of(module, base):
                if not name.startswith("actors.kernel") or name.startswith(own):
                    continue
                where = module.relative_to(base).as_posix()
                hands_over = name == ACTOR_ENTRY or name.startswith(f"{ACTOR_ENTRY}.")
                if where in ZYGOTES and hands_over:
                    continue
                if not any(name == a or name.startswith(f"{a}.") for a in allowed):
                    found.append(f"{where}: {name}")
    return found


def test_the_kernels_sides_import_only_what_is_below_them() -> None:
    """The wire is the bottom; spawning sits on it and the shared declarations, and
    reaches the actor side only where a zygote runs an actor (`child`); the supervisor's
    side never imports the actor side, nor the actor side the supervisor's."""
    assert kernel_side_violations() == []


# The app manager's tables: its own file's, named nowhere in the store.
REGISTRY_TABLES: Final = ("app_records", "app_operations", "app_instances", "app_settings")


def test_the_app_manager_keeps_its_own_state() -> None:
    """The registry is in the app manager's own file: the store has no table of it and
    writes none (it reads its live instances through the registry's reader), and of the app
    manager only the migration of an older data dir reads `runtime.db`."""
    app_manager = _modules("actors/app_manager")
    for module in app_manager:
        assert not [n for n in imports_of(module) if n.startswith("actors.store")], module
    for module in _modules("actors/store"):
        text = module.read_text(encoding="utf-8")
        assert not [table for table in REGISTRY_TABLES if table in text], module
        assert "store.apps.write" not in text and "store.apps.load" not in text, module
    readers = [m.name for m in app_manager if '"runtime.db"' in m.read_text(encoding="utf-8")]
    assert readers == ["_migration.py"], readers


@pytest.mark.parametrize(
    ("module", "line", "check"),
    [
        ("actors/router/door.py", "import lineup.cli", runtime_violations),
        ("supervisor.py", "from peers.appserver import AppServer", runtime_violations),
        ("apps/chat/_app.py", "from bench import register", runtime_violations),
        ("actors/store/door.py", "from link import Link", runtime_violations),
        ("peers/agent/_demo.py", "from actors.kernel import new_id", peer_violations),
        ("peers/appserver/_store.py", "from peers.agent import AgentClient", peer_violations),
        ("peers/agent/_client.py", "from lineup._common import fail", peer_violations),
        ("link/_link.py", "from peers.agent import AgentClient", peer_violations),
        (
            "lineup/cli.py",
            "from actors.app_manager._bundle import key_id",
            private_import_violations,
        ),
        ("bench/_paths.py", "from peers.appserver._store import Store", private_import_violations),
        (
            "actors/kernel/actor_process/child.py",
            "from ..spawning.jail import _env",
            private_import_violations,
        ),
        ("actors/router/_actor.py", "from actors.store import StoreActor", actor_violations),
        ("actors/host/door.py", "from ..transport import door", actor_violations),
        ("actors/web_host/door.py", "from actors.host import door", actor_violations),
        (
            "actors/kernel/supervising/_control.py",
            "from ._supervisor import Supervisor",
            circle_violations,
        ),
        ("actors/kernel/wire/_frames.py", "from .._specs import ChildSpec", kernel_side_violations),
        (
            "actors/kernel/spawning/_quota.py",
            "from ..actor_process import Actor",
            kernel_side_violations,
        ),
        (
            "actors/kernel/supervising/_gate.py",
            "from ..actor_process import Actor",
            kernel_side_violations,
        ),
        (
            "actors/kernel/actor_process/_actor.py",
            "from ..supervising import Supervisor",
            kernel_side_violations,
        ),
        ("actors/tool_router/_artifacts.py", "from ._actor import store_of", circle_violations),
        (
            "actors/kernel/spawning/jail/_limits.py",
            "from ._launcher import set_limits",
            circle_violations,
        ),
        ("peers/appserver/_core.py", "from ._session import Session", circle_violations),
        ("apps/sdk/_tools.py", "from ._runtime_app import RuntimeApp", circle_violations),
    ],
)
def test_each_rule_catches_a_forbidden_import(
    tmp_path: Path, module: str, line: str, check: object
) -> None:
    """The checks above, run on a copy of the tree with one forbidden import added."""
    import shutil

    assert callable(check)
    for root in sorted(PROJECT - {"supervisor"}):
        shutil.copytree(
            REPO_ROOT / root, tmp_path / root, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO_ROOT / "supervisor.py", tmp_path / "supervisor.py")
    assert check(tmp_path) == []
    target = tmp_path / module
    target.write_text(f"{target.read_text(encoding='utf-8')}\n{line}\n", encoding="utf-8")
    assert check(tmp_path), f"{module}: {line}"


def test_no_package_has_an_import_circle() -> None:
    assert circle_violations() == []


def test_apps_import_only_the_sdk_and_the_contracts() -> None:
    for module in _modules("apps"):
        if "sdk" in module.relative_to(REPO_ROOT / "apps").parts:
            continue
        for name in imports_of(module):
            parts = name.split(".")
            assert parts[0] != "actors", f"{module}: {name}"
            if parts[0] == "apps" and len(parts) > 1:
                assert parts[1] in ("sdk", module.relative_to(REPO_ROOT / "apps").parts[0]), (
                    f"{module}: {name}"
                )
            assert parts[0] not in ("lineup", "supervisor"), f"{module}: {name}"


def test_the_sdk_reaches_the_runtime_only_through_the_kernel_and_the_contracts() -> None:
    for module in _modules("apps/sdk"):
        for name in imports_of(module):
            parts = name.split(".")
            if parts[0] == "actors":
                assert parts[1] == "kernel", f"{module}: {name}"
            assert parts[0] not in ("lineup", "supervisor"), f"{module}: {name}"


def test_the_contracts_import_nothing_of_the_project() -> None:
    """The contracts are the bottom every process stands on: the runtime, the apps, the
    peers and the command line import them, and they import none of those."""
    for module in _modules("contracts"):
        for name in imports_of(module):
            assert name.partition(".")[0] not in PROJECT - {"contracts"}, f"{module}: {name}"
