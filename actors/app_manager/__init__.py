"""The app_manager actor: the app registry, bundles, instances and focus stack (issue 5).

For now it runs under the supervisor and answers the kernel's statistics requests; its
handlers arrive with the issue named above.
"""

from actors.kernel import Actor


class AppManagerActor(Actor):
    pass


__all__ = ["AppManagerActor"]
