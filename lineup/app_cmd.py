"""`lineup app`: make, sign and check app bundles, and manage the apps of
a running runtime.

new      a new app package to start from: an app, its surface and its test
keygen   a new Ed25519 signing key pair: NAME.key (secret, 0600) and NAME.pub; warns when
         git could commit the secret key
build    pack an app package and the manifest generated from its declarations (unsigned);
         its tests, caches, dotfiles, keys and bundles stay out (.bundleignore changes that)
sign     add or replace a bundle's signature record
verify   run every check the runtime runs before it admits a bundle

list | install | enable | disable | update | rollback | remove | set-default | launch |
close | focus    ask the running runtime's app manager; each prints the operation's outcome

The public key of a signer the runtime should accept goes into DATA_DIR/trusted_keys/.
Exit status: 0 done, 1 refused (`code: detail`), 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from ._bundle_files import IGNORE_FILE, package_files
from ._common import fail, os_error, print_json, run_subcommand
from ._git import unignored_secret


class _UsageError(Exception):
    """A wrong argument (exit 2), as opposed to a refused bundle (exit 1)."""


def _refused(args: argparse.Namespace, code: str, detail: str) -> int:
    if args.json:
        print_json({"ok": False, "code": code, "detail": detail})
        return 1
    return fail(f"{code}: {detail}", 1)


def _guarded(run: Any) -> Any:
    """Maps the two kinds of failure to their exit status; anything else is a bug."""

    def command(args: argparse.Namespace) -> int:
        from contracts import ContractError

        try:
            return int(run(args))
        except ContractError as exc:
            return _refused(args, exc.code.value, exc.detail)
        except OSError as exc:
            return fail(os_error(exc))
        except (_UsageError, ValueError) as exc:
            return fail(str(exc))

    return command


# --- build: finding the app and its files -------------------------------------------------


def _import_package(target: str) -> tuple[Path, ModuleType]:
    """The package named by a directory or a module name, imported (its declarations run)
    from its source as it is now: bytecode cached beside it may be older than an edit made
    within the same second, and the build leaves no cache in the package."""
    import apps.sdk  # noqa: F401 - what every app imports, from the runtime's own cache

    with tempfile.TemporaryDirectory(prefix="lineup-build-") as nowhere:
        kept = sys.pycache_prefix, sys.dont_write_bytecode
        sys.pycache_prefix, sys.dont_write_bytecode = nowhere, True
        try:
            return _import_from_source(target)
        finally:
            sys.pycache_prefix, sys.dont_write_bytecode = kept


def _import_from_source(target: str) -> tuple[Path, ModuleType]:
    path = Path(target)
    if path.is_dir():
        init = path / "__init__.py"
        if not init.is_file():
            raise _UsageError(f"{path} is not a Python package (no __init__.py)")
        # A private name: the package's own relative imports work, nothing else is shadowed.
        name = "_lineup_build_" + re.sub(r"\W", "_", path.resolve().name)
        spec = importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=[str(path)]
        )
        if spec is None or spec.loader is None:
            raise _UsageError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the app's own code: where it broke, for its author
            raise _UsageError(f"importing {path} failed: {_where(exc, path)}") from None
        return path, module
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise _UsageError(f"{target!r} is neither a directory nor an importable module") from exc
    if not hasattr(module, "__path__") or module.__file__ is None:
        raise _UsageError(f"{target} is a module, not a package: an app is a package")
    return Path(module.__file__).parent, module


def _where(exc: Exception, root: Path) -> str:
    """An error in an app's code as `file:line: message`, at the app's own line that led to
    it (a declaration the SDK refused names the app's line, not the SDK's)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError):
        return f"{exc.filename}:{exc.lineno}: {exc.msg}"
    own = [f for f in frames if Path(f.filename).resolve().is_relative_to(root.resolve())]
    frame = (own or frames)[-1] if frames else None
    place = f"{frame.filename}:{frame.lineno}: " if frame is not None else ""
    return f"{place}{exc}"


# --- the subcommands ----------------------------------------------------------------------


def _keygen(args: argparse.Namespace) -> int:
    from actors.app_manager import key_id, load_public_key, write_keypair

    try:
        secret, public = write_keypair(args.out, args.name)
    except FileExistsError as exc:
        raise _UsageError(
            f"{exc.filename} already exists and was left as it is; sign with the pair you have"
            f" (--key {args.out / args.name}.key), or pick another --name for a new one"
        ) from None
    key = key_id(load_public_key(public))
    warning = unignored_secret(secret)
    if args.json:
        made = {"ok": True, "key": str(secret), "public": str(public), "key_id": key}
        print_json({**made, "warning": warning} if warning else made)
    else:
        print(f"secret key  {secret}  (mode 0600: keep it private)")
        print(f"public key  {public}  (key id {key})")
        print("trust it:   copy the .pub file into DATA_DIR/trusted_keys/")
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def _build(args: argparse.Namespace) -> int:
    from actors.app_manager import write_bundle
    from apps.sdk import declared_app, manifest_of

    root, module = _import_package(args.app)
    try:
        app_class = declared_app(module)
    except LookupError as exc:
        raise _UsageError(str(exc)) from None
    manifest = manifest_of(app_class)
    packed = package_files(root)
    files = packed.files
    manifest_text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    write_bundle(args.out, manifest=manifest_text.encode(), files=files)
    size = Path(args.out).stat().st_size
    tools = [tool["method"] for tool in manifest["tools"]]
    if args.json:
        print_json(
            {
                "ok": True,
                "bundle": str(args.out),
                "app_scope": manifest["app_scope"],
                "version": manifest["version"],
                "files": sorted(files),
                "left_out": packed.left_out,
                "tools": tools,
                "bytes": size,
                "signed": False,
            }
        )
    else:
        print(f"built {manifest['app_scope']} {manifest['version']} from {app_class.__name__}")
        print(f"  {len(files)} files, {size} bytes -> {args.out} (unsigned)")
        print(f"  tools: {', '.join(tools) or 'none'}")
        if packed.left_out:
            print(
                f"  left out: {', '.join(packed.left_out)} (tests, caches, dotfiles, keys and"
                f" bundles are by default; {IGNORE_FILE} in the package changes that)"
            )
    return 0


def _sign(args: argparse.Namespace) -> int:
    from actors.app_manager import key_id, load_signing_key, sign_bundle

    key = load_signing_key(args.key)
    signed = sign_bundle(args.bundle, key)
    kid = key_id(key.verify_key)
    if args.json:
        print_json({"ok": True, "bundle": str(args.bundle), "key_id": kid, "signed": signed})
    else:
        print(f"signed {signed['app_scope']} {signed['version']} with key {kid}")
        print(f"  {len(signed['files'])} files and the manifest -> {args.bundle}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from actors.app_manager import load_trusted_keys, verify_bundle

    trusted = load_trusted_keys(args.trust)
    verified = verify_bundle(args.bundle, trusted)
    if args.json:
        print_json(
            {
                "ok": True,
                "app_scope": verified.manifest.app_scope,
                "version": verified.version,
                "digest": verified.digest,
                "key_id": verified.key_id,
                "files": [entry.model_dump() for entry in verified.files],
            }
        )
    else:
        print(f"ok: {verified.manifest.app_scope} {verified.version}, signed by {verified.key_id}")
        print(f"  sha256 {verified.digest}, {len(verified.files)} files")
    return 0


def _new(args: argparse.Namespace) -> int:
    from .app_new import NameRefused, create_app

    try:
        made = create_app(args.name, args.out)
    except NameRefused as exc:
        return fail(f"{exc}.", 1)
    files = sorted(p.relative_to(made).as_posix() for p in made.rglob("*") if p.is_file())
    if args.json:
        print_json({"ok": True, "app_scope": args.name, "package": str(made), "files": files})
    else:
        print(f"created {args.name} in {made}: {', '.join(files)}")
        print(f"  test it:  python -m pytest {made / 'test_app.py'}")
        print(f"  build it: lineup app build {made} --out {args.name}.bundle")
    return 0


def add_bundle_commands(commands: Any) -> None:
    """The offline subcommands: they work on files and need no running runtime."""

    def command(name: str, help: str, run: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=help)
        parser.add_argument("--json", action="store_true", help="print JSON, not text")
        parser.set_defaults(func=_guarded(run))
        return parser

    new = command(
        "new",
        "write a new app package DIR/PACKAGE (NAME with _ for -) to start from: a declared app"
        " with one tool, a surface that emits one event, and a test against a real runtime",
        _new,
    )
    new.add_argument(
        "name",
        metavar="NAME",
        help="the app's scope: lower case letters, digits and hyphens (e.g. my-app)",
    )
    new.add_argument(
        "--out",
        type=Path,
        default=Path(),
        metavar="DIR",
        help="where the package goes (default: the current directory); never overwritten",
    )
    keygen = command("keygen", "write a new Ed25519 signing key pair", _keygen)
    keygen.add_argument("--out", required=True, type=Path, metavar="DIR", help="where to write")
    keygen.add_argument("--name", default="lineup-app", help="the files' name: NAME.key, NAME.pub")
    build = command(
        "build",
        "pack an app package and its generated manifest.json into a bundle (unsigned); "
        "the package is imported, so its declarations run",
        _build,
    )
    build.add_argument(
        "app", metavar="APP_DIR_OR_MODULE", help="the app's package: a directory or a module"
    )
    build.add_argument("--out", required=True, type=Path, metavar="FILE", help="the bundle")
    sign = command("sign", "add or replace a bundle's signature record", _sign)
    sign.add_argument("bundle", type=Path, metavar="BUNDLE", help="the bundle file to sign")
    sign.add_argument("--key", required=True, type=Path, metavar="KEYFILE", help="a NAME.key")
    verify = command("verify", "check a bundle as the runtime does before admitting it", _verify)
    verify.add_argument("bundle", type=Path, metavar="BUNDLE", help="the bundle file to check")
    verify.add_argument(
        "--trust",
        required=True,
        action="append",
        type=Path,
        metavar="PUB",
        help="a trusted public key file, or a directory of *.pub files (repeatable)",
    )


def register(subparsers: Any) -> None:
    """Adds `app` to the `lineup` command line."""
    app = subparsers.add_parser(
        "app",
        help="make, sign and check app bundles",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = app.add_subparsers(dest="app_command", required=True, metavar="COMMAND")
    add_bundle_commands(commands)
    # The runtime-facing subcommands talk to the app manager of a running runtime.
    from .app_runtime_cmd import add_runtime_commands

    add_runtime_commands(commands)


def main(argv: list[str] | None = None) -> int:
    """`python -m lineup.app_cmd ...`, the same as `lineup app ...`."""
    return run_subcommand(register, "app", argv)


if __name__ == "__main__":
    sys.exit(main())
