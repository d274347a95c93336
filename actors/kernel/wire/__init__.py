"""The wire between the supervisor and its children: length-prefixed msgpack frames
(`_frames`), one socketpair end with one writer task (`_channel`), and what a body an app
packed itself may be (`_body`). Both sides use it; it imports nothing else of the kernel.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Loaded on first use: the command line reads frames without importing trio.
_LAZY = {
    "BodyRefused": "._body",
    "Channel": "._channel",
    "ChannelClosed": "._channel",
    "ChannelStatistics": "._channel",
    "DEFAULT_MAX_FRAME": "._frames",
    "Frame": "._frames",
    "FrameDecoder": "._frames",
    "FrameError": "._frames",
    "INT_MAX": "._body",
    "INT_MIN": "._body",
    "INVALID": "._body",
    "TOO_DEEP": "._body",
    "TOO_LARGE": "._body",
    "decode_body": "._frames",
    "delivery": "._frames",
    "encode": "._frames",
    "pack_body": "._frames",
    "read_app_body": "._body",
    "read_app_value": "._body",
    "unpack_body": "._frames",
}

if TYPE_CHECKING:
    from ._body import (
        INT_MAX,
        INT_MIN,
        INVALID,
        TOO_DEEP,
        TOO_LARGE,
        BodyRefused,
        read_app_body,
        read_app_value,
    )
    from ._channel import (
        Channel,
        ChannelClosed,
        ChannelStatistics,
    )
    from ._frames import (
        DEFAULT_MAX_FRAME,
        Frame,
        FrameDecoder,
        FrameError,
        decode_body,
        delivery,
        encode,
        pack_body,
        unpack_body,
    )

__getattr__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "DEFAULT_MAX_FRAME",
    "INT_MAX",
    "INT_MIN",
    "INVALID",
    "TOO_DEEP",
    "TOO_LARGE",
    "BodyRefused",
    "Channel",
    "ChannelClosed",
    "ChannelStatistics",
    "Frame",
    "FrameDecoder",
    "FrameError",
    "decode_body",
    "delivery",
    "encode",
    "pack_body",
    "read_app_body",
    "read_app_value",
    "unpack_body",
]
