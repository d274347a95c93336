"""Stable rejection and outcome codes, and the one exception that carries them.

A code is a promise: peers, apps and tests match on its string, so a value never changes
meaning and is never reused. The router's filter chain has one code per kind of failure
at each step (grouped below by step; the router runs them); the errors a tool call can end
with and the outcomes of a capability request are in the same enum so that a rejection
anywhere in the runtime has exactly one vocabulary.

`completed` is a capability *result*, not an error, so it is not a `Code`: it lives in
`CapabilityResult`, whose other members have the same strings as their `Code` twins.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Code(StrEnum):
    """Every definite rejection or failure the runtime reports."""

    # Filter chain step 1: decoding, version, type, routing keys, size, schema.
    INVALID_JSON = "invalid_json"
    TOO_LARGE = "too_large"
    TOO_DEEP = "too_deep"
    INVALID_ENVELOPE = "invalid_envelope"
    UNSUPPORTED_VERSION = "unsupported_version"
    UNKNOWN_TYPE = "unknown_type"
    SCOPE_MISSING = "scope_missing"
    SCOPE_INVALID = "scope_invalid"
    SCOPE_MISMATCH = "scope_mismatch"
    CORRELATION_MISSING = "correlation_missing"
    INVALID_PAYLOAD = "invalid_payload"
    # Filter chain step 2: sender identity and conversation association (the three entry kinds).
    SENDER_NOT_ALLOWED = "sender_not_allowed"
    AGENT_NOT_ASSOCIATED = "agent_not_associated"
    # Filter chain step 3: id / sequence / cursor deduplication and order.
    DUPLICATE = "duplicate"
    OUT_OF_ORDER = "out_of_order"
    # Filter chain step 4: app installed, enabled, version, host compatibility.
    APP_NOT_INSTALLED = "app_not_installed"
    APP_DISABLED = "app_disabled"
    APP_VERSION_MISMATCH = "app_version_mismatch"
    APP_INCOMPATIBLE = "app_incompatible"
    UNSUPPORTED_ON_HOST = "unsupported_on_host"
    # Filter chain step 5: tool / capability, inventory, arguments, policy, launch and foreground.
    TOOL_NOT_VISIBLE = "tool_not_visible"
    STALE_INVENTORY_REVISION = "stale_inventory_revision"
    INVALID_ARGUMENTS = "invalid_arguments"
    PERMISSION_DENIED = "permission_denied"
    POLICY_DENIED = "policy_denied"
    RATE_LIMITED = "rate_limited"
    FOREGROUND_REQUIRED = "foreground_required"
    # Filter chain step 6: conversation / instance / operation ownership.
    OWNERSHIP_MISMATCH = "ownership_mismatch"
    # Filter chain step 7: manifest subscriptions ∩ SDK subscription filter.
    NOT_SUBSCRIBED = "not_subscribed"
    # Filter chain step 8: persistence before delivery.
    STORE_UNAVAILABLE = "store_unavailable"
    # Outcomes of tool calls and capability requests.
    CANCELLED_BY_USER = "cancelled_by_user"
    OPERATION_EXPIRED = "operation_expired"
    HANDLER_FAILED = "handler_failed"
    # A call that would start an operation its app runs one at a time (a focus timer, a
    # round of a game) while one is open in the conversation: refused, the open one goes on.
    ALREADY_RUNNING = "already_running"
    EXPIRED = "expired"
    FAILED = "failed"
    # A capability effect that cannot be repeated safely was started and its end was never
    # recorded (the runtime stopped in between): it may or may not have happened.
    IN_DOUBT = "in_doubt"
    # A question its asker took back before the user answered: a capability request whose
    # call had ended (a late answer must not start an effect nobody waits for), or an
    # agent's question the conversation walked past (a late answer is not sent).
    WITHDRAWN = "withdrawn"
    # A file the user chose for an app (`file.open`) whose bytes are not of a type the app
    # takes, or not of the type its name or the browser says: the user chooses again.
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    # Contracts outside the message path: manifests, the wire (docs/protocol.md),
    # and envelopes that have no legacy form.
    INVALID_MANIFEST = "invalid_manifest"
    INVALID_TOOL_DESCRIPTOR = "invalid_tool_descriptor"
    INVALID_FRAME = "invalid_frame"
    UNAUTHORIZED = "unauthorized"
    PROTOCOL_ERROR = "protocol_error"
    LEGACY_UNMAPPABLE = "legacy_unmappable"
    # App bundles: refused before anything in them runs or reaches the cache. A bad
    # manifest inside a bundle is `invalid_manifest`, a missing SDK feature `app_incompatible`.
    BUNDLE_MALFORMED = "bundle_malformed"
    BUNDLE_TOO_LARGE = "bundle_too_large"
    BUNDLE_BAD_PATH = "bundle_bad_path"
    BUNDLE_UNSIGNED = "bundle_unsigned"
    BUNDLE_UNTRUSTED_KEY = "bundle_untrusted_key"
    BUNDLE_BAD_SIGNATURE = "bundle_bad_signature"
    BUNDLE_HASH_MISMATCH = "bundle_hash_mismatch"
    BUNDLE_UNLISTED_FILE = "bundle_unlisted_file"
    BUNDLE_MISSING_FILE = "bundle_missing_file"
    BUNDLE_VERSION_MISMATCH = "bundle_version_mismatch"
    BUNDLE_SCOPE_MISMATCH = "bundle_scope_mismatch"
    BUNDLE_MISSING = "bundle_missing"
    BUNDLE_UNREADABLE = "bundle_unreadable"
    # An update signed by another trusted key than the installed version: the signer is
    # pinned per app until the user accepts the new one.
    BUNDLE_SIGNER_CHANGED = "bundle_signer_changed"
    # App management: a registry operation or a navigation request refused.
    ALREADY_INSTALLED = "already_installed"
    CORE_APP_PROTECTED = "core_app_protected"
    CONFIRMATION_REQUIRED = "confirmation_required"
    NO_PREVIOUS_VERSION = "no_previous_version"
    SAME_VERSION = "same_version"
    OLDER_VERSION = "older_version"
    INSTANCE_NOT_FOUND = "instance_not_found"
    INVALID_STATE = "invalid_state"
    INVALID_ENTRYPOINT = "invalid_entrypoint"
    APP_START_FAILED = "app_start_failed"
    # App session data: a replace whose expected revision is not the current one (the
    # newer data stays; nothing is merged).
    REVISION_CONFLICT = "revision_conflict"
    # Artifacts: an app's store of bytes is bounded per app, and an id names one artifact.
    QUOTA_EXCEEDED = "quota_exceeded"
    ARTIFACT_NOT_FOUND = "artifact_not_found"
    # The chat's questions: the agent withdraws one it never asked in the conversation, or
    # one already answered or withdrawn. Nothing changes; the chat files the code.
    INTERACTION_NOT_FOUND = "interaction_not_found"
    INTERACTION_CLOSED = "interaction_closed"
    # The user's spoken message (the chat's voice mode) in which no words were made out:
    # nothing is sent, and the user is told so.
    NOTHING_HEARD = "nothing_heard"


class CapabilityResult(StrEnum):
    """The only outcomes a capability request can have."""

    COMPLETED = "completed"
    CANCELLED_BY_USER = "cancelled_by_user"
    PERMISSION_DENIED = "permission_denied"
    UNSUPPORTED_ON_HOST = "unsupported_on_host"
    POLICY_DENIED = "policy_denied"
    EXPIRED = "expired"
    FAILED = "failed"
    IN_DOUBT = "in_doubt"


# The error codes every tool call must be able to end with.
TOOL_ERROR_CODES: Final = frozenset(
    {
        Code.CANCELLED_BY_USER,
        Code.PERMISSION_DENIED,
        Code.APP_DISABLED,
        Code.APP_NOT_INSTALLED,
        Code.APP_VERSION_MISMATCH,
        Code.TOOL_NOT_VISIBLE,
        Code.INVALID_ARGUMENTS,
        Code.FOREGROUND_REQUIRED,
        Code.OPERATION_EXPIRED,
        Code.HANDLER_FAILED,
    }
)
# What an app's own handler may fail a call with (SDK `tools.fail`). The others are
# the runtime's verdicts; an app claiming "app_disabled" would be lying about the runtime.
APP_TOOL_ERROR_CODES: Final = frozenset(
    {
        Code.CANCELLED_BY_USER,
        Code.PERMISSION_DENIED,
        Code.INVALID_ARGUMENTS,
        Code.FOREGROUND_REQUIRED,
        Code.OPERATION_EXPIRED,
        Code.HANDLER_FAILED,
    }
)
# Capability results other than `completed`, as codes.
CAPABILITY_FAILURE_CODES: Final = frozenset(
    Code(result.value) for result in CapabilityResult if result is not CapabilityResult.COMPLETED
)


class ContractError(Exception):
    """A message, manifest or frame broke the contract; `code` says how, `detail` where.

    The only exception the validation functions of this package raise for bad input, so a
    caller can turn any rejection into a definite reply with one `except` clause.
    """

    def __init__(self, code: Code, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail

    def __reduce__(self) -> tuple[type[ContractError], tuple[Code, str]]:
        return (type(self), (self.code, self.detail))

    def to_dict(self) -> dict[str, str]:
        """The rejection as it is reported on the wire and by `lineup protocol validate`."""
        return {"code": self.code.value, "detail": self.detail}
