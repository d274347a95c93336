"""Signed app bundles: the format, signing keys, and the checks before any use.

A bundle is one deterministic zip: `manifest.json` (generated from the app's declarations),
the app's package under `app/`, and `signature.json`, the signature record. The signer signs
the canonical JSON of *signed data*: the app scope and version, the manifest's SHA-256, and
`{path, size, sha256}` of every file under `app/`. The record carries that data, the key id
and the Ed25519 signature, so a refusal can say *what* differs, not just "bad signature".

`verify_bundle_data` decides on bytes already in memory: the caller reads the file once and
whatever is extracted afterwards is exactly what was checked (no second read to race with).
Cheap structural checks (sizes, paths, entry kinds) come first, before anything is
decompressed; then the signature by a trusted key; then the signed data against the content;
then the manifest and its SDK needs. Every refusal is a `BundleError` with one `Code`.

**Format.** A zip with sorted entries, fixed times (1980-01-01) and modes (0644), deflate
level 9, so one app packs to the same bytes (with the same zlib):

| entry | content |
|---|---|
| `manifest.json` | the manifest generated from the app's declarations (`apps/sdk/_declare.py`) |
| `app/…` | the app's package (no `__pycache__`, `*.pyc`, dotfiles), with its surfaces' files |
| `signature.json` | the signature record (absent until `lineup app sign`) |

**Signed data** (`lineup.bundle.v1`): `{format, app_scope, version, manifest_sha256, files:
[{path, size, sha256}]}` for every `app/` entry, sorted by path. The signature is Ed25519
(PyNaCl) over its canonical JSON (sorted keys, no spaces, UTF-8). The record is `{format:
"lineup.bundle-signature.v1", key_id, signature, signed}`: `key_id` is the first 16 hex
digits of the public key's SHA-256 (it selects a key; the signature proves it), the
signature is 128 lowercase hex digits. Keys are text files: `NAME.key`
(`lineup-ed25519-secret:<hex seed>`, mode 0600) and `NAME.pub`
(`lineup-ed25519-public:<hex>`). The runtime trusts the `*.pub` files in
`DATA_DIR/trusted_keys/`.

**Checks**, in this order, each failure one code with a detail naming the file or feature:

1. the file's size (`BundleLimits.max_bundle_bytes`, 16 MiB), read no further:
   `bundle_too_large`;
2. the zip's central directory parses: `bundle_malformed`;
3. before decompressing: the entry count (1024), each entry's name and kind (below), at
   most 16 MiB an entry, then the total (64 MiB) and no file that is also a parent:
   `bundle_too_large`, `bundle_bad_path`;
4. the entries decompress (CRC, deflate; reading stops at the declared size) and
   `manifest.json` is there: `bundle_malformed`;
5. `signature.json` is there: `bundle_unsigned`;
6. the record parses (strict, closed, lowercase hex): `bundle_malformed`;
7. its key is in the trust store: `bundle_untrusted_key`;
8. the signature verifies: `bundle_bad_signature`;
9. the manifest's SHA-256; no `app/` file outside the list, none of the list missing, each
   size and SHA-256: `bundle_hash_mismatch`, `bundle_unlisted_file`, `bundle_missing_file`;
10. the manifest is valid (`validate_manifest`): `invalid_manifest`;
11. its required SDK features are offered, every missing one named: `app_incompatible`;
12. a surface an entrypoint declares (`app/<surface>`) is one of its files:
    `bundle_missing_file`;
13. the manifest's version is the signed version: `bundle_version_mismatch`;
14. the manifest's scope is the signed scope (and the scope being installed, if given),
    not a core app's: `bundle_scope_mismatch`.

An entry's name is relative POSIX, under `app/` (or one of the two records), without
`..`, `.` or empty segments, backslash, `:`, NUL bytes or characters of Unicode category
Cc, Cf, Zl or Zp (controls, bidi overrides and isolates, direction marks, zero-width
characters: a name must display as itself); the entry is a regular file (no symlink,
device or directory entry), not listed twice.

A flipped byte in zip metadata that determines no content (local-header copies of
central-directory fields, times, permission bits, deflate slack) can leave a bundle
valid: the signature covers the content, and the accepted content is then exactly the
signed one (`tests/apps/test_bundle_fuzz.py`). Such a file has another digest, so another
cache entry.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import stat
import struct
import unicodedata
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import nacl.exceptions
import nacl.signing
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from contracts import (
    CORE_APP_SCOPES,
    MAX_MANIFEST_BYTES,
    RUNTIME_SDK_FEATURES,
    AppManifest,
    Code,
    ContractError,
    replace_file,
    validate_manifest,
)

BUNDLE_FORMAT: Final = "lineup.bundle.v1"
SIGNATURE_FORMAT: Final = "lineup.bundle-signature.v1"
MANIFEST_NAME: Final = "manifest.json"
SIGNATURE_NAME: Final = "signature.json"
APP_PREFIX: Final = "app/"
# Fixed entry metadata: the same app always packs to the same bytes (and cache digest).
_ZIP_TIME: Final = (1980, 1, 1, 0, 0, 0)
_ZIP_MODE: Final = (stat.S_IFREG | 0o644) << 16
_ZIP_UNIX: Final = 3
_MAX_PATH_BYTES: Final = 255
# Unicode categories no entry name may hold: controls (Cc: C0, DEL, C1), formatting
# characters (Cf: the bidi embeddings and overrides U+202A-202E, the isolates U+2066-2069,
# the marks U+200E/F and U+061C, zero-width characters) and the line and paragraph
# separators (Zl, Zp). Each makes a name display (in a listing, a log, a review) as
# another name than the one the file system gets.
_INVISIBLE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp"})
_SECRET_PREFIX: Final = "lineup-ed25519-secret:"
_PUBLIC_PREFIX: Final = "lineup-ed25519-public:"
# What zipfile raises on corrupt input: a bad header, a bad CRC or deflate stream, an
# unsupported method, an "encrypted" flag (RuntimeError), a name that is not UTF-8.
_ZIP_ERRORS: Final = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    NotImplementedError,
    RuntimeError,
    ValueError,
    struct.error,
)

Hex64 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
KeyId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]
# Lowercase only: `bytes.fromhex` also reads "A", and two spellings of one signature
# would let a flipped bit pass unnoticed.
SignatureHex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{128}$")]


class BundleError(ContractError):
    """A bundle was refused: `code` says which check, `detail` names the file or feature."""


@dataclass(frozen=True, kw_only=True)
class BundleLimits:
    """Bounds checked before anything is decompressed. Entry sizes are the declared ones;
    reading an entry stops at its declared size, so a lying deflate stream gains nothing."""

    max_bundle_bytes: int = 16 * 1024 * 1024  # the bundle file itself
    max_total_bytes: int = 64 * 1024 * 1024  # all entries, uncompressed
    max_file_bytes: int = 16 * 1024 * 1024  # one entry, uncompressed
    max_files: int = 1024


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SignedFile(_Strict):
    path: str
    size: Annotated[int, Field(ge=0)]
    sha256: Hex64


class SignedData(_Strict):
    """What the signature covers (canonical JSON of this, exactly)."""

    format: Literal["lineup.bundle.v1"]
    app_scope: str
    version: str
    manifest_sha256: Hex64
    files: list[SignedFile]


class SignatureRecord(_Strict):
    format: Literal["lineup.bundle-signature.v1"]
    key_id: KeyId
    signature: SignatureHex
    signed: SignedData


@dataclass(frozen=True)
class BundleContents:
    """A bundle's entries, read and structurally checked, not yet trusted."""

    manifest: bytes
    signature: bytes | None
    files: dict[str, bytes]  # `app/...` path -> content, sorted by path


@dataclass(frozen=True)
class VerifiedBundle:
    manifest: AppManifest
    version: str
    digest: str  # SHA-256 of the bundle file: its cache key
    key_id: str
    files: tuple[SignedFile, ...]
    # The signer's whole public key (64 hex digits): what an app's signer is pinned to.
    # The key id is its first 64 bits only, a name to select the key by, not an identity.
    public_key: str


def canonical_json(value: Any) -> bytes:
    """The one byte form of signed data: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- keys ---------------------------------------------------------------------------------


def key_id(verify_key: nacl.signing.VerifyKey) -> str:
    """A short name for a public key; it only selects the key, the signature proves it."""
    return sha256_hex(bytes(verify_key))[:16]


def _read_key_text(path: Path, prefix: str) -> bytes:
    text = path.read_text(encoding="ascii", errors="replace").strip()
    body = text.removeprefix(prefix)
    if body == text or re.fullmatch(r"[0-9a-f]{64}", body) is None:
        raise ValueError(f"{path}: not a file starting with {prefix!r} and 64 hex digits")
    return bytes.fromhex(body)


def is_secret_key(data: bytes) -> bool:
    """The bytes are a secret signing key as `write_keypair` writes one."""
    return data.startswith(_SECRET_PREFIX.encode())


def load_signing_key(path: str | Path) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(_read_key_text(Path(path), _SECRET_PREFIX))


def load_public_key(path: str | Path) -> nacl.signing.VerifyKey:
    return nacl.signing.VerifyKey(_read_key_text(Path(path), _PUBLIC_PREFIX))


def write_keypair(directory: str | Path, name: str) -> tuple[Path, Path]:
    """A new key pair as `NAME.key` (0600) and `NAME.pub`; refuses to overwrite either
    (`FileExistsError` naming the first that exists)."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name) is None:
        raise ValueError(f"{name!r} is not a plain file name")
    target = Path(directory)
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    secret, public = target / f"{name}.key", target / f"{name}.pub"
    for path in (secret, public):
        if path.exists():
            raise FileExistsError(errno.EEXIST, "exists", str(path))
    key = nacl.signing.SigningKey.generate()
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        os.fchmod(out.fileno(), 0o600)  # the owner's alone, whatever the umask says
        out.write(f"{_SECRET_PREFIX}{bytes(key).hex()}\n")
    public.write_text(f"{_PUBLIC_PREFIX}{bytes(key.verify_key).hex()}\n", encoding="ascii")
    return secret, public


def trusted_keys_dir(data_dir: str | Path) -> Path:
    """The runtime's trust store: one `*.pub` file per key allowed to sign bundles."""
    return Path(data_dir) / "trusted_keys"


def load_trusted_keys(paths: Iterable[str | Path]) -> dict[str, nacl.signing.VerifyKey]:
    """Key id -> key, from public key files and directories of `*.pub` files."""
    keys: dict[str, nacl.signing.VerifyKey] = {}
    for path in map(Path, paths):
        files = sorted(path.glob("*.pub")) if path.is_dir() else [path]
        for file in files:
            key = load_public_key(file)
            keys[key_id(key)] = key
    return keys


# --- writing and signing ------------------------------------------------------------------


def _invisible_char(name: str) -> str | None:
    return next((c for c in name if unicodedata.category(c) in _INVISIBLE_CATEGORIES), None)


def check_path(name: str) -> None:
    """Raises `bundle_bad_path` unless `name` is a plain relative path the bundle may hold."""
    problem = None
    parts = name.split("/")
    if not name or len(name.encode()) > _MAX_PATH_BYTES:
        problem = "empty or too long"
    elif name.startswith("/") or "\\" in name or ":" in name:
        problem = "absolute or not a POSIX path"
    elif any(part in ("", ".", "..") for part in parts):
        problem = "has an empty, '.' or '..' segment"
    elif (hidden := _invisible_char(name)) is not None:
        problem = f"has a control or formatting character (U+{ord(hidden):04X})"
    elif name not in (MANIFEST_NAME, SIGNATURE_NAME) and not name.startswith(APP_PREFIX):
        problem = f"outside {APP_PREFIX!r}"
    if problem is not None:
        raise BundleError(Code.BUNDLE_BAD_PATH, f"{name!r}: {problem}")


def write_bundle(
    path: str | Path,
    *,
    manifest: bytes,
    files: Mapping[str, bytes],
    signature: bytes | None = None,
) -> None:
    """Writes a deterministic bundle (sorted entries, fixed times and modes), atomically."""
    entries = {**files, MANIFEST_NAME: manifest}
    if signature is not None:
        entries[SIGNATURE_NAME] = signature
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(entries):
            check_path(name)
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.external_attr, info.create_system = _ZIP_MODE, _ZIP_UNIX
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, entries[name], compresslevel=9)
    replace_file(path, buffer.getvalue(), mode=0o644)  # a bundle is no secret


def signed_data(contents: BundleContents, *, app_scope: str, version: str) -> dict[str, Any]:
    """The signed data describing `contents` (as JSON data, ready for `canonical_json`)."""
    files = [
        {"path": name, "size": len(data), "sha256": sha256_hex(data)}
        for name, data in sorted(contents.files.items())
    ]
    return {
        "format": BUNDLE_FORMAT,
        "app_scope": app_scope,
        "version": version,
        "manifest_sha256": sha256_hex(contents.manifest),
        "files": files,
    }


def signature_record(signed: Mapping[str, Any], key: nacl.signing.SigningKey) -> bytes:
    """`signature.json`: `signed` and its Ed25519 signature by `key`."""
    signature = key.sign(canonical_json(signed)).signature
    record = {
        "format": SIGNATURE_FORMAT,
        "key_id": key_id(key.verify_key),
        "signature": signature.hex(),
        "signed": dict(signed),
    }
    return canonical_json(record)


def sign_bundle(
    path: str | Path, key: nacl.signing.SigningKey, *, limits: BundleLimits | None = None
) -> dict[str, Any]:
    """Adds (or replaces) the signature record of the bundle at `path`; returns the signed
    data. The manifest must be valid: a signature vouches for what the bundle says."""
    contents = read_bundle(read_bundle_file(path, limits), limits)
    manifest = _checked_manifest(contents.manifest, RUNTIME_SDK_FEATURES)
    signed = signed_data(contents, app_scope=manifest.app_scope, version=manifest.version)
    write_bundle(
        path,
        manifest=contents.manifest,
        files=contents.files,
        signature=signature_record(signed, key),
    )
    return signed


# --- reading and verifying ----------------------------------------------------------------


def read_bundle_file(path: str | Path, limits: BundleLimits | None = None) -> bytes:
    """The bundle's bytes, refused as `bundle_too_large` without reading past the limit."""
    limit = (limits or BundleLimits()).max_bundle_bytes
    with open(path, "rb") as source:
        data = source.read(limit + 1)
    if len(data) > limit:
        raise BundleError(Code.BUNDLE_TOO_LARGE, f"the bundle file is over {limit} bytes")
    return data


def _check_entries(infos: list[zipfile.ZipInfo], limits: BundleLimits) -> None:
    if len(infos) > limits.max_files:
        raise BundleError(
            Code.BUNDLE_TOO_LARGE, f"{len(infos)} entries (at most {limits.max_files})"
        )
    names: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        if info.orig_filename != name:  # zipfile cuts names at a NUL byte
            raise BundleError(Code.BUNDLE_BAD_PATH, f"{info.orig_filename!r}: has a NUL byte")
        check_path(name)
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind not in (0, stat.S_IFREG):
            what = "a symlink" if kind == stat.S_IFLNK else "not a regular file"
            raise BundleError(Code.BUNDLE_BAD_PATH, f"{name!r}: {what}")
        if name in names:
            raise BundleError(Code.BUNDLE_BAD_PATH, f"{name!r}: listed twice")
        names.add(name)
        if info.file_size > limits.max_file_bytes:
            raise BundleError(
                Code.BUNDLE_TOO_LARGE,
                f"{name}: {info.file_size} bytes (at most {limits.max_file_bytes})",
            )
        total += info.file_size
    if total > limits.max_total_bytes:
        raise BundleError(
            Code.BUNDLE_TOO_LARGE, f"{total} bytes uncompressed (at most {limits.max_total_bytes})"
        )
    for name in names:  # "app/x" and "app/x/y" cannot both be extracted
        parts = name.split("/")
        for end in range(1, len(parts)):
            if "/".join(parts[:end]) in names:
                raise BundleError(Code.BUNDLE_BAD_PATH, f"{name!r}: a parent is a file")


def read_bundle(data: bytes, limits: BundleLimits | None = None) -> BundleContents:
    """The entries of a bundle, after the structural checks; nothing here is trusted yet."""
    limits = limits or BundleLimits()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            _check_entries(infos, limits)
            # `read` stops at the declared size and checks the CRC: the sizes checked
            # above bound the memory a hostile deflate stream can take.
            entries = {info.filename: archive.read(info) for info in infos}
    except _ZIP_ERRORS as exc:
        raise BundleError(Code.BUNDLE_MALFORMED, f"not a readable zip: {exc}") from None
    manifest = entries.pop(MANIFEST_NAME, None)
    if manifest is None:
        raise BundleError(Code.BUNDLE_MALFORMED, f"{MANIFEST_NAME} is missing")
    signature = entries.pop(SIGNATURE_NAME, None)
    return BundleContents(manifest, signature, dict(sorted(entries.items())))


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("a key is repeated")
    return result


def _parse_record(raw: bytes) -> SignatureRecord:
    try:
        return SignatureRecord.model_validate(json.loads(raw, object_pairs_hook=_no_duplicate_keys))
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        detail = f"{where}: {error['msg']}" if where else error["msg"]
    except (ValueError, RecursionError) as exc:  # not UTF-8 JSON; nested too deep
        detail = str(exc)
    raise BundleError(Code.BUNDLE_MALFORMED, f"{SIGNATURE_NAME}: {detail}")


def _check_signature(
    record: SignatureRecord, trusted_keys: Mapping[str, nacl.signing.VerifyKey]
) -> SignedData:
    key = trusted_keys.get(record.key_id)
    if key is None:
        raise BundleError(Code.BUNDLE_UNTRUSTED_KEY, f"key {record.key_id} is not trusted")
    # The signed data is strict and closed, so its canonical form is exactly what the
    # signer signed: nothing outside the model can ride along unsigned.
    message = canonical_json(record.signed.model_dump(mode="json"))
    try:
        key.verify(message, bytes.fromhex(record.signature))
    except nacl.exceptions.BadSignatureError:
        raise BundleError(
            Code.BUNDLE_BAD_SIGNATURE, f"the signature does not match key {record.key_id}"
        ) from None
    return record.signed


def _check_content(signed: SignedData, contents: BundleContents) -> None:
    if sha256_hex(contents.manifest) != signed.manifest_sha256:
        raise BundleError(Code.BUNDLE_HASH_MISMATCH, f"{MANIFEST_NAME}: SHA-256 differs")
    listed = {entry.path: entry for entry in signed.files}
    if len(listed) != len(signed.files):
        raise BundleError(Code.BUNDLE_MALFORMED, f"{SIGNATURE_NAME}: a path is listed twice")
    unlisted = sorted(set(contents.files) - set(listed))
    if unlisted:
        raise BundleError(Code.BUNDLE_UNLISTED_FILE, f"{unlisted[0]}: not in the signed list")
    missing = sorted(set(listed) - set(contents.files))
    if missing:
        raise BundleError(Code.BUNDLE_MISSING_FILE, f"{missing[0]}: signed but absent")
    for name, data in contents.files.items():
        entry = listed[name]
        if len(data) != entry.size or sha256_hex(data) != entry.sha256:
            raise BundleError(Code.BUNDLE_HASH_MISMATCH, f"{name}: differs from the signed list")


def _checked_manifest(raw: bytes, offered_features: frozenset[str]) -> AppManifest:
    try:
        return validate_manifest(raw, offered_features=offered_features)
    except ContractError as exc:  # invalid_manifest, or app_incompatible naming features
        raise BundleError(exc.code, f"{MANIFEST_NAME}: {exc.detail}") from None


def _check_surfaces(manifest: AppManifest, contents: BundleContents) -> None:
    """A surface an entrypoint declares is one of the bundle's signed files: a host serves
    surfaces from the verified cache only, so a missing one would be a promise of nothing."""
    for entry in manifest.entrypoints:
        if entry.surface is not None and APP_PREFIX + entry.surface not in contents.files:
            raise BundleError(
                Code.BUNDLE_MISSING_FILE,
                f"{APP_PREFIX}{entry.surface}: the surface of entrypoint {entry.id!r} is absent",
            )


def verify_bundle_data(
    data: bytes,
    trusted_keys: Mapping[str, nacl.signing.VerifyKey],
    *,
    limits: BundleLimits | None = None,
    offered_features: frozenset[str] = RUNTIME_SDK_FEATURES,
    expected_scope: str | None = None,
) -> tuple[VerifiedBundle, BundleContents]:
    """Every check, on the bundle's bytes; the contents returned are the ones checked."""
    limits = limits or BundleLimits()
    if len(data) > limits.max_bundle_bytes:
        raise BundleError(Code.BUNDLE_TOO_LARGE, f"over {limits.max_bundle_bytes} bytes")
    contents = read_bundle(data, limits)
    verified = verify_contents(
        contents,
        trusted_keys,
        digest=sha256_hex(data),
        offered_features=offered_features,
        expected_scope=expected_scope,
    )
    return verified, contents


def verify_contents(
    contents: BundleContents,
    trusted_keys: Mapping[str, nacl.signing.VerifyKey],
    *,
    digest: str,
    offered_features: frozenset[str] = RUNTIME_SDK_FEATURES,
    expected_scope: str | None = None,
) -> VerifiedBundle:
    """The checks after reading: signature by a trusted key, every file's hash, the
    manifest. Also what a cache entry is checked with again before it runs (trust may
    have changed since it was admitted)."""
    if contents.signature is None:
        raise BundleError(Code.BUNDLE_UNSIGNED, f"{SIGNATURE_NAME} is missing")
    if len(contents.manifest) > MAX_MANIFEST_BYTES:
        raise BundleError(Code.BUNDLE_TOO_LARGE, f"{MANIFEST_NAME}: over {MAX_MANIFEST_BYTES}")
    record = _parse_record(contents.signature)
    signed = _check_signature(record, trusted_keys)
    _check_content(signed, contents)
    manifest = _checked_manifest(contents.manifest, offered_features)
    _check_surfaces(manifest, contents)
    if manifest.version != signed.version:
        raise BundleError(
            Code.BUNDLE_VERSION_MISMATCH,
            f"{MANIFEST_NAME} says {manifest.version}, the signed data {signed.version}",
        )
    if manifest.app_scope != signed.app_scope:
        raise BundleError(
            Code.BUNDLE_SCOPE_MISMATCH,
            f"{MANIFEST_NAME} says {manifest.app_scope!r}, the signed data {signed.app_scope!r}",
        )
    if expected_scope is not None and manifest.app_scope != expected_scope:
        raise BundleError(
            Code.BUNDLE_SCOPE_MISMATCH,
            f"the bundle is {manifest.app_scope!r}, not {expected_scope!r}",
        )
    if manifest.app_scope in CORE_APP_SCOPES:  # core apps ship with the runtime
        raise BundleError(
            Code.BUNDLE_SCOPE_MISMATCH, f"{manifest.app_scope!r} is a core app, not a bundle's"
        )
    return VerifiedBundle(
        manifest=manifest,
        version=signed.version,
        digest=digest,
        key_id=record.key_id,
        files=tuple(signed.files),
        public_key=bytes(trusted_keys[record.key_id]).hex(),
    )


def verify_bundle(
    path: str | Path,
    trusted_keys: Mapping[str, nacl.signing.VerifyKey],
    *,
    limits: BundleLimits | None = None,
    offered_features: frozenset[str] = RUNTIME_SDK_FEATURES,
    expected_scope: str | None = None,
) -> VerifiedBundle:
    """The bundle at `path`, checked (see the module docstring), or `BundleError`."""
    verified, _ = verify_bundle_data(
        read_bundle_file(path, limits),
        trusted_keys,
        limits=limits,
        offered_features=offered_features,
        expected_scope=expected_scope,
    )
    return verified
