"""The kernel's frame codec: a 4-byte big-endian length, then one msgpack map.

Every byte that crosses a supervised channel is a frame. The decoder is incremental and
strict: a length over the limit, bytes that are not msgpack, or a value that is not a map
with a string `type` is a `FrameError`, and the channel that carried it is closed.

A frame is at most `RuntimeConfig.max_frame` (1 MiB). The frames a supervised channel
carries:

- `message` (child → supervisor): `v`=1, `id`, `to`, `type`, `body` (msgpack bytes),
  `call`?, `corr`?: a durable message. The supervisor sets `from` to the channel's actor
  (no spoofing) and checks it at the door (`_door`) before it is stored;
- a delivery (supervisor → child): the message with `from`, `seq` and `attempt`, handed out
  from the mailbox;
- `kernel.hello` (child → supervisor) `pid`: the first frame of an incarnation; from here
  replies reach it, so a `call` in `on_start` is answered;
- `kernel.welcome` (supervisor → child) `name`, `config`, `boot`, `synchronous`: the child
  spec's name and config; `boot` names this run of the runtime (the same across the
  actor's restarts); `synchronous` the mailbox's durability setting, which an actor with a
  database of its own keeps too;
- `kernel.ready` (child → supervisor): `on_start` finished, deliveries may begin (a second
  one is a violation);
- `kernel.ack` (child → supervisor) `seqs`: these deliveries are handled and their effects
  durable;
- `kernel.hold` (child → supervisor) `seqs`: these deliveries' handlers returned
  `ACK_LATER`: their effect is under way outside the actor; they stay in flight until
  acked, and a crash is not blamed on them;
- `kernel.fail` (child → supervisor) `seq`, `error`: the handler raised; the actor waits
  for `kernel.reset`;
- `kernel.reset` (supervisor → child): everything in flight is handed back and redelivered
  next;
- `kernel.reply` (both ways) `corr` (the request's id), `body` or `error` {`code`,
  `detail`}: the answer to a `call`;
- `kernel.stats_request` / `kernel.stats` (supervisor ↔ child) `nonce`, `stats`: an
  actor's `statistics()` record;
- `kernel.ping` / `kernel.pong` (supervisor ↔ child) `n`: the heartbeat, answered by the
  actor's reader task in its own trio loop, even while a handler awaits (`_supervisor`);
- `kernel.actor_failed` (supervisor → children, durable) `name`, `reason`: a sibling
  exceeded its restart intensity;
- `kernel.supervise` (child → supervisor) `corr`, `op` start (`spec`) / stop (`name`): start
  or stop an `app.*` dynamic child, answered by a `kernel.reply` (`_delegation`).
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack

DEFAULT_MAX_FRAME = 1 << 20  # 1 MiB; envelopes are capped far below this by the contracts
_HEADER = struct.Struct(">I")

Frame = dict[str, Any]


class FrameError(Exception):
    """A peer sent bytes that are not a valid frame; the reason says which rule it broke."""


_packer = msgpack.Packer(use_bin_type=True)


def encode(frame: Frame) -> bytes:
    body: bytes = _packer.pack(frame)
    return _HEADER.pack(len(body)) + body


def pack_body(value: Any) -> bytes:
    """Message bodies cross the supervisor as opaque msgpack bytes: it routes by the
    frame's few header fields and never decodes (or re-encodes) what the actors say."""
    body: bytes = _packer.pack(value)
    return body


def unpack_body(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


_HEADER_AND_HEAD = struct.Struct(">IB")
_SEQ_KEY_UINT64 = _packer.pack("seq") + b"\xcf"  # then 8 bytes: one size for every seq
_ATTEMPT_FIELDS = [_packer.pack("attempt") + bytes((n,)) for n in range(128)]  # fixints
_from_fields: dict[str, bytes] = {}  # sender -> its packed `from` key and value, and "seq"


def delivery(packed: bytes, sender: str, seq: int, attempt: int) -> bytes:
    """A whole delivery frame (length prefix included): the message map `packed` as its
    sender packed it, plus `from`, `seq` and `attempt`.

    The supervisor stores what an actor sent as it arrived and appends the fields it
    knows at delivery: decoding and re-encoding every message cost as much as everything
    else it does with one. A child's frame cannot carry these keys (`classify` refuses
    them), and a decoder keeps the last of repeated keys, so the appended values are the
    ones every reader sees. Kernel messages have a handful of keys, so the map is a fixmap
    (at most 15 keys), whose first byte says how many; anything else is decoded and
    encoded again.
    """
    head = packed[0]
    if 0x80 <= head <= 0x8C and 0 <= attempt < 128:
        fields = _from_fields.get(sender)
        if fields is None:
            fields = _packer.pack("from") + _packer.pack(sender) + _SEQ_KEY_UINT64
            _from_fields[sender] = fields
        attempt_fields = _ATTEMPT_FIELDS[attempt]
        size = len(packed) + len(fields) + 8 + len(attempt_fields)
        return b"".join(
            (
                _HEADER_AND_HEAD.pack(size, head + 3),
                packed[1:],  # a copy of a few hundred bytes costs less than a memoryview
                fields,
                seq.to_bytes(8, "big"),
                attempt_fields,
            )
        )
    message = msgpack.unpackb(packed, raw=False)
    return encode({**message, "from": sender, "seq": seq, "attempt": attempt})


def decode_body(body: bytes) -> Frame:
    try:
        frame = msgpack.unpackb(body, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types for garbage
        raise FrameError(f"undecodable msgpack body: {exc.__class__.__name__}") from None
    if not isinstance(frame, dict):
        raise FrameError(f"frame is a {type(frame).__name__}, not a map")
    if not isinstance(frame.get("type"), str):
        raise FrameError("frame has no string `type`")
    return frame


class FrameDecoder:
    """Feeds on received bytes, yields whole frames; keeps at most one partial frame."""

    def __init__(self, *, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        if max_frame <= 0:
            raise ValueError("`max_frame` must be positive")
        self._max_frame = max_frame
        self._partial = bytearray()  # the start of a frame whose end has not arrived
        self._needed = 4  # how long `_partial` must grow before it holds a whole frame

    def feed(self, data: bytes) -> list[Frame]:
        return [decode_body(body) for body in self._bodies(data)]

    def feed_packed(self, data: bytes) -> list[tuple[Frame, bytes]]:
        """Like `feed`, each frame with the msgpack bytes it was decoded from."""
        return [(decode_body(body), body) for body in self._bodies(data)]

    def _bodies(self, data: bytes) -> list[bytes]:
        """The bodies of the whole frames buffered with `data`; keeps the partial one."""
        if self._partial:
            # Appending keeps a frame that arrives in many small pieces linear to collect;
            # frames are cut from `bytes` once it is whole (one copy each, not two).
            self._partial += data
            if len(self._partial) < self._needed:
                return []
            data = bytes(self._partial)
        bodies: list[bytes] = []
        offset, size, limit = 0, len(data), self._max_frame
        unpack_from = _HEADER.unpack_from
        needed = 4
        try:
            while size - offset >= 4:
                (length,) = unpack_from(data, offset)
                if length > limit:
                    raise FrameError(f"frame length {length} exceeds the limit {limit}")
                end = offset + 4 + length
                if end > size:
                    needed = 4 + length
                    break
                bodies.append(data[offset + 4 : end])
                offset = end
        finally:
            self._partial = bytearray(data[offset:])
            self._needed = needed
        return bodies

    @property
    def buffered(self) -> int:
        return len(self._partial)
