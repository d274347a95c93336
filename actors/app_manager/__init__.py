"""The app_manager actor: the app registry, bundles, instances and focus stack (issue 5).

For now it runs under the supervisor and answers the kernel's statistics requests; its
handlers arrive with the issue named above.
"""

from typing import Any

from actors.kernel import Actor, Message, handles


class AppManagerActor(Actor):
    async def on_start(self) -> None:
        self.host_intents: list[dict[str, Any]] = []

    def statistics_extra(self) -> dict[str, Any]:
        return {"host_intents": self.host_intents[-10:]}

    @handles("app_manager.host_intent")
    async def host_intent(self, msg: Message) -> None:
        """A host lifecycle intent, checked and audited by the host actor. Until the focus
        stack exists the manager only keeps the last few, for `lineup debug actors`."""
        self.host_intents.append(dict(msg.body))
        del self.host_intents[:-10]


__all__ = ["AppManagerActor"]
