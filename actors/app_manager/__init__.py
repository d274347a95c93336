"""The app_manager actor: the app registry, bundles, instances and focus stack.

- `_registry`: `AppRecord`, `AppOperation` and the rules a request must pass;
- `_bundle`, `_cache`: signed bundles, their verification and the content-addressed cache;
- `_steps`: what each registry operation does, idempotently, before its rows are written;
- `_focus`: instances, the focus stack and the start-up target;
- `_requests`: who may ask for what, and what of a request an operation keeps;
- `_actor`: the actor that runs operations, keeps instances and starts app processes.


The signed bundle's tools (`lineup app keygen|build|sign|verify`) and a registry row read
back (`AppRecord`, `lineup app list`) are its public face for the command line.

Its state lives in its own `app_manager.db` (`_db`: tables `app_records`,
`app_operations`, `app_instances`, `app_settings`), written by it alone, one step a
transaction, whole rows at a time: a write is a replacement that is safe to repeat, so a
handler replayed after a crash that takes another path than its first run has its rows
written too. Everyone else reads the file read-only (`registry`: the command line, the web
host, the router and the tool router when they start, the capability gateway at each
request, the store for an app's live instances); an older data dir's rows are moved in
from `runtime.db` once (`_migration`). A removed app's data in the store goes with it
(`store.apps.removed`, told before the removal is committed).

- **Records** (`_registry`): `AppRecord` with `app_scope`, `kind` (core | installed),
  `installed_version`, `previous_version`, `enabled`, `install_state` (installed |
  updating | failed), `active_instance_count`, `installed_at`, `enabled_at`, the bundle
  digests of both versions, the manifest, and the signer of both versions
  (`signer_key_id`, `signer_public_key`, `previous_signer_key_id`,
  `previous_signer_public_key`, kept in the row inside the manifest column's JSON under
  `lineup.signers`). chat, app-registry and settings are core records made at first start
  (one new to a registry, at its next start): always enabled; chat (the recovery app)
  cannot be disabled; no core app can be updated, rolled back, removed or replaced by a
  bundle.
- **Operations**: every request (`app_manager.request`, from the operator's `lineup app`,
  the host or the app-registry app) is an `AppOperation` row: `queued` → `running`
  (`step`, `progress`) → `succeeded` | `failed` (nothing changed) | `rolled_back` (an
  update had marked the record `updating` and put it back). The row is written before the
  work; the work (`_steps`) is idempotent; the final rows (record and operation) go in one
  transaction. A SIGKILL of the app manager anywhere redelivers the request, and the
  operation resumes from its row and completes (tested at the crash points
  `app_manager.after_start` and `.after_step`). Refusals have codes: `already_installed`,
  `app_not_installed`, `core_app_protected`, `confirmation_required` (remove needs the
  user's yes), `no_previous_version`, `same_version`, `older_version` (rollback is the way
  back), `sender_not_allowed`, `bundle_signer_changed`, and every bundle code.
- **Signer pinning**: an app's signer is the key that signed its installed version. An
  update signed by another key, even one in the trust store, is another publisher who
  would inherit the app's data and instances: it is refused (`bundle_signer_changed`,
  rolled back, nothing changed) after the version checks, unless the request says
  `accept_new_signer` (`lineup app update --accept-new-signer`, the user's explicit
  re-trust); the new key is then the pin, and the old one the previous version's signer.
  The pin compares whole public keys (a key id is only 64 bits of one); a record without
  recorded signers is pinned to the key id in its cache entry's signature record. A
  rollback brings back the previous version's own signer, and refuses if its cache entry
  is signed by another key. Remove and install again starts afresh, without the old data.
- **Routing**: after each change the manager writes the router's view of the apps
  (`app_settings.routing`: enabled, subscriptions from the manifest, live instances) and
  casts `router.apps`; a router that restarts reads it from the app manager's file. So an
  agent message for a disabled or removed app gets `app_disabled` / `app_not_installed`.
  The tool router
  gets its view too (`tool_router.apps`), and once the write has committed a web host,
  where the runtime runs one, is told to look again (`web_host.registry.changed`, a cast
  with an empty body).
- **Instances and focus** (`_focus`): chat and app-registry have one global instance
  (`chat:main`), a tool app one per conversation (`<scope>:<conversation>`). The focus
  stack survives restarts (`app_settings.focus_stack`). Start-up target: explicit →
  restorable foreground instance → the default app → chat. Each move is written, then
  announced to the app's process as `app.lifecycle` {`instance_id`, `hook`: start |
  foreground | background | suspend | restore | closing}.
- **App processes**: an installed app runs while it has a live instance, as the dynamic
  child `app.<scope>`, started and stopped by the app manager (`Actor.supervise`) and
  always isolated (`actors.kernel.spawning.jail`). Its verified code stays in the bundle cache: the
  launcher mounts the cache entry's `app/` read-only at `/tmp/app-code/app` in the app's
  view (`Isolation.code_dir`, `LINEUP_APP_CODE`), and the process starts as
  `apps.sdk._bundled:BundledApp`. The runtime never imports an app's code, and the app
  cannot change what runs. Before a launch (and a rollback) the cache entry is checked
  again as at install (`BundleCache.reverify`): a key removed from the trust store since,
  or a file changed on disk, stops it with its code. An update or rollback restarts the
  process of live instances on the new version; after a runtime restart the manager starts
  the processes of the live instances again. A process past its restart intensity
  (`kernel.actor_failed`) fails its instances, and the instance below comes back to the
  front. One that did not start fails its launch with `app_start_failed`
  (`_start_failure`).
- **Host intents**: `open_app`, `focus_app`, `close_app` and `open_default_app` from the
  host run as launch, focus and close operations like the CLI's (the window's
  `foreground` / `background` are only recorded).
- **CLI** (`lineup/app_runtime_cmd.py`): `lineup app list | install | enable | disable |
  update [--accept-new-signer] | rollback | remove --yes | set-default | launch | close |
  focus [--json]` sends the request through the control socket and follows the
  operation's row to its end. `list` shows each app's signer (key id; `--json` also the
  public keys). A refusal prints one sentence: what was refused, the operation's detail
  and the next step (`update pomodoro refused: the update is signed by key X, the installed
  version by key Y; pass --accept-new-signer if you trust the new publisher.`).
"""

from typing import TYPE_CHECKING

from actors.kernel import lazy_exports

# Each name loads on first use: signing or verifying a bundle on the command line needs the
# bundle's module, not the actor (trio, the kernel).
_LAZY = {
    "AppManagerActor": "._actor",
    "AppRecord": "._registry",
    "BundleError": "._bundle",
    "is_secret_key": "._bundle",
    "key_id": "._bundle",
    "load_public_key": "._bundle",
    "load_signing_key": "._bundle",
    "load_trusted_keys": "._bundle",
    "sign_bundle": "._bundle",
    "verify_bundle": "._bundle",
    "write_bundle": "._bundle",
    "write_keypair": "._bundle",
}

if TYPE_CHECKING:
    from ._actor import AppManagerActor
    from ._bundle import (
        BundleError,
        is_secret_key,
        key_id,
        load_public_key,
        load_signing_key,
        load_trusted_keys,
        sign_bundle,
        verify_bundle,
        write_bundle,
        write_keypair,
    )
    from ._registry import AppRecord


__getattr__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "AppManagerActor",
    "AppRecord",
    "BundleError",
    "is_secret_key",
    "key_id",
    "load_public_key",
    "load_signing_key",
    "load_trusted_keys",
    "sign_bundle",
    "verify_bundle",
    "write_bundle",
    "write_keypair",
]
