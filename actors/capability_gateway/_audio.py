"""What a recording is, told from its bytes: its container, its media type and how long it
lasts, so that the runtime never takes a page's or a recorder's word for either.

Three containers are known, each as a browser's `MediaRecorder` or a sound server's
recorder writes it:

- **WebM** (`audio/webm`): EBML with DocType `webm`, its segment and clusters possibly of
  unknown size (a recorder writes them as it goes). Every block's time is its cluster's
  timecode plus its own offset, in the segment's timecode scale; the recording lasts until
  the end of its last block (an Opus packet's length comes from its first byte, RFC 6716
  §3.1). A track that is not audio (a camera's) is refused: a recording is sound only.
- **Ogg** (`audio/ogg`): pages with `OggS`; Opus (its pre-skip taken off, at 48 kHz) or
  Vorbis (at its own rate), the last page's granule position saying where it ends.
- **WAV** (`audio/wav`): RIFF/WAVE with PCM samples; frames over the sample rate.

Anything else, or a file that breaks off where its structure says more follows, is no
recording: `AudioError`, with one sentence saying what is wrong.
Parsing reads each byte at most once and allocates nothing per block beyond the packets a
caller asks for, so a 200 KiB recording is told in a few milliseconds.
"""

from __future__ import annotations

import io
import struct
import wave
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

WEBM: Final = "audio/webm"
OGG: Final = "audio/ogg"
WAV: Final = "audio/wav"
# What a declared type may be called for each container (a browser says `audio/webm;
# codecs=opus`, a recorder `audio/x-wav`): the part before `;`, lower case.
ALIASES: Final = {
    WEBM: frozenset({"audio/webm", "video/webm"}),
    OGG: frozenset({"audio/ogg", "application/ogg", "audio/opus"}),
    WAV: frozenset({"audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"}),
}

_EBML: Final = 0x1A45DFA3
_SEGMENT: Final = 0x18538067
_CLUSTER: Final = 0x1F43B675
# The master elements walked into on the way to the blocks; any other element is skipped.
_ENTERED: Final = frozenset(
    {
        _SEGMENT,
        _CLUSTER,
        0x1549A966,  # Info
        0x1654AE6B,  # Tracks
        0xAE,  # TrackEntry
        0xA0,  # BlockGroup
    }
)
_TIMECODE_SCALE: Final = 0x2AD7B1
_CLUSTER_TIMECODE: Final = 0xE7
_SIMPLE_BLOCK: Final = 0xA3
_BLOCK: Final = 0xA1
_TRACK_TYPE: Final = 0x83
_CODEC_ID: Final = 0x86
_DOC_TYPE: Final = 0x4282
_AUDIO_TRACK: Final = 2
_UNKNOWN: Final = -1
_OPUS_RATE: Final = 48_000


class AudioError(ValueError):
    """The bytes are not a recording the runtime takes; the message says why, for a person."""


@dataclass(frozen=True)
class Recording:
    """A recording's container as a media type, its duration, and its codec's name."""

    media_type: str
    duration_ms: int
    codec: str
    # The Opus packets of a WebM or Ogg recording (the Ogg headers left out), in order, for
    # a decoder: filled only when asked for (`packets=True`).
    packets: tuple[bytes, ...] = field(default=(), repr=False)


def base_type(declared: str) -> str:
    return declared.split(";", 1)[0].strip().lower()


def sniff(data: bytes) -> str | None:
    """The container's media type from the first bytes, or None."""
    if data[:4] == b"\x1a\x45\xdf\xa3":
        return WEBM
    if data[:4] == b"OggS":
        return OGG
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return WAV
    return None


def read_recording(data: bytes, *, packets: bool = False) -> Recording:
    """What `data` is as a recording; `AudioError` for anything the runtime does not take."""
    kind = sniff(data)
    if kind == WEBM:
        return _webm(data, packets=packets)
    if kind == OGG:
        return _ogg(data, packets=packets)
    if kind == WAV:
        return _wav(data)
    raise AudioError("the recording is not WebM, Ogg or WAV audio")


def opus_packet_ms(packet: bytes) -> float:
    """How long an Opus packet plays, from its TOC byte (RFC 6716 §3.1)."""
    if not packet:
        return 0.0
    toc = packet[0]
    config = toc >> 3
    if config < 12:  # SILK: 10, 20, 40, 60 ms
        frame = (10.0, 20.0, 40.0, 60.0)[config % 4]
    elif config < 16:  # hybrid: 10, 20 ms
        frame = (10.0, 20.0)[config % 2]
    else:  # CELT: 2.5, 5, 10, 20 ms
        frame = (2.5, 5.0, 10.0, 20.0)[config % 4]
    code = toc & 3
    if code == 0:
        count = 1
    elif code in (1, 2):
        count = 2
    else:
        count = packet[1] & 0x3F if len(packet) > 1 else 0
    return frame * count


# -- WebM ------------------------------------------------------------------------------------


def _vint(data: bytes, at: int, *, keep_marker: bool) -> tuple[int, int]:
    """An EBML variable-length integer at `at`: (value, where it ends). An element's size
    with every value bit set is "unknown" (`_UNKNOWN`)."""
    if at >= len(data):
        raise AudioError("the WebM recording breaks off")
    first = data[at]
    length = 1
    mask = 0x80
    while length <= 8 and not first & mask:
        length += 1
        mask >>= 1
    if length > 8 or at + length > len(data):
        raise AudioError("the WebM recording has a broken element header")
    value = first if keep_marker else first & (mask - 1)
    for byte in data[at + 1 : at + length]:
        value = (value << 8) | byte
    if not keep_marker and value == (1 << (7 * length)) - 1:
        return _UNKNOWN, at + length
    return value, at + length


def _uint(payload: bytes) -> int:
    return int.from_bytes(payload, "big") if payload else 0


def _webm(data: bytes, *, packets: bool) -> Recording:
    scale_ns = 1_000_000
    doc_type = ""
    cluster_ms = 0
    end_ms = 0.0
    codecs: set[str] = set()
    kept: list[bytes] = []
    track_type = None
    at = 0
    while at < len(data):
        element, at = _vint(data, at, keep_marker=True)
        size, at = _vint(data, at, keep_marker=False)
        if element in _ENTERED:
            continue  # its children follow: read them as they come
        if size == _UNKNOWN:
            raise AudioError("the WebM recording has an element of unknown size")
        if at + size > len(data):
            raise AudioError("the WebM recording breaks off in an element")
        payload = data[at : at + size]
        at += size
        if element == _EBML:
            doc_type = _doc_type(payload)
        elif element == _TIMECODE_SCALE:
            scale_ns = _uint(payload) or scale_ns
        elif element == _TRACK_TYPE:
            track_type = _uint(payload)
            if track_type != _AUDIO_TRACK:
                raise AudioError("the recording holds more than sound (a track that is not audio)")
        elif element == _CODEC_ID:
            codecs.add(payload.decode("ascii", "replace"))
        elif element == _CLUSTER_TIMECODE:
            cluster_ms = _uint(payload) * scale_ns // 1_000_000
        elif element in (_SIMPLE_BLOCK, _BLOCK):
            frame = _block_frame(payload)
            offset = struct.unpack_from(">h", payload, _vint(payload, 0, keep_marker=False)[1])[0]
            start = cluster_ms + offset * scale_ns / 1_000_000
            end_ms = max(end_ms, start + opus_packet_ms(frame))
            if packets:
                kept.append(frame)
    if doc_type != "webm":
        raise AudioError("the recording is EBML but not WebM")
    if track_type is None:
        raise AudioError("the WebM recording has no track")
    codec = ",".join(sorted(codecs)) or "unknown"
    return Recording(WEBM, round(end_ms), codec, tuple(kept))


def _doc_type(header: bytes) -> str:
    at = 0
    while at < len(header):
        element, at = _vint(header, at, keep_marker=True)
        size, at = _vint(header, at, keep_marker=False)
        if size == _UNKNOWN or at + size > len(header):
            raise AudioError("the WebM recording's header is broken")
        if element == _DOC_TYPE:
            return header[at : at + size].decode("ascii", "replace")
        at += size
    return ""


def _block_frame(payload: bytes) -> bytes:
    """The one frame of a block without lacing (what recorders write); a laced block is
    refused rather than misread."""
    _, at = _vint(payload, 0, keep_marker=False)
    if at + 3 > len(payload):
        raise AudioError("the WebM recording has a block too short to hold a frame")
    flags = payload[at + 2]
    if flags & 0x06:
        raise AudioError("the WebM recording uses laced blocks, which are not taken")
    return payload[at + 3 :]


# -- Ogg --------------------------------------------------------------------------------------


def _ogg_pages(data: bytes) -> Iterator[tuple[int, bytes, bytes]]:
    """Each page's granule position, segment table and body."""
    at = 0
    while at < len(data):
        if data[at : at + 4] != b"OggS" or at + 27 > len(data):
            raise AudioError("the Ogg recording breaks off or is broken between pages")
        granule = struct.unpack_from("<q", data, at + 6)[0]
        segments = data[at + 26]
        table_end = at + 27 + segments
        if table_end > len(data):
            raise AudioError("the Ogg recording breaks off in a page header")
        length = sum(data[at + 27 : table_end])
        if table_end + length > len(data):
            raise AudioError("the Ogg recording breaks off in a page")
        yield granule, data[at + 27 : table_end], data[table_end : table_end + length]
        at = table_end + length


def _ogg(data: bytes, *, packets: bool) -> Recording:
    first_body = b""
    last_granule = 0
    bodies: list[bytes] = []
    partial = b""  # a packet that goes on in the next page
    for n, (granule, table, body) in enumerate(_ogg_pages(data)):
        if n == 0:
            first_body = body
        if packets:
            # A packet ends at the first lacing value under 255 (RFC 3533 §6).
            at = 0
            for lacing in table:
                partial += body[at : at + lacing]
                at += lacing
                if lacing < 255:
                    bodies.append(partial)
                    partial = b""
        if granule >= 0:
            last_granule = granule
    bodies = bodies[2:]  # after the identification and comment headers
    if first_body.startswith(b"OpusHead") and len(first_body) >= 12:
        pre_skip = struct.unpack_from("<H", first_body, 10)[0]
        samples = max(0, last_granule - pre_skip)
        return Recording(OGG, round(samples * 1000 / _OPUS_RATE), "opus", tuple(bodies))
    if first_body.startswith(b"\x01vorbis") and len(first_body) >= 16:
        rate = struct.unpack_from("<I", first_body, 12)[0]
        if not rate:
            raise AudioError("the Ogg Vorbis recording names no sample rate")
        return Recording(OGG, round(last_granule * 1000 / rate), "vorbis")
    raise AudioError("the Ogg recording is neither Opus nor Vorbis")


# -- WAV --------------------------------------------------------------------------------------


def _wav(data: bytes) -> Recording:
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            rate, frames = reader.getframerate(), reader.getnframes()
            width, channels = reader.getsampwidth(), reader.getnchannels()
            samples = reader.readframes(frames)
    except (wave.Error, EOFError, ValueError) as exc:
        raise AudioError(f"the WAV recording is not PCM WAV ({exc})") from None
    if not rate or not width or not channels:
        raise AudioError("the WAV recording names no sample rate, width or channel")
    if len(samples) < frames * width * channels:
        raise AudioError("the WAV recording breaks off before its samples end")
    return Recording(WAV, round(frames * 1000 / rate), "pcm")
