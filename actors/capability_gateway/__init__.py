"""The capability_gateway actor: capability requests, consent and audit (`_actor`); a
request's row and result (`_requests`), running an effect once (`_effects`); the
requesting app's facts (`_apps`), the policy (`_policy`), the rate limit (`_rates`), this
host's providers (`_providers`), saving files safely (`_files`) and showing notifications
(`_notifications`: the desktop, an open page, the terminal).

- `capability_gateway.request` (a call, from any app): `request_id`, `capability`,
  `purpose`, `input`?, `timeout_ms`? → {`status`, `output`, `code`?};
- `capability_gateway.consent` (from the chat app or the host): `request_id` (the
  gateway's key), `answer` once / session / always / deny / dismiss;
- `capability_gateway.grants` (a call, from the settings app or the operator): →
  {`grants`: [{`app_scope`, `capability`, `scope`, `granted_ms`}]};
- `capability_gateway.providers` (a call, from the operator): → {`providers`:
  [{`capability`, `by`}]}: what would serve each capability this host serves, now;
- `capability_gateway.revoke` (a call, from the settings app or the operator):
  `app_scope`, `capability` → {`revoked`};
- `capability_gateway.policy.check` (a call, from the tool router): `section` (a new policy
  file's capabilities section) → {`problem`: the first one, or null}.
- `capability_gateway.save_artifact` (a call, from the operator, the host or the web host:
  the user): `artifact_id`, `name`? → {`artifact_id`, `name`, `size`}: the artifact, read
  through the store, saved into downloads (`_artifact_save`).

It sends `app.capability.consent` to the chat app (a consent card opened, then closed with
how it ended) and keeps its rows through the store (`store.capabilities.*`).
"""

from ._actor import CapabilityGatewayActor
from ._notifications import read_notifications
from ._providers import served_capabilities

__all__ = ["CapabilityGatewayActor", "read_notifications", "served_capabilities"]
