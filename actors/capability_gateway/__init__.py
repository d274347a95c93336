"""The capability_gateway actor: capability requests, consent and audit (`_actor`); a
request's row and result (`_requests`), running an effect once (`_effects`); the
requesting app's facts (`_apps`), the policy (`_policy`), the rate limit (`_rates`), this
host's providers (`_providers`), saving files safely (`_files`) and where a saved file ends
(`_places`), the file the user chose for an app (`_file_open`).

- `capability_gateway.request` (a call, from any app): `request_id`, `capability`,
  `purpose`, `input`?, `timeout_ms`? → {`status`, `output`, `code`?};
- `capability_gateway.consent` (from the chat app or the host): `request_id` (the
  gateway's key), `answer` once / session / always / deny / dismiss;
- `capability_gateway.grants` (a call, from the settings app or the operator): →
  {`grants`: [{`app_scope`, `capability`, `scope`, `granted_ms`}]};
- `capability_gateway.revoke` (a call, from the settings app or the operator):
  `app_scope`, `capability` → {`revoked`};
- `capability_gateway.policy.check` (a call, from the tool router): `section` (a new policy
  file's capabilities section) → {`problem`: the first one, or null}.
- `capability_gateway.save_artifact` (a call, from the operator, the host or the web host:
  the user): `artifact_id`, `name`? → {`artifact_id`, `name`, `size`}: the artifact, read
  through the store, saved into downloads (`_artifact_save`);
- `capability_gateway.file_chosen` (a call, from the host or the web host: the user):
  `request_id` (the gateway's key of a waiting `file.open`), `name`, `media_type`, `data`,
  `chooser` → {`status`, `code`?}: the file the user chose, the yes to that request
  (`_file_open`).

It sends `app.capability.consent` to the chat app (a consent card opened, then closed with
how it ended), asks the web host whether a page shows a conversation and hands it a saved
file (`web_host.pages`, `web_host.download`), and keeps its rows through the store
(`store.capabilities.*`, `store.artifacts.chosen`).
"""

from ._actor import CapabilityGatewayActor
from ._providers import read_notifications, served_capabilities

__all__ = ["CapabilityGatewayActor", "read_notifications", "served_capabilities"]
