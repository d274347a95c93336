"""A file the user chooses for an app (`file.open`): what the app may ask for, and what the
runtime makes of the file from its bytes.

The app asks with `accept` (what it takes: media types `type/subtype` or `type/*`, and
extensions `.png`, at most `MAX_ACCEPT`; none: any file) and `max_bytes` (at most
`FILE_OPEN_MAX_BYTES`, which is also the default). The chooser (the web page's file input,
the terminal chat's `/attach PATH`) hands the runtime a name, the bytes, and the type the
browser or the name declares; the runtime decides the type from the bytes (`chosen_type`):

- bytes with a well-known signature (PNG, JPEG, GIF, WebP, PDF, ZIP, gzip, WAV, Ogg, FLAC,
  MP3) are that type, and a declared type that names another is refused;
- a declared type with such a signature (`image/png`) that the bytes lack is refused, and
  so is a text type declared of bytes that are no UTF-8 text;
- text is the declared text type, or by its name's extension, else `text/plain`;
- other bytes keep a declared type the runtime cannot check (a spreadsheet, say), else
  `application/octet-stream`.

Then the type or the name's extension must be one `accept` lists. Every refusal is a
`ContractError` whose detail is one sentence for the person who chose the file: what is
wrong with it and what to do.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass
from typing import Any, Final

from ._codes import Code, ContractError

# An artifact's own default bound (`ArtifactLimits.max_bytes`): a chosen file becomes one.
FILE_OPEN_MAX_BYTES: Final = 192 * 1024
MAX_ACCEPT: Final = 16
OCTET_STREAM: Final = "application/octet-stream"
_MEDIA_TYPE: Final = re.compile(
    r"^(\*/\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/(\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,126}))$"
)
_EXTENSION: Final = re.compile(r"^\.[a-z0-9][a-z0-9_+-]{0,15}$")
# The well-known types the runtime tells from a file's first bytes.
_SIGNATURES: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"PK\x05\x06", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"ID3", "audio/mpeg"),
)
_RIFF: Final = {b"WEBP": "image/webp", b"WAVE": "audio/wav"}
SIGNED_TYPES: Final = frozenset({t for _, t in _SIGNATURES} | set(_RIFF.values()))
# Other names browsers and systems give the same types.
_ALIASES: Final = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
    "audio/x-flac": "audio/flac",
    "application/x-zip-compressed": "application/zip",
    "application/x-zip": "application/zip",
    "application/x-gzip": "application/gzip",
    "application/x-pdf": "application/pdf",
}
_TEXT_APPLICATIONS: Final = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/sql",
        "application/x-sh",
        "image/svg+xml",
    }
)
# How a person reads the types an app most often asks for: one, and many.
_WORDS: Final = {
    "*/*": ("any file", "any file"),
    "image/*": ("a picture", "pictures"),
    "image/png": ("a PNG picture", "PNG pictures"),
    "image/jpeg": ("a JPEG picture", "JPEG pictures"),
    "image/gif": ("a GIF picture", "GIF pictures"),
    "image/webp": ("a WebP picture", "WebP pictures"),
    "image/svg+xml": ("an SVG drawing", "SVG drawings"),
    "text/*": ("text", "text files"),
    "text/plain": ("plain text", "plain text"),
    "text/csv": ("a CSV table", "CSV tables"),
    "text/markdown": ("Markdown text", "Markdown text"),
    "application/pdf": ("a PDF document", "PDF documents"),
    "application/json": ("a JSON file", "JSON files"),
    "application/zip": ("a ZIP archive", "ZIP archives"),
    "audio/*": ("a sound file", "sound files"),
    "video/*": ("a video", "videos"),
}
# The built-in table only: the same answer on every machine, whatever /etc/mime.types says.
_BY_NAME: Final = mimetypes.MimeTypes(filenames=())
for _extension_, _type_ in (
    (".md", "text/markdown"),
    (".markdown", "text/markdown"),
    (".yaml", "application/yaml"),
    (".yml", "application/yaml"),
    (".toml", "application/toml"),
    (".webp", "image/webp"),
):  # what the table of older Pythons lacks
    _BY_NAME.add_type(_type_, _extension_)


@dataclass(frozen=True)
class FileWanted:
    """What an app takes: `accept` (empty: any file) and at most `max_bytes`."""

    accept: tuple[str, ...]
    max_bytes: int

    def as_card(self) -> dict[str, Any]:
        """What the consent card carries for the chooser."""
        return {"accept": list(self.accept), "max_bytes": self.max_bytes}


def _invalid(detail: str) -> ContractError:
    return ContractError(Code.INVALID_PAYLOAD, detail)


def file_wanted(raw: Any) -> FileWanted:
    """A `file.open` request's input, `{accept?, max_bytes?}`, checked: `invalid_payload`
    naming the first field that is wrong (a `max_bytes` over the runtime's cap included)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _invalid("input: an object is needed")
    extra = sorted(set(raw) - {"accept", "max_bytes"})
    if extra:
        raise _invalid(f"input.{str(extra[0])[:40]}: not a field of this capability")
    accept = raw.get("accept", [])
    if not isinstance(accept, list) or len(accept) > MAX_ACCEPT:
        raise _invalid(f"input.accept: a list of at most {MAX_ACCEPT} types or extensions")
    kept: list[str] = []
    for entry in accept:
        if not isinstance(entry, str) or not (
            _MEDIA_TYPE.match(entry.lower()) or _EXTENSION.match(entry.lower())
        ):
            shown = repr(entry)[:40]
            raise _invalid(f"input.accept: {shown} is no media type (image/png) or extension")
        if entry.lower() not in kept:
            kept.append(entry.lower())
    max_bytes = raw.get("max_bytes", FILE_OPEN_MAX_BYTES)
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
        raise _invalid("input.max_bytes: a positive whole number of bytes")
    if max_bytes > FILE_OPEN_MAX_BYTES:
        raise _invalid(f"input.max_bytes: at most {FILE_OPEN_MAX_BYTES} bytes on this runtime")
    return FileWanted(tuple(kept), max_bytes)


def sniff_media_type(data: bytes) -> str | None:
    """The well-known type the first bytes say, or None."""
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF":
        return _RIFF.get(data[8:12])
    return None


def _normal(media_type: str) -> str:
    plain = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(plain, plain)


def _textual(media_type: str) -> bool:
    subtype = media_type.partition("/")[2]
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_APPLICATIONS
        or subtype.endswith(("+json", "+xml"))
    )


def _is_text(data: bytes) -> bool:
    """UTF-8 without NUL and with few other control characters: what a text file is."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    controls = sum(1 for ch in text if ch < " " and ch not in "\t\n\r\f")
    return "\x00" not in text and controls * 100 <= len(text)


def _extension(name: str) -> str:
    stem, dot, extension = name.rpartition(".")
    return f".{extension.lower()}" if dot and stem else ""


def type_words(media_type: str, *, many: bool = False) -> str:
    """A media type or extension as a person reads it: `a PNG picture` (`PNG pictures`
    with `many`), `a .csv file`."""
    if media_type in _WORDS:
        return _WORDS[media_type][many]
    if media_type.startswith("."):
        kind = media_type
    else:
        kind = media_type.partition("/")[2].removeprefix("x-").split("+")[0].upper()
    return f"{kind} files" if many else f"a {kind} file"


def accept_words(accept: tuple[str, ...] | list[str]) -> str:
    """What an app takes, in words: `PNG pictures, JPEG pictures or plain text`."""
    words = list(dict.fromkeys(type_words(entry, many=True) for entry in accept)) or ["any file"]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def size_words(size: int) -> str:
    """A size as a person reads it: `512 bytes`, `100 KB`, `1.5 MB`."""
    if size < 1024:
        return f"{size} byte{'' if size == 1 else 's'}"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _refused(detail: str) -> ContractError:
    return ContractError(Code.UNSUPPORTED_MEDIA_TYPE, detail)


def check_size(wanted: FileWanted, name: str, size: int) -> None:
    """`too_large`, with the sentence for the person, for a file over what `wanted` takes."""
    if size > wanted.max_bytes:
        raise ContractError(
            Code.TOO_LARGE,
            f"“{name}” is {size_words(size)}; this app takes files up to"
            f" {size_words(wanted.max_bytes)}: choose a smaller one.",
        )


def chosen_type(wanted: FileWanted, name: str, declared: str, data: bytes) -> str:
    """The media type of the file `name` with `data`, of the type `declared` (by the
    browser; empty or `application/octet-stream` when it said nothing, then the name's
    extension declares it), decided from its bytes; `too_large` or `unsupported_media_type`
    with the sentence for the person when it is not a file `wanted` takes."""
    shown = f"“{name}”"
    check_size(wanted, name, len(data))
    said = _normal(declared)
    if said in ("", OCTET_STREAM):
        said = _normal(_BY_NAME.guess_type(name, strict=False)[0] or "")
    sniffed = sniff_media_type(data)
    if sniffed is not None:
        contradicts = said not in ("", OCTET_STREAM, sniffed) and (
            said in SIGNED_TYPES or _textual(said) or sniffed != "application/zip"
        )
        if contradicts:
            raise _refused(
                f"{shown} says it is {type_words(said)} but its bytes are"
                f" {type_words(sniffed)}: choose another file."
            )
        # A ZIP that says it is a document made of one (.docx, .epub) keeps that type.
        media_type = (
            said if sniffed == "application/zip" and said not in ("", OCTET_STREAM) else sniffed
        )
    elif said in SIGNED_TYPES:
        raise _refused(f"{shown} is not {type_words(said)}, as its name says: choose another file.")
    elif _is_text(data):
        media_type = said if said and _textual(said) else "text/plain"
    elif said and _textual(said):
        raise _refused(f"{shown} is not text, as its name says: choose another file.")
    else:
        media_type = said or OCTET_STREAM
    if not _accepts(wanted.accept, media_type, name):
        raise _refused(
            f"{shown} is {type_words(media_type)}; this app takes"
            f" {accept_words(wanted.accept)}: choose another file."
        )
    return media_type


def _accepts(accept: tuple[str, ...], media_type: str, name: str) -> bool:
    if not accept:
        return True
    major = media_type.partition("/")[0]
    extension = _extension(name)
    return any(
        entry in ("*/*", media_type, f"{major}/*") or (entry.startswith(".") and entry == extension)
        for entry in accept
    )
