"""The store actor: runtime.db persistence (issue 4).

For now it runs under the supervisor and answers the kernel's statistics requests; its
handlers arrive with the issue named above.
"""

from actors.kernel import Actor


class StoreActor(Actor):
    pass


__all__ = ["StoreActor"]
