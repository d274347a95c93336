"""Every bundle check, one tampered bundle each: refused with its code and a detail naming
the file or feature, and the cache left exactly as it was."""

from __future__ import annotations

import json
import shutil
import stat
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actors.app_manager._bundle import (
    BundleContents,
    BundleError,
    BundleLimits,
    key_id,
    read_bundle,
    sha256_hex,
    sign_bundle,
    signature_record,
    signed_data,
    verify_bundle,
    write_bundle,
)
from actors.app_manager._cache import BundleCache
from contracts import Code
from tests.app_manager.conftest import lineup
from tests.apps.conftest import Signed
from tests.kernel.helpers import REPO_ROOT

APP_FILE = "app/_app.py"


def _snapshot(root: Path) -> list[tuple[str, int, bytes]]:
    if not root.exists():
        return []
    return sorted(
        (str(p.relative_to(root)), p.lstat().st_mode, p.read_bytes() if p.is_file() else b"")
        for p in root.rglob("*")
    )


@pytest.fixture
def cache(signed: Signed, tmp_path: Path) -> BundleCache:
    """A cache already holding the good bundle: a refusal must leave it as it is."""
    cache = BundleCache(tmp_path / "bundles")
    cache.admit(signed.path, signed.trusted)
    return cache


def _refused(cache: BundleCache, signed: Signed, bundle: Path, **options: Any) -> BundleError:
    before = _snapshot(cache.root)
    with pytest.raises(BundleError) as caught:
        cache.admit(bundle, signed.trusted, **options)
    assert _snapshot(cache.root) == before
    assert cache.statistics().refused == 1
    return caught.value


def _resigned(
    signed: Signed,
    contents: BundleContents,
    *,
    app_scope: str = "pomodoro",
    version: str = "0.1.0",
) -> bytes:
    """A signature record for `contents` by the trusted key: what a trusted but careless
    publisher would produce."""
    return signature_record(signed_data(contents, app_scope=app_scope, version=version), signed.key)


def _rewritten(
    signed: Signed, out: Path, change: Callable[[BundleContents], BundleContents]
) -> Path:
    contents = change(read_bundle(signed.data()))
    write_bundle(
        out, manifest=contents.manifest, files=contents.files, signature=contents.signature
    )
    return out


def _with_manifest(
    signed: Signed,
    out: Path,
    edit: Callable[[dict[str, Any]], None],
    *,
    app_scope: str = "pomodoro",
) -> Path:
    """The bundle with its manifest edited, re-signed by the trusted key."""
    original = read_bundle(signed.data())
    manifest = json.loads(original.manifest)
    edit(manifest)
    contents = BundleContents(json.dumps(manifest).encode(), None, original.files)
    signature = _resigned(signed, contents, app_scope=app_scope)
    write_bundle(out, manifest=contents.manifest, files=contents.files, signature=signature)
    return out


def test_the_good_bundle_is_admitted_read_only_and_reused(signed: Signed, tmp_path: Path) -> None:
    cache = BundleCache(tmp_path / "bundles")
    entry = cache.admit(signed.path, signed.trusted)
    assert not entry.reused
    assert entry.dir == cache.root / sha256_hex(signed.data())
    contents = read_bundle(signed.data())
    assert (entry.dir / APP_FILE).read_bytes() == contents.files[APP_FILE]
    assert (entry.dir / "manifest.json").read_bytes() == contents.manifest
    for path in [entry.dir, *entry.dir.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o222 == 0, path
    assert cache.admit(signed.path, signed.trusted).reused
    assert [p.name for p in cache.root.iterdir()] == [entry.dir.name]  # no temp dir left
    statistics = cache.statistics()
    assert (statistics.entries, statistics.admitted, statistics.reused) == (1, 1, 1)


def test_one_byte_changed_in_a_file(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def flip(contents: BundleContents) -> BundleContents:
        files = dict(contents.files)
        data = bytearray(files[APP_FILE])
        data[100] ^= 0x01
        files[APP_FILE] = bytes(data)
        return BundleContents(contents.manifest, contents.signature, files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", flip))
    assert (error.code, error.detail) == (
        Code.BUNDLE_HASH_MISMATCH,
        f"{APP_FILE}: differs from the signed list",
    )


def test_a_file_added(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def add(contents: BundleContents) -> BundleContents:
        files = {**contents.files, "app/evil.py": b"import os\n"}
        return BundleContents(contents.manifest, contents.signature, files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", add))
    assert error.code is Code.BUNDLE_UNLISTED_FILE
    assert error.detail.startswith("app/evil.py")


def test_a_file_removed(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def remove(contents: BundleContents) -> BundleContents:
        files = {k: v for k, v in contents.files.items() if k != "app/__init__.py"}
        return BundleContents(contents.manifest, contents.signature, files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", remove))
    assert error.code is Code.BUNDLE_MISSING_FILE
    assert error.detail.startswith("app/__init__.py")


def test_the_manifest_changed(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def retitle(contents: BundleContents) -> BundleContents:
        manifest = contents.manifest.replace(b'"Pomodoro"', b'"Pomodoro!"')
        return BundleContents(manifest, contents.signature, contents.files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", retitle))
    assert (error.code, error.detail) == (
        Code.BUNDLE_HASH_MISMATCH,
        "manifest.json: SHA-256 differs",
    )


def test_unsigned(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def strip(contents: BundleContents) -> BundleContents:
        return BundleContents(contents.manifest, None, contents.files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", strip))
    assert error.code is Code.BUNDLE_UNSIGNED


def test_signed_by_an_untrusted_key(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def resign(contents: BundleContents) -> BundleContents:
        data = signed_data(contents, app_scope="pomodoro", version="0.1.0")
        return BundleContents(
            contents.manifest, signature_record(data, signed.other_key), contents.files
        )

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", resign))
    assert error.code is Code.BUNDLE_UNTRUSTED_KEY


def test_signature_bytes_altered(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def alter(contents: BundleContents) -> BundleContents:
        assert contents.signature is not None
        record = json.loads(contents.signature)
        first = record["signature"][0]
        record["signature"] = ("1" if first == "0" else "0") + record["signature"][1:]
        return BundleContents(contents.manifest, json.dumps(record).encode(), contents.files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", alter))
    assert error.code is Code.BUNDLE_BAD_SIGNATURE


def test_signed_data_altered(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    # A claim changed after signing (here: a file's size) breaks the signature itself.
    def alter(contents: BundleContents) -> BundleContents:
        assert contents.signature is not None
        record = json.loads(contents.signature)
        record["signed"]["files"][0]["size"] += 1
        return BundleContents(contents.manifest, json.dumps(record).encode(), contents.files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", alter))
    assert error.code is Code.BUNDLE_BAD_SIGNATURE


@pytest.mark.parametrize(
    ("limits", "named"),
    [
        (BundleLimits(max_bundle_bytes=1024), "the bundle file"),
        (BundleLimits(max_file_bytes=2048), APP_FILE),
        (BundleLimits(max_total_bytes=4096), "uncompressed"),
        (BundleLimits(max_files=3), "entries"),
    ],
    ids=["bundle", "file", "total", "count"],
)
def test_oversized(cache: BundleCache, signed: Signed, limits: BundleLimits, named: str) -> None:
    error = _refused(cache, signed, signed.path, limits=limits)
    assert error.code is Code.BUNDLE_TOO_LARGE
    assert named in error.detail


def _raw_bundle(signed: Signed, out: Path, name: str, *, mode: int = 0o644) -> Path:
    """The signed bundle plus one entry written as an attacker would, bypassing our writer."""
    out.write_bytes(signed.data())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names
        with zipfile.ZipFile(out, "a") as archive:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, b"/etc/passwd" if stat.S_ISLNK(mode) else b"x")
    return out


BAD_ENTRIES = {  # id: (name, mode, what the detail says)
    "traversal": ("app/../../evil.py", 0o100644, "'..'"),
    "leading-dotdot": ("../evil.py", 0o100644, "'..'"),
    "absolute": ("/etc/cron.d/evil", 0o100644, "absolute"),
    "backslash": ("app\\..\\evil.py", 0o100644, "absolute or not a POSIX path"),
    "outside-app": ("evil.py", 0o100644, "outside 'app/'"),
    "symlink": ("app/link", stat.S_IFLNK | 0o777, "a symlink"),
    "fifo": ("app/fifo", stat.S_IFIFO | 0o644, "not a regular file"),
    "duplicate": (APP_FILE, 0o100644, "listed twice"),
    "file-as-dir": ("app/_app.py/inner", 0o100644, "a parent is a file"),
    "directory": ("app/dir/", 0o40755, "empty"),
}


@pytest.mark.parametrize("case", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
def test_bad_paths(
    cache: BundleCache, signed: Signed, tmp_path: Path, case: tuple[str, int, str]
) -> None:
    name, mode, problem = case
    error = _refused(cache, signed, _raw_bundle(signed, tmp_path / "b", name, mode=mode))
    assert error.code is Code.BUNDLE_BAD_PATH
    assert problem in error.detail


# Names that display as other names: each holds one character of Unicode category Cc, Cf,
# Zl or Zp. "app/\u202eyp.exe" shows as "app/exe.py" in a right-to-left-aware listing.
INVISIBLE_NAMES = {
    "rlo": ("app/\u202eyp.txt", "U+202E"),
    "lre": ("app/a\u202ab.py", "U+202A"),
    "lri": ("app/a\u2066b.py", "U+2066"),
    "rli": ("app/a\u2067b.py", "U+2067"),
    "fsi": ("app/a\u2068b.py", "U+2068"),
    "pdi": ("app/a\u2069b.py", "U+2069"),
    "lrm": ("app/a\u200eb.py", "U+200E"),
    "rlm": ("app/a\u200fb.py", "U+200F"),
    "alm": ("app/a\u061cb.py", "U+061C"),
    "zwsp": ("app/a\u200bb.py", "U+200B"),
    "bom": ("app/\ufeffa.py", "U+FEFF"),
    "tab": ("app/a\tb.py", "U+0009"),
    "del": ("app/a\x7fb.py", "U+007F"),
    "c1": ("app/a\x85b.py", "U+0085"),
    "line-separator": ("app/a\u2028b.py", "U+2028"),
    "paragraph-separator": ("app/a\u2029b.py", "U+2029"),
}


@pytest.mark.parametrize("case", INVISIBLE_NAMES.values(), ids=INVISIBLE_NAMES.keys())
def test_names_with_control_or_bidi_characters(
    cache: BundleCache, signed: Signed, tmp_path: Path, case: tuple[str, str]
) -> None:
    name, codepoint = case
    error = _refused(cache, signed, _raw_bundle(signed, tmp_path / "b", name))
    assert error.code is Code.BUNDLE_BAD_PATH
    assert f"control or formatting character ({codepoint})" in error.detail
    assert error.detail.isprintable()  # the detail names the character, never shows it


def test_a_publisher_cannot_build_such_a_name(signed: Signed, tmp_path: Path) -> None:
    contents = read_bundle(signed.data())
    files = {**contents.files, "app/\u202egnp.py": b"x"}
    with pytest.raises(BundleError) as caught:
        write_bundle(tmp_path / "b", manifest=contents.manifest, files=files)
    assert caught.value.code is Code.BUNDLE_BAD_PATH
    assert not (tmp_path / "b").exists()


def test_plain_non_ascii_names_are_admitted(signed: Signed, tmp_path: Path) -> None:
    """Letters of any script are names like any other; only invisible characters are not."""
    contents = read_bundle(signed.data())
    files = {**contents.files, "app/données/résumé_日本.txt": b"x"}
    contents = BundleContents(contents.manifest, None, files)
    out = tmp_path / "b"
    write_bundle(
        out, manifest=contents.manifest, files=files, signature=_resigned(signed, contents)
    )
    entry = BundleCache(tmp_path / "bundles").admit(out, signed.trusted)
    assert (entry.dir / "app/données/résumé_日本.txt").read_bytes() == b"x"


def test_invalid_manifest(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def drop_entrypoints(manifest: dict[str, Any]) -> None:
        manifest["entrypoints"] = []

    error = _refused(cache, signed, _with_manifest(signed, tmp_path / "b", drop_entrypoints))
    assert error.code is Code.INVALID_MANIFEST
    assert error.detail.startswith("manifest.json: entrypoints")


def test_a_missing_sdk_feature_is_named(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def require(manifest: dict[str, Any]) -> None:
        manifest["runtime_sdk"]["required_features"].append("app.telepathy.v1")

    error = _refused(cache, signed, _with_manifest(signed, tmp_path / "b", require))
    assert error.code is Code.APP_INCOMPATIBLE
    assert error.detail == "manifest.json: runtime_sdk.required_features: missing app.telepathy.v1"


def test_a_feature_this_runtime_lacks(cache: BundleCache, signed: Signed) -> None:
    offered = frozenset({"app.navigation.v1"})  # a runtime without what pomodoro needs
    error = _refused(cache, signed, signed.path, offered_features=offered)
    assert error.code is Code.APP_INCOMPATIBLE
    assert error.detail.endswith("missing app.lifecycle.v1, app.tools.v1, app.session-data.v1")


def test_a_feature_the_contract_names_but_this_runtime_does_not_serve_yet(
    cache: BundleCache, signed: Signed, tmp_path: Path
) -> None:
    """Installed, such an app would silently get nothing: it is refused instead."""

    def require_surfaces(manifest: dict[str, Any]) -> None:
        sdk = manifest["runtime_sdk"]
        sdk["required_features"] = [
            *sdk["required_features"],
            "surface.state.v1",
        ]

    bundle = _with_manifest(signed, tmp_path / "needs-surfaces.bundle", require_surfaces)
    error = _refused(cache, signed, bundle)
    assert error.code is Code.APP_INCOMPATIBLE
    assert error.detail.endswith("missing surface.state.v1")


def test_version_mismatch(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def claim(contents: BundleContents) -> BundleContents:
        record = _resigned(signed, contents, version="0.2.0")
        return BundleContents(contents.manifest, record, contents.files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", claim))
    assert (error.code, error.detail) == (
        Code.BUNDLE_VERSION_MISMATCH,
        "manifest.json says 0.1.0, the signed data 0.2.0",
    )


def test_scope_mismatch(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def claim(contents: BundleContents) -> BundleContents:
        record = _resigned(signed, contents, app_scope="whiteboard")
        return BundleContents(contents.manifest, record, contents.files)

    error = _refused(cache, signed, _rewritten(signed, tmp_path / "b", claim))
    assert error.code is Code.BUNDLE_SCOPE_MISMATCH


def test_installing_under_another_scope(cache: BundleCache, signed: Signed) -> None:
    error = _refused(cache, signed, signed.path, expected_scope="whiteboard")
    assert (error.code, error.detail) == (
        Code.BUNDLE_SCOPE_MISMATCH,
        "the bundle is 'pomodoro', not 'whiteboard'",
    )


def test_a_bundle_cannot_be_a_core_app(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    def as_chat(manifest: dict[str, Any]) -> None:
        manifest["app_scope"] = "chat"

    bundle = _with_manifest(signed, tmp_path / "b", as_chat, app_scope="chat")
    error = _refused(cache, signed, bundle)
    assert error.code is Code.BUNDLE_SCOPE_MISMATCH
    assert "core app" in error.detail


def test_not_a_zip(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    (tmp_path / "b").write_bytes(b"PK\x03\x04 surely not")
    assert _refused(cache, signed, tmp_path / "b").code is Code.BUNDLE_MALFORMED


def test_signing_again_replaces_the_record(signed: Signed, tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    bundle.write_bytes(signed.data())
    sign_bundle(bundle, signed.other_key)
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, signed.trusted)
    assert caught.value.code is Code.BUNDLE_UNTRUSTED_KEY
    stranger = {key_id(signed.other_key.verify_key): signed.other_key.verify_key}
    assert verify_bundle(bundle, stranger).key_id == key_id(signed.other_key.verify_key)
    assert read_bundle(bundle.read_bytes()).files == read_bundle(signed.data()).files


def test_a_name_with_a_nul_byte(cache: BundleCache, signed: Signed, tmp_path: Path) -> None:
    # zipfile itself cuts such a name at the NUL: "app/x.py\0/../../evil" would read as
    # "app/x.py". Written as an attacker would: the byte patched into both headers.
    bundle = _raw_bundle(signed, tmp_path / "b", "app/x.pyZ/../../evil")
    bundle.write_bytes(bundle.read_bytes().replace(b"app/x.pyZ", b"app/x.py\x00"))
    error = _refused(cache, signed, bundle)
    assert error.code is Code.BUNDLE_BAD_PATH
    assert "NUL" in error.detail


# A tool schema whose check would not be bounded in time: references that lead back to
# themselves, and a keyword that re-walks the value for every subschema.
_UNBOUNDED_SCHEMAS = {
    "a reference cycle": (
        {"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"x": {}}},
        "leads back to itself",
    ),
    "unevaluatedProperties": (
        {"type": "object", "unevaluatedProperties": False},
        "not bounded in time",
    ),
}


@pytest.mark.parametrize("name", sorted(_UNBOUNDED_SCHEMAS))
def test_a_tool_schema_not_checkable_in_bounded_time(
    cache: BundleCache, signed: Signed, tmp_path: Path, name: str
) -> None:
    schema, why = _UNBOUNDED_SCHEMAS[name]

    def costly(manifest: dict[str, Any]) -> None:
        manifest["tools"][0]["output_schema"] = schema

    error = _refused(cache, signed, _with_manifest(signed, tmp_path / "b", costly))
    assert error.code is Code.INVALID_MANIFEST
    assert error.detail.startswith("manifest.json: tools[0].output_schema"), error.detail
    assert why in error.detail


def test_the_build_refuses_a_tool_schema_not_checkable_in_bounded_time(tmp_path: Path) -> None:
    """`lineup app build` says which tool's schema and why, in one line, and writes nothing."""
    source = tmp_path / "pomodoro"
    shutil.copytree(REPO_ROOT / "apps" / "pomodoro", source)
    app = source / "_app.py"
    cycle = '{"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {}}'
    app.write_text(app.read_text().replace("output_schema=_FINISHED,", f"output_schema={cycle},"))
    out = tmp_path / "pomodoro.bundle"
    code, _, stderr = lineup("app", "build", source, "--out", out)
    assert code != 0
    assert not out.exists()
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert "invalid_tool_descriptor" in stderr and "leads back to itself" in stderr, stderr
    # Where: the app's own line that declared the tool, and the reference in its schema.
    assert f"{app}:" in stderr and "output_schema.$defs.a.$ref" in stderr, stderr
