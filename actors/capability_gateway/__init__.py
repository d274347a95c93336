"""The capability_gateway actor: capability requests, consent and audit (`_actor`); a
request's row and result (`_requests`), running an effect once (`_effects`); the
requesting app's facts (`_apps`), the policy (`_policy`), the rate limit (`_rates`), this
host's providers (`_providers`, each of the shape `_provider_base` declares), saving files
safely (`_files`) and where a saved file ends (`_places`), the file the user chose for an
app (`_file_open`), showing notifications (`_notifications`: the desktop, an open page, the
terminal) and speech (`_speech`).

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
  through the store, saved into downloads (`_artifact_save`);
- `capability_gateway.file_chosen` (a call, from the host or the web host: the user):
  `request_id` (the gateway's key of a waiting `file.open`), `name`, `media_type`, `data`,
  `chooser` → {`status`, `code`?}: the file the user chose, the yes to that request
  (`_file_open`).

It sends `app.capability.consent` to the chat app (a consent card opened, then closed with
how it ended), keeps its requests and grants in its own file (`_db`: `capability_gateway.db`)
and hands the store its audit rows (`store.audit`), reads an app's own
artifact that a provider needs (`store.artifacts.read`) and has the store keep one a
provider made for the app or the user chose for it (`store.artifacts.keep`). Of the web
host it asks to show a notification on the open pages (`web_host.notify`), how many pages
are open or show a conversation (`web_host.pages`), and hands it a file saved for a page
(`web_host.download`).
"""

from typing import TYPE_CHECKING

from actors.kernel import lazy_exports

# Each name loads on first use: the command line reads the grants without the actor.
_LAZY = {
    "CapabilityGatewayActor": "._actor",
    "DB_FILE": "._db",
    "open_readonly": "._db",
    "read_grants": "._db",
    "read_notifications": "._notifications",
    "served_capabilities": "._providers",
    "speaks": "._speech",
    "transcribes": "._speech",
    "worker_command": "._speech",
}

if TYPE_CHECKING:
    from ._actor import CapabilityGatewayActor
    from ._db import DB_FILE, open_readonly, read_grants
    from ._notifications import read_notifications
    from ._providers import served_capabilities
    from ._speech import speaks, transcribes, worker_command

__getattr__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "DB_FILE",
    "CapabilityGatewayActor",
    "open_readonly",
    "read_grants",
    "read_notifications",
    "served_capabilities",
    "speaks",
    "transcribes",
    "worker_command",
]
