"""The router actor: the filter chain of seed 5.3 and delivery to app inboxes (issue 4).

For now it runs under the supervisor and answers the kernel's statistics requests; its
handlers arrive with the issue named above.
"""

from actors.kernel import Actor


class RouterActor(Actor):
    pass


__all__ = ["RouterActor"]
