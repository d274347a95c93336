"""The transport actor: the AppServer link (issue 4).

For now it runs under the supervisor and answers the kernel's statistics requests; its
handlers arrive with the issue named above.
"""

from actors.kernel import Actor


class TransportActor(Actor):
    pass


__all__ = ["TransportActor"]
