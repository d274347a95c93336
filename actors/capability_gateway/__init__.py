"""The capability_gateway actor: capability requests, consent and audit.

For now it runs under the supervisor and answers the kernel's statistics requests; its
handlers arrive with the issue named above.
"""

from actors.kernel import Actor

from .door import DOOR


class CapabilityGatewayActor(Actor):
    door = DOOR


__all__ = ["CapabilityGatewayActor"]
