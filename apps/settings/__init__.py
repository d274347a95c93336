"""The settings core app: grants, the tool policy, the default app and each app's data.

Each fact stays with the actor that owns it, and each view or change is a request to that
actor through a door that admits the settings app (and, as every door, the operator) only;
any other app is refused by the supervisor (`sender_not_allowed`) before anything is stored
(the default app, by the app manager's own requester rules):

- capability grants, the capability gateway's: `capability_gateway.grants` {} → `grants`
  [{app_scope, capability, scope, granted_ms}] in force; `capability_gateway.revoke`
  {app_scope, capability} → `revoked` (0 or 1), audited `capability.grant_revoked`;
- the tool policy and each tool's visibility, the tool router's: `tool_router.policy.get`
  {} → `exists`, `policy` (the file's JSON), `text` (its content when it is not JSON),
  `broken` (why it hides every tool), `inventories` [{conversation_id, agent_id, revision,
  visibility}] (the most recently published within 256 KiB; `inventories_left_off` counts
  the rest); `tool_router.policy.replace` {policy} → `revisions` {conversation: revision},
  the conversations given a new revision by it;
- the default app, the app manager's: `app_manager.request` {kind: list / set_default} →
  `default_app` with the list; `set_default` is an operation like the CLI's;
- each app's data, the store's: `store.app_data.overview` {} → `apps` [{app_scope, kind,
  enabled, session_data {instances, revisions, bytes}, artifacts {count, bytes},
  diagnostics {health, detail, health_at_ms, events_total} or null}], `retention`;
- the mode a new conversation starts in, the chat app's: `app.interaction.settings`
  {default_mode?: im / audio} (the chat's `settings.json`) → `default_mode` in force.

A new policy is checked by the tool router with the parser the inventory uses
(`actors/tool_router/_policy_edit.py`): one it cannot use is refused with
`invalid_payload` and a sentence naming the first problem ("the policy cannot be used:
deny[1]: a rule is a string or an object with a tool glob"), or `too_large` past 256 KiB,
and nothing is written. A good one replaces `tool_policy.json` atomically, is in force at
once (every conversation whose visible tools change gets a new inventory revision), and
is audited (`tool_policy.replace`, with the sender). Its `capabilities` section is the
capability gateway's to judge: the tool router asks it first
(`capability_gateway.policy.check` {section} → `problem` or null). Each app's data is one
read of the store: the registry's records plus any scope with rows; its retention rule
says, in the store's words, that disabling an app keeps its session data, artifacts and
diagnostics and removing it (`lineup app remove APP --yes`) deletes all three.

Input reaches the app from the user's side only, through the host (`host.ui.action` with
`app_scope: "settings"`, then `app.input`): `show` (everything), `grants`, `revoke`,
`policy`, `set_policy`, `set_default`, `set_mode`, `data` (`_app`). `lineup settings`
(`lineup/settings_cmd.py`) asks the same owners with the same types through the operator's
control socket, so the CLI and the app show the same answers and no rule is written twice."""

from ._app import SettingsApp

__all__ = ["SettingsApp"]
