"""A tool result that hands the agent an artifact: `{"artifact": {"artifact_id": ...}}`.

An app puts the reference its `sdk.artifacts.create` returned under `artifact` in a result's
output. Before the result is relayed, the tool router asks the store for that artifact: one
that does not exist, or that another app made, ends the call `handler_failed`, audited with
what was named (the agent learns only that the reference was refused). Otherwise the
reference the agent gets is the store's own record of it, `{artifact_id, title, media_type,
size}`: whatever else the app wrote there (a path, a size of its own) is not relayed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from contracts import Code, ContractError

if TYPE_CHECKING:
    from ._calls import Call
    from ._router_face import RouterFace

ARTIFACT_KEY: Final = "artifact"
REFERENCE_FIELDS: Final = ("artifact_id", "title", "media_type", "size")


class ArtifactRefused(ContractError):
    """A result's artifact reference the router will not relay: `detail` for the agent,
    `audit` for the runtime's record."""

    def __init__(self, audit: str) -> None:
        super().__init__(Code.HANDLER_FAILED, "the app's result names an artifact it cannot hand")
        self.audit = audit


async def with_artifact_reference(
    router: RouterFace, call: Call, output: dict[str, Any]
) -> dict[str, Any]:
    """`output` with its artifact reference replaced by the store's record of it (as it is
    when it names none); `ArtifactRefused` when the reference is not the calling app's."""
    if ARTIFACT_KEY not in output:
        return output
    named = output[ARTIFACT_KEY]
    artifact_id = named.get("artifact_id") if isinstance(named, dict) else None
    if not isinstance(artifact_id, str) or not artifact_id:
        raise ArtifactRefused(f"{call.call_id}: the artifact reference names no artifact id")
    found = (await router.store("store.artifacts.meta", {"artifact_id": artifact_id}))["artifact"]
    if found is None:
        raise ArtifactRefused(f"{call.call_id}: no artifact {artifact_id[:80]!r}")
    if found["app_scope"] != call.app_scope:
        raise ArtifactRefused(
            f"{call.call_id}: {call.app_scope} named artifact {artifact_id} of {found['app_scope']}"
        )
    return {**output, ARTIFACT_KEY: {key: found[key] for key in REFERENCE_FIELDS}}


def shown_artifact(call: Call) -> dict[str, Any] | None:
    """The reference a finished call handed the agent, for the chat to show; else None."""
    reference = (call.output or {}).get(ARTIFACT_KEY) if call.state == "succeeded" else None
    return dict(reference) if isinstance(reference, dict) else None
