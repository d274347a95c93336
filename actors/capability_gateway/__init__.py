"""The capability_gateway actor: capability requests, consent and audit (`_actor`); a
request's row and result (`_requests`), running an effect once (`_effects`); the
requesting app's facts (`_apps`), the policy (`_policy`), the rate limit (`_rates`), this
host's providers (`_providers`, each of the shape `_provider_base` declares), saving files
safely (`_files`) and where a saved file ends (`_places`), the file the user chose for an
app (`_file_open`), showing notifications (`_notifications`: the desktop, an open page, the
terminal) and speech (`_speech`).

What each message is for and what a call answers (who may send it and its body are its
door's: docs/messages.md):

- `capability_gateway.request`: an app's request → {`status`, `output`, `code`?};
- `capability_gateway.consent`: the user's answer on a card (once / session / always /
  deny / dismiss);
- `capability_gateway.grants`: → {`grants`: [{`app_scope`, `capability`, `scope`,
  `granted_ms`}]};
- `capability_gateway.providers`: → {`providers`: [{`capability`, `by`}]}: what would
  serve each capability this host serves, now;
- `capability_gateway.revoke`: → {`revoked`};
- `capability_gateway.policy.check`: a new policy file's capabilities section →
  {`problem`: the first one, or null};
- `capability_gateway.save_artifact`: the user's save → {`artifact_id`, `name`, `size`}:
  the artifact, read through the store, saved into downloads (`_artifact_save`);
- `capability_gateway.file_chosen`: the file the user chose for a waiting `file.open`, the
  yes to that request → {`status`, `code`?} (`_file_open`).

It sends `app.capability.consent` to the chat app (a consent card opened, then closed with
how it ended), keeps its requests and grants in its own file (`_db`: `capability_gateway.db`)
and hands the store its audit rows (`store.audit`), reads an app's own
artifact that a provider needs (`store.artifacts.read`) and has the store keep one a
provider made for the app or the user chose for it (`store.artifacts.keep`). Of the web
host it asks to show a notification on the open pages (`web_host.notify`), how many pages
are open or show a conversation (`web_host.pages`), and hands it a file saved for a page
(`web_host.download`).

The gateway is the one way an app gets a system effect: an app asks with a purpose and an
input (`sdk.capabilities.request`), and the gateway decides, asks the user when needed,
runs the host's provider and audits every step. The app gets {`status`, `output`} with
`status` one of `completed`, `cancelled_by_user`, `permission_denied`,
`unsupported_on_host`, `policy_denied`, `expired`, `failed` (then with a `code`) or
`in_doubt`, and never a path, a token or an exception. Its state lives in its own file,
`capability_gateway.db` (`_db`: requests, grants, and the audit rows a step wrote until the
store has them), one gateway step a transaction; an older data dir's rows are moved there
once (`_migration`).

More of what it takes:

- `capability_gateway.withdraw`: an app's own request not answered yet ends `failed`, code
  `withdrawn`, audited `capability.withdrawn`, its card closed; the SDK sends it when the
  call that asked was cancelled, or cut short by the app's restart and not run again;
- `capability_gateway.stop`: the app ends its own recording early;
- `capability_gateway.record_start`: the user's yes in the page to a waiting
  `audio.record` → {`max_ms`, `max_bytes`}, else `invalid_state`;
- `capability_gateway.recorded`: what the page recorded → {`status`, `code`?}, the
  request's outcome;
- `capability_gateway.record_stop`: the user's stop of a recording → {`stopped`};
- `capability_gateway.talk`: the chat's push-to-talk, started at once → {`request_id`
  (`chat/talk.<talk_id>`), `max_ms`, `max_bytes`}, else a code and one sentence (`_talk`).

More of what it sends: `app.interaction.recorded` {`conversation_id`, `request_id`,
`recording` {`artifact_id`, `title`, `media_type`, `size`, `duration_ms`}} to the chat app
(a push-to-talk recording kept as the chat's artifact), and `web_host.recording.stop`
{`conversation_id`, `request_id`} (the pages of the conversation stop recording for it).
Its timeouts: a request's `timeout_ms` is 1 s to 10 min, 60 s by default.

**Consent.** Unless a grant covers it (`session` of this run, or `always`; never for the
microphone), or it is the chat's own speech in a conversation the user put in audio mode
(`_talk`), a request that passed the checks is stored `asking` and the gateway sends the
chat a consent card, in the conversation of the app's foreground instance (else the one it
was last active in, else `runtime:global`). The chat shows it as a question of the runtime
(`origin: runtime`, sender `runtime:capabilities`): the app, the capability and the app's
purpose, answered *Allow once*, *Allow until the runtime restarts*, *Always allow* or
*Deny*, or dismissed; the terminal chat answers it like any question (`/1` … `/4`,
`/dismiss`). The chat sends the answer to the gateway, never to the agent
(`apps/chat/_consent.py`); the gateway's door takes an answer only from the chat app and
the host. Deny is `permission_denied`, a dismissal `cancelled_by_user`, no answer by the
request's deadline `expired`; the card is closed in every case. A yes is checked again
against what may have changed while the user decided (the app removed, disabled or no
longer declaring the capability: `permission_denied`; the policy: `policy_denied`). A
`file.open` card is answered by the file the user chooses (`_file_open`). The registry is
read from the app manager's file for each request (read-only), so a request that waited in
the gateway's mailbox while its app was disabled is judged as the app is now.

**Grants** (`capability_grants`, one per app and capability): `once` records the user's
last allow-once and covers nothing more; `session` lasts until the runtime restarts (a
grant carries the run's boot id, and the gateway deletes other runs' session grants when
it starts; closing the app's instance does not end it); `always` until revoked. `lineup
capabilities list` (read-only, runtime up or not) and `lineup capabilities revoke APP
CAPABILITY` (or the settings app) show and take them back; a revocation is audited
(`capability.grant_revoked`).

**Rows kept.** The input is dropped from a request's row once it is finished, and a
finished row goes when the gateway starts after it is a week old (`keep_finished_s` in its
config); the audit rows stay.

Every provider has one shape (`_provider_base`): its run gives back what the app gets
(`output`) and which of the host's ways served it (`by`). An artifact it made for the app,
or the file the user chose for it, stands in the output as a `NewArtifact`, which the
gateway has the store keep as the app's and replaces with its reference. The audit row of
a finished effect says which way served it (`saved as notes.txt in the user's downloads
folder`, `downloaded as notes.txt by the open page showing the conversation`, `written
with wl-copy`, `shown by the desktop's notification service (dunst)`, `spoken by espeak-ng
on this host`, …), and `lineup settings show` asks the gateway what would serve each
capability now (`capability_gateway.providers`). The speech engines run one at a time, off
the gateway's trio thread, each in its own process with a deadline, never with the
network. A provider that refuses its input says why with a code (`invalid_payload`,
`too_large`, `quota_exceeded`, `artifact_not_found`); one that fails is `failed`, code
`failed`, and what went wrong is in the gateway's log only. `tests/hostile/test_capabilities.py`
holds a hostile app to getting nothing undeclared, from behind another app, past the cap
or without the user's yes.
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
