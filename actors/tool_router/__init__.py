"""The tool_router actor: the revisioned tool inventory and the lifecycle of a tool call
(`_actor.py`), which tools are visible and why (`_inventory.py`, `_policy.py`), getting a
call's app ready (`_activation.py`), calls the runtime holds until a deadline
(`_deadlines.py`, `_operations.py`). Its state is its own file, `tool_router.db` (`_db.py`),
written one step a transaction (`_steps.py`); `_reads.py` reads it for the command line,
read-only, and `_migration.py` moves the rows an older data dir kept in the store's file.

The tool router is the one owner of tools: the inventory each conversation's agent is
given and every call's lifecycle. Only it writes `tool_router.db`; no step of a call waits
for the store, which persists the agent's `lineup.tool.invoke` with the rest of the stream
beside the call's way here, and keeps the audit rows the tool router casts it. What it
holds in memory (open calls, the inventories) is rebuilt from its file at start; the apps'
view it reads from the app manager's file, the conversations' agents it asks the store.

**Inputs.** The agent's `lineup.tool.invoke` and `lineup.tool.cancel` pass the router's
filter chain (validation, the agent's association with the conversation), and the router
hands them over as soon as it has sent the run to the store (`tool_router.inbound`, in
stream order, with the conversations newly associated with an agent): the mailbox holds
the run for the store before them, so a call never runs unrecorded. The app manager sends
its view whenever the registry or the instances change (`tool_router.apps`), with its
version (`view_version`): a view older than the one held, which a restart that read a newer
one from the file may be given again, is ignored, lest a state that has passed be published
and the agent's calls on the current revision be refused as stale. An app
reports on its own calls (`tool_router.report`) and asks about its deadline operations
(`tool_router.deadline`); the chat app passes on the user's stop of a call
(`tool_router.interrupt`); the settings app reads and replaces the policy
(`tool_router.policy.get`, `.replace`, `_policy_edit`).

**A call** (`_calls`), one row per `call_id`:

    invoke ─▶ revision current? ─▶ tool in it? (else app_not_installed | app_disabled |
              tool_not_visible | app_version_mismatch) ─▶ arguments fit input_schema?
       │ any no: failed at once — one lineup.tool.error, an audit row, the row kept
       ▼
    accepted (row + lineup.tool.accepted, one commit)
       ├─ app ready ───────────────────────────────────────────────────▶ running
       └─ starting (lineup.tool.starting) ─▶ launch / focus ─▶ activation_ready ─▶ running
                                           └─▶ activation_failed ─▶ failed
    running: app.tool.invoke to app.<scope> ─▶ progress* ─▶ result (output_schema) | error
       │                                     └─▶ deadline: the runtime's until ends_at
       ▼
    succeeded | failed (row + lineup.tool.result | lineup.tool.error, one commit)

- **Exactly one final.** The final's envelope has one slot of the call's ids (`_calls`),
  so two paths that race to end a call make the same idempotency key and the AppServer
  keeps only the first. The first final recorded also ends the call in memory; later
  reports are dropped.
- **To the agent.** A step's envelopes go out after its commit in one `transport.submit`
  (`_steps`), which the transport holds until the AppServer's verdicts.
- **Duplicates.** A call id seen again in another envelope (the agent's retry) gets the
  recorded outcome again, or `accepted` while it is open, under ids derived from the
  retry's envelope; never a second execution. A redelivered envelope (the same id) is
  known by its call id and changes nothing.
- **Timeouts: every call has a bounded life.** A call may take its tool's `timeout_ms`
  (30 s when the tool declares none, `DEFAULT_TOOL_TIMEOUT_MS`) from acceptance, again
  from each progress report, up to ten times `timeout_ms` in all (at most a day): then
  `operation_expired`, audited, and its app is told (`app.tool.cancel`), so the SDK stops
  the handler and takes back what it asked. The deadline is stored with the call's row: a
  restart of the tool router or of the app across it still ends the call once, at the
  router's first look after. What the app reports on the call afterwards is a late report:
  dropped (the first final stands), counted (`late_reports` in `lineup debug actors`) and
  audited `tool_report.late` at most once per app every ten seconds. A deadline
  operation's life is its deadline instead (`_deadlines`).
- **Changes under a call.** Disable, remove and update end the app's open calls with
  `app_disabled`, `app_not_installed` and `app_version_mismatch`; a running call whose app
  has no live instance left ends `handler_failed`. A cancel from the call's agent ends an
  open call `cancelled_by_user` and tells the app (`app.tool.cancel`); a finished call's
  outcome is sent again. The user's stop of an open call in the chat ends it the same way,
  naming the user.
- **The chat shows every accepted call**: `app.tool.event` to `app.chat` at each step (its
  state, progress and code, and for a deadline operation its timer as data; several held
  for one sync go as one `app.tool.events`, `_steps`), a timeline item updated in place
  and a task in the Interaction App's view model (`apps/sdk/_view.py`).
- **Reports.** The tool router takes a report only from the process of the call's app
  (`ownership_mismatch` otherwise, audited at most once per sender every ten seconds, with
  the count since the last, and never waited for: a flood costs other apps' calls
  nothing), keeps an app's error code only if it is one an app may use, and checks a
  result against the tool's `output_schema`: a violation ends the call `handler_failed`,
  audited, and the output is never relayed. So does an output the agent's final envelope
  cannot carry (it sits two levels deeper there than in the report, within the envelope's
  32 levels and 256 KiB): the call ends at once, never left open.
- **Artifacts.** A result naming an artifact is relayed only with the store's reference to
  one of the calling app's own (`_artifacts`).
- **Schemas.** Tool schemas are an app's input, checked on this actor's loop, so a check
  is bounded in time (`contracts/_schema_check.py`): a schema that could not be is
  refused at build, install and launch, and a check of arguments or output past its budget
  ends the call `invalid_arguments` or `handler_failed` at once.
"""

from typing import TYPE_CHECKING

from actors.kernel import lazy_exports

# Each name loads on first use: the command line's reads import neither trio nor the
# contracts' models.
_LAZY = {
    "DB_FILE": "._db",
    "POLICY_FILE": "._policy",
    "ToolRouterActor": "._actor",
    "open_db": "._db",
    "read_inventories": "._reads",
    "read_tool_calls": "._reads",
    "read_tool_calls_about": "._reads",
    "read_tool_deadlines": "._reads",
}

if TYPE_CHECKING:
    from ._actor import ToolRouterActor
    from ._db import DB_FILE, open_db
    from ._policy import POLICY_FILE
    from ._reads import (
        read_inventories,
        read_tool_calls,
        read_tool_calls_about,
        read_tool_deadlines,
    )

__getattr__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "DB_FILE",
    "POLICY_FILE",
    "ToolRouterActor",
    "open_db",
    "read_inventories",
    "read_tool_calls",
    "read_tool_calls_about",
    "read_tool_deadlines",
]
