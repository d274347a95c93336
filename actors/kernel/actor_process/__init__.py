"""What runs in an actor process: its entry point (`child`: `python -m
actors.kernel.actor_process.child`, or a fork of the zygote handed to it) and the `Actor`
base with its handlers, calls and acks (`_actor`). Loaded on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_LAZY = {
    "ACK_LATER": "._actor",
    "Actor": "._actor",
    "ActorStatistics": "._actor",
    "CallFailed": "._actor",
    "CallTimeout": "._actor",
    "Message": "._actor",
    "REPLY_LATER": "._actor",
    "handles": "._actor",
    "load_actor": ".child",
    "main": ".child",
    "message_from_frame": "._actor",
    "run_actor": ".child",
    "serve": "._actor",
}

if TYPE_CHECKING:
    from ._actor import (
        ACK_LATER,
        REPLY_LATER,
        Actor,
        ActorStatistics,
        CallFailed,
        CallTimeout,
        Message,
        handles,
        message_from_frame,
        serve,
    )
    from .child import (
        load_actor,
        main,
        run_actor,
    )

__getattr__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "ACK_LATER",
    "REPLY_LATER",
    "Actor",
    "ActorStatistics",
    "CallFailed",
    "CallTimeout",
    "Message",
    "handles",
    "load_actor",
    "main",
    "message_from_frame",
    "run_actor",
    "serve",
]
