"""The capability gateway actor: the one way an app gets a system effect.

A request (`capability_gateway.request`, a call from an app process) is checked in a fixed
order, and the first check that fails is its outcome: the capability is declared in the
app's manifest, the app is enabled (else `permission_denied`); this host serves it
(`unsupported_on_host`); the app is in the foreground when the capability needs it
(`permission_denied`); the policy allows it (`policy_denied`); the app has not asked too
often (`failed`, code `rate_limited`); its input has the capability's shape (`failed`, code
`invalid_payload`). Then the user decides, unless a grant of theirs covers it: a consent
card in the chat (`app.capability.consent`), answered once / for this session / always /
deny (`permission_denied`), dismissed (`cancelled_by_user`), left unanswered until the
request's deadline (`expired`) or taken back by its app, whose call that asked ended first
(`capability_gateway.withdraw`: `failed`, code `withdrawn`). Then the provider runs.

Every step is one transaction of the gateway's own file with its audit rows (`_db`), which
go to the store after the commit (`store.audit`); the effect is recorded as started before
it runs, so a gateway killed after an effect and
before its record finds the request started at its next start: an effect that is safe to
repeat runs again (`file.save` writes the same file), any other ends `in_doubt`, never run
twice. The app's call is answered when the outcome is recorded; while the user decides the
request waits in the gateway's file, not in the mailbox (`REPLY_LATER`), so other requests
go on.

An app's refusals are written one by one while it has had few (`REFUSALS_KEPT`, then one a
second); past that they are counted and written as one audit row
(`capability.refusals_unrecorded`), so a flood of bad requests costs the store little and
the other apps' requests nothing. Such a refusal keeps no row: asked again, it is decided
again.

The checks' details: the capability is declared in the manifest's `capabilities`; the
providers that need the foreground are `file.save`, `file.open`, `clipboard.write` and
`audio.record` (its instance on top of the focus stack); the policy is the `capabilities`
section of `tool_policy.json` (`_policy`: `"deny": ["*/speech.*"]` keeps speech from every
app); the rate is a token bucket per app and capability (`_rates`, 10 at once and 30 a
minute by default). Each refusal is one audit row (`capability.<code>`, source
`capability_gateway`, the request's key as `message_id`) and the request's final row. The
app's scope is the sender the supervisor stamped; a body naming another app is not a body
the gateway's door takes. The gateway answers the app's call with `Actor.reply` once the
outcome is recorded, also after its own restart (the caller and the request's kernel id
are in the row). An effect run once is tested with the crash point
`capability_gateway.after_effect`.
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Final

import trio

from actors.app_manager.registry import RegistryReader
from actors.kernel import (
    REPLY_LATER,
    Actor,
    CallFailed,
    Message,
    derive_id,
    handles,
    new_id,
)
from contracts import SCOPE_CHAT, CapabilityResult, Code, ContractError

from ._apps import AppFacts, app_facts
from ._artifact_save import ArtifactSaves
from ._db import GatewayFile
from ._effects import Effects
from ._file_open import CHOSEN_BY_THE_USER, FileChoices, chooser_of
from ._files import Folder, user_downloads
from ._migration import move_from_runtime_db
from ._notifications import NOTIFY, PAGES, desktop_service
from ._places import saved_by
from ._policy import load_policy, parse_section
from ._provider_base import Provider
from ._providers import CHOSEN_BY, clipboard_command, host_providers, written_by
from ._rates import RateLimiter
from ._recording import ASKED_EACH_TIME, RECORD, Recordings, recorder_card
from ._requests import Pending, audit_row, finished_row, now_ms, result_of
from ._speech import SERVED_BY as SPEECH_SERVED_BY
from ._talk import CHAT_OWN, CHAT_OWN_WHY, Talks, is_talk
from .door import DOOR, Consent, NoFields, PolicySection, Request, Revoke, Withdraw

log = logging.getLogger("lineup.capability_gateway")

DEFAULT_TIMEOUT_MS: Final = 60_000
KEEP_FINISHED_S: Final = 7 * 24 * 3600  # a finished request's row, after which it goes
REFUSALS_KEPT: Final = 20  # refusals of one app written one by one before they are counted
REFUSALS: Final = "refusals"  # the refusal budget's key beside the app's scope
CARD_OPEN, CARD_CLOSED = 1, 2  # the slots of a request's two messages to the chat
_CHAT: Final = f"app.{SCOPE_CHAT}"
# Why a request ends without its effect: (status, code for the app, audit code, detail).
Refusal = tuple[CapabilityResult, str | None, str, str]


class CapabilityGatewayActor(Talks, Recordings, FileChoices, ArtifactSaves, Effects, Actor):
    door = DOOR

    async def on_start(self) -> None:
        self.data_dir = Path(str(self.config.get("data_dir", ".")))
        # The app manager's registry, read-only, one reader at a time (`registry`).
        self.registry_reader = RegistryReader(self.data_dir)
        self.registry_reading = trio.Lock()
        self.core = {str(m["app_scope"]): m for m in self.config.get("core_apps", [])}
        # Where a file.save ends when no page takes it: the user's downloads folder where
        # the runtime is the user's (`lineup run`), else the runtime's own downloads.
        user = self.config.get("downloads") == "user"
        self.env = dict(os.environ)
        self.folder = user_downloads(self.env) if user else Folder.runtime(self.data_dir)
        # A notification goes to an open page through the web host, where there is one, a
        # saved file to the page that shows its conversation, and a page records for an app
        # (`_recording`).
        self.web_host: str | None = self.config.get("web_host") or None
        page = self._ask_web_host if self.web_host else None
        hand_over = self._hand_over if self.web_host else None
        self.providers: dict[str, Provider] = host_providers(
            self.data_dir, self.env, page=page, hand_over=hand_over, folder=self.folder
        )
        self._start_recordings()
        self.rates = RateLimiter.from_config(self.config.get("rate_limit"))
        # An app's refusals are each written while it has few; past that, counted and written
        # as one row a second at most, so a flood of bad requests costs the store little.
        self.refusals = RateLimiter(burst=REFUSALS_KEPT, per_minute=60.0)
        self.unrecorded: dict[str, int] = {}
        self.call_timeout = float(self.config.get("call_timeout", 2.0))
        self.keep_finished_s = float(self.config.get("keep_finished_s", KEEP_FINISHED_S))
        self.open: dict[str, Pending] = {}
        # Set when a request starts asking or a refusal goes uncounted: the deadline watch
        # then looks again, else it sleeps until the nearest deadline.
        self.due_changed = trio.Event()
        self.grants: dict[tuple[str, str], dict[str, Any]] = {}
        self.counts = {status.value: 0 for status in CapabilityResult}
        # Its own file: requests, grants and the audit rows not yet handed to the store.
        self.file = GatewayFile(self.data_dir)
        move_from_runtime_db(self.file.db, self.data_dir)
        self.loaded = trio.Event()
        self.nursery.start_soon(self._load)

    async def _ask_web_host(self, body: dict[str, Any]) -> dict[str, Any]:
        """The web host's answer to `web_host.notify`: whether an open page showed it. Its
        own deadline is in the body; this waits a second past it."""
        wait = max(0.0, body["deadline_ms"] / 1000 - time.time()) + 1.0
        return dict(await self.call(str(self.web_host), NOTIFY, body, timeout=wait))

    def statistics_extra(self) -> dict[str, Any]:
        return {
            "serves": sorted(self.providers),
            "open": len(self.open),
            "grants": len(self.grants),
            "recordings": self.recordings_now() if hasattr(self, "recordings") else {},
            **self.counts,
        }

    async def registry(self) -> dict[str, Any]:
        """The app registry as the app manager last committed it (read for each request, so
        that a request is judged as its app is now)."""
        async with self.registry_reading:
            return await trio.to_thread.run_sync(self.registry_reader.apps)

    async def store(self, type_: str, body: dict[str, Any]) -> Any:
        return await self.call_until_answered(
            "store", type_, body, id=new_id(), max_timeout=self.call_timeout
        )

    async def write(self, body: dict[str, Any]) -> dict[str, Any]:
        """One step into the gateway's own file (`GatewayFile.write`): what follows (an
        effect, an answer) comes after its commit. Then its audit rows go to the store."""
        written = self.file.write(body)
        await self._hand_audit(written.audit)
        return {"revoked": written.revoked}

    async def _hand_audit(self, audit: list[tuple[str, dict[str, Any]]]) -> None:
        """Hand each audit row to the store under its own id, waited for, then forget it:
        what follows (the app's answer) comes after its audit row is kept, and a row sent
        twice (a crash in between) is kept once."""
        for key, body in audit:
            await self.call_until_answered(
                "store", "store.audit", body, id=key, max_timeout=self.call_timeout
            )
        if audit:
            self.file.audit_handed([key for key, _ in audit])

    async def _load(self) -> None:
        await self._hand_audit(self.file.unhanded_audit())
        state = self.file.load()
        # A session grant lasts as long as this run of the runtime; a finished request is
        # kept for a while (asked again with its id, it gets its outcome), then forgotten.
        forget_before = now_ms() - int(self.keep_finished_s * 1000)
        await self.write({"end_sessions": self.boot_id, "forget_before": forget_before})
        self.grants = {
            (g["app_scope"], g["capability"]): g
            for g in state["grants"]
            if g["scope"] != "session" or g["boot"] == self.boot_id
        }
        for row in state["requests"]:
            # A push-to-talk recording has no caller: the chat is handed it (`_talk`).
            waiting = [(row["caller"], row["kernel_id"])] if row["caller"] else []
            pending = Pending(row, waiting)
            if row["state"] == "asking":
                self.open[row["request_id"]] = pending
                await self._card(row, "asking")
            else:  # started before a crash: repeated if that is safe, else in doubt
                await self._resume(pending)
        self.loaded.set()
        self.nursery.start_soon(self._watch_deadlines)

    # -- requests ---------------------------------------------------------------------------

    @handles("capability_gateway.request")
    async def request(self, msg: Message[Request]) -> Any:
        await self.loaded.wait()
        if not msg.sender.startswith("app."):  # the operator is no app: nothing to ask for
            raise ContractError(Code.SENDER_NOT_ALLOWED, "only an app asks for a capability")
        body = msg.body
        scope = msg.sender.removeprefix("app.")
        key = f"{scope}/{body['request_id']}"
        pending = self.open.get(key)
        if pending is not None:  # asked again while the user decides: answered with it
            pending.wait(msg.sender, msg.id)
            return REPLY_LATER
        stored = self.file.request(key)
        if stored is not None:  # decided already: the same outcome again, never a second run
            return result_of(stored)
        facts = app_facts(await self.registry(), scope, self.core)
        created = now_ms()
        row: dict[str, Any] = {
            "request_id": key,
            "app_scope": scope,
            "capability": str(body["capability"]),
            "purpose": str(body["purpose"]),
            "input": body.get("input"),
            "prepared": None,
            "conversation_id": facts.conversation_id,
            "caller": msg.sender,
            "kernel_id": msg.id,
            "state": "asking",
            "status": None,
            "code": None,
            "output": None,
            "created_ms": created,
            "deadline_ms": created + int(body.get("timeout_ms") or DEFAULT_TIMEOUT_MS),
            "updated_ms": created,
        }
        refusal = self._refusal(row, facts)
        if refusal is not None:
            status, code, audit_code, detail = refusal
            finished = finished_row(row, status, code)
            self.counts[status.value] += 1
            if not self.refusals.take(scope, REFUSALS):  # a flood: counted, not written
                self.unrecorded[scope] = self.unrecorded.get(scope, 0) + 1
                self.due_changed.set()
                return result_of(finished)
            audit = [audit_row(audit_code, row, detail), *self._unrecorded(scope)]
            await self.write({"insert": finished, "audit": audit})
            return result_of(finished)
        if scope == SCOPE_CHAT and row["capability"] in CHAT_OWN:
            return await self._start(row, CHAT_OWN_WHY)
        grant = self.grants.get((scope, row["capability"]))
        if (
            grant is not None
            and grant["scope"] in ("session", "always")
            and row["capability"] not in CHOSEN_BY_THE_USER | ASKED_EACH_TIME
        ):
            return await self._start(row, f"allowed by the user's {grant['scope']} grant")
        await self.write(
            {"insert": row, "audit": [audit_row("consent_asked", row, "the user is asked")]}
        )
        self.open[key] = Pending(row, [(msg.sender, msg.id)])
        self.due_changed.set()
        await self._card(row, "asking")
        return REPLY_LATER

    def _refusal(
        self, row: dict[str, Any], facts: AppFacts, *, pressed: bool = False
    ) -> Refusal | None:
        """The first check the request fails, in the contract's order, or None. `pressed`:
        the user started it in the page (the chat's push-to-talk), whatever app is in front,
        so the foreground rule does not apply."""
        capability, scope = row["capability"], row["app_scope"]
        denied = CapabilityResult.PERMISSION_DENIED
        if not facts.installed or capability not in facts.capabilities:
            return denied, None, "permission_denied", "not declared in the app's manifest"
        if not facts.enabled:
            return denied, None, "permission_denied", "the app is disabled"
        provider = self.providers.get(capability)
        if provider is None:
            return (
                CapabilityResult.UNSUPPORTED_ON_HOST,
                None,
                "unsupported_on_host",
                "this host does not offer it",
            )
        if provider.foreground and not facts.foreground and not pressed:
            return denied, None, "permission_denied", "it needs the app in the foreground"
        why = load_policy(self.data_dir).refuses(scope, capability)
        if why is not None:
            return CapabilityResult.POLICY_DENIED, None, "policy_denied", why
        if not self.rates.take(scope, capability):
            limited = str(Code.RATE_LIMITED)
            return CapabilityResult.FAILED, limited, limited, "asked too often; try later"
        try:
            provider.check(row["input"])
        except ContractError as exc:
            return CapabilityResult.FAILED, str(exc.code), str(exc.code), exc.detail
        return None

    # -- the user's answer --------------------------------------------------------------------

    @handles("capability_gateway.withdraw")
    async def withdraw(self, msg: Message[Withdraw]) -> None:
        """An app takes back a request of its own that the user has not answered: the call
        that asked ended first (cancelled, or cut short by the app's restart). Its card
        closes and it ends `failed`, code `withdrawn`, so that a late answer starts nothing
        that nobody waits for. One answered already goes on: its effect may have begun; but a
        recording under way stops there and nothing of it is kept (`failed`, `withdrawn`)."""
        await self.loaded.wait()
        if not msg.sender.startswith("app."):  # a request is an app's: so is taking it back
            raise ContractError(Code.SENDER_NOT_ALLOWED, "only an app takes back its request")
        scope = msg.sender.removeprefix("app.")
        key = f"{scope}/{msg.body['request_id']}"
        if key in self.recordings:  # nobody waits for it now: it stops, and nothing is kept
            await self._drop_recording(key, "taken back by the app: the call that asked ended")
            return
        pending = self.open.get(key)
        if pending is None or pending.row["state"] != "asking":
            return
        row = pending.row
        row["state"] = "deciding"  # before any await: no answer or deadline applies now
        finished = finished_row(row, CapabilityResult.FAILED, str(Code.WITHDRAWN))
        audit = audit_row("withdrawn", row, "taken back by the app: the call that asked ended")
        await self.write({"requests": [finished], "audit": [audit]})
        self.counts[CapabilityResult.FAILED.value] += 1
        await self._settle(pending, result_of(finished), "withdrawn")

    @handles("capability_gateway.consent")
    async def consent(self, msg: Message[Consent]) -> None:
        await self.loaded.wait()
        key, answer = str(msg.body["request_id"]), str(msg.body["answer"])
        pending = self.open.get(key)
        if pending is None or pending.row["state"] != "asking":
            log.info("an answer to %s, which is not waiting for one, is ignored", key)
            return
        row = pending.row
        if answer not in ("deny", "dismiss") and row["capability"] in CHOSEN_BY_THE_USER:
            log.info("%s waits for the user's choice, not an allow: %s is ignored", key, answer)
            return
        if row["capability"] in ASKED_EACH_TIME and answer not in ("once", "deny", "dismiss"):
            log.info("%s is asked each time: the answer %s is ignored", key, answer)
            return
        if row["capability"] == RECORD and answer == "once":
            await self._record_in_terminal(pending)  # the terminal's yes: recorded here
            return
        row["state"] = "deciding"  # before any await: the deadline no longer applies
        changed = None if answer in ("deny", "dismiss") else await self._changed_since(row)
        if changed is not None:
            status, why = changed
            finished = finished_row(row, status, None)
            await self.write({"requests": [finished], "audit": [audit_row(str(status), row, why)]})
            self.counts[status.value] += 1
            result = result_of(finished)
        elif answer in ("deny", "dismiss"):
            status = (
                CapabilityResult.PERMISSION_DENIED
                if answer == "deny"
                else CapabilityResult.CANCELLED_BY_USER
            )
            finished = finished_row(row, status, None)
            detail = "the user denied it" if answer == "deny" else "the user dismissed it"
            await self.write(
                {"requests": [finished], "audit": [audit_row(f"consent_{answer}", row, detail)]}
            )
            self.counts[status.value] += 1
            result = result_of(finished)
        else:
            grant = {
                "app_scope": row["app_scope"],
                "capability": row["capability"],
                "scope": answer,
                "boot": self.boot_id,
                "granted_ms": now_ms(),
            }
            self.grants[(row["app_scope"], row["capability"])] = grant
            result = await self._start(row, f"allowed {answer} by the user", grant=grant)
        await self._settle(pending, result, "answered")

    async def _changed_since(self, row: dict[str, Any]) -> tuple[CapabilityResult, str] | None:
        """What changed while the user decided that refuses the request even so: the app
        removed, disabled or updated to a manifest without the capability, or the policy
        now denying it. (The foreground is not asked again: the user answered in the chat.)"""
        facts = app_facts(await self.registry(), row["app_scope"], self.core)
        if not facts.installed or row["capability"] not in facts.capabilities:
            return CapabilityResult.PERMISSION_DENIED, "no longer declared by the app"
        if not facts.enabled:
            return CapabilityResult.PERMISSION_DENIED, "the app was disabled meanwhile"
        why = load_policy(self.data_dir).refuses(row["app_scope"], row["capability"])
        if why is not None:
            return CapabilityResult.POLICY_DENIED, why
        return None

    @handles("capability_gateway.revoke")
    async def revoke(self, msg: Message[Revoke]) -> Any:
        """The user takes a grant back (`lineup capabilities revoke`): `revoked` says how
        many there were (0 or 1)."""
        await self.loaded.wait()
        scope, capability = str(msg.body["app_scope"]), str(msg.body["capability"])
        if self.grants.pop((scope, capability), None) is None:
            return {"revoked": 0}  # nothing to take back, nothing decided
        audit = {
            "code": "capability.grant_revoked",
            "detail": f"{capability} for {scope}: revoked by the user",
            "message_id": msg.id,
        }
        reply = await self.write(
            {"revoke": {"app_scope": scope, "capability": capability}, "audit": [audit]}
        )
        return {"revoked": int(reply["revoked"])}

    @handles("capability_gateway.policy.check")
    async def policy_check(self, msg: Message[PolicySection]) -> Any:
        """Whether a capabilities section can be used, for the tool router before it writes
        a new policy file: `problem` names the first one (null: none), so a broken section
        is refused rather than written to refuse every capability."""
        try:
            parse_section(msg.body["section"])
        except ValueError as exc:
            return {"problem": str(exc)}
        return {"problem": None}

    @handles("capability_gateway.providers")
    async def providers_now(self, msg: Message[NoFields]) -> Any:
        """What would serve each capability if asked now, for the user's settings:
        `providers` [{`capability`, `by`}]; a capability this host does not serve is not
        listed (it is `unsupported_on_host`)."""
        pages = await self._open_pages()
        by = {"file.open": CHOSEN_BY, "file.save": self._save_route(pages), **SPEECH_SERVED_BY}
        clipboard = clipboard_command(self.env)
        if clipboard is not None:
            by["clipboard.write"] = written_by(clipboard)
        by["notification.show"] = await self._notification_route(pages)
        if RECORD in self.providers:
            by[RECORD] = self.recorded_by()
        return {"providers": [{"capability": c, "by": by[c]} for c in sorted(self.providers)]}

    async def _open_pages(self) -> int:
        """How many pages of the web host are open now (0: none, or no web host)."""
        if not self.web_host:
            return 0
        try:
            return int((await self.call(self.web_host, PAGES, {}, timeout=2.0))["pages"])
        except CallFailed as exc:
            log.info("the web host did not say how many pages are open: %s", exc)
            return 0

    def _save_route(self, pages: int) -> str:
        """Where a file.save would go now: the page that shows its app's conversation, if
        one is open, else the gateway's folder."""
        folder = saved_by(self.folder)
        if pages:
            return f"downloaded by an open page showing the app's conversation, else {folder}"
        return folder

    async def _notification_route(self, pages: int) -> str:
        service = await desktop_service(self.env)
        if service is not None:
            return f"the desktop's notification service ({service})"
        if pages:
            return f"an open page of the web host ({pages} open)"
        return "the terminal chat, with the bell (no desktop service, no page open)"

    @handles("capability_gateway.grants")
    async def grants_in_force(self, msg: Message[NoFields]) -> Any:
        """The grants in force, for the user's settings app: `grants` [{app_scope,
        capability, scope, granted_ms}], by app and capability."""
        await self.loaded.wait()
        fields = ("app_scope", "capability", "scope", "granted_ms")
        rows = [{k: grant.get(k) for k in fields} for _, grant in sorted(self.grants.items())]
        return {"grants": rows}

    def _unrecorded(self, scope: str) -> list[dict[str, Any]]:
        """The audit row that counts an app's refusals left unwritten, if there were any."""
        count = self.unrecorded.pop(scope, 0)
        if not count:
            return []
        detail = f"{scope}: {count} more requests refused, each not recorded (too many)"
        return [{"code": "capability.refusals_unrecorded", "detail": detail, "message_id": None}]

    async def _watch_deadlines(self) -> None:
        """Expire each request the user did not answer by its deadline, and write a flood's
        uncounted refusals (one row a second at most). Scheduled by the nearest due time:
        an idle gateway sleeps until something starts asking."""
        while True:
            self.due_changed = trio.Event()
            await self._expire_due()
            now = now_ms()
            due = [p.row["deadline_ms"] for p in self.open.values() if p.row["state"] == "asking"]
            wait = (min(due) - now) / 1000 if due else math.inf
            if self.unrecorded:  # the refusal budget refills: count again within a second
                wait = min(wait, 1.0)
            with trio.move_on_after(max(wait, 0.0)):
                await self.due_changed.wait()

    async def _expire_due(self) -> None:
        for scope in list(self.unrecorded):  # a flood that ended is counted once it has
            if self.refusals.take(scope, REFUSALS):
                await self.write({"audit": self._unrecorded(scope)})
        now = now_ms()
        for pending in list(self.open.values()):
            row = pending.row
            if row["state"] != "asking" or row["deadline_ms"] > now:
                continue
            row["state"] = "deciding"
            finished = finished_row(row, CapabilityResult.EXPIRED, None)
            audit = audit_row("expired", row, "the user did not answer before its deadline")
            await self.write({"requests": [finished], "audit": [audit]})
            self.counts[CapabilityResult.EXPIRED.value] += 1
            await self._settle(pending, result_of(finished), "expired")

    async def _settle(self, pending: Pending, result: dict[str, Any], how: str) -> None:
        """The card closed, every waiter answered, the request no longer open."""
        self.open.pop(pending.row["request_id"], None)
        await self._card(pending.row, "closed", outcome=how)
        for caller, kernel_id in pending.waiters:
            await self.reply(caller, kernel_id, result)

    async def _card(
        self, row: dict[str, Any], state: str, outcome: str | None = None, slot: int = 0
    ) -> None:
        """The consent card in the chat: opened, or closed with how it ended (a recording's
        card says again, in `slot`, how it ended after it closed). Its ids derive from the
        request's key, so each is sent once whatever replays. A push-to-talk recording has
        no card: the user asked for it."""
        if is_talk(row["request_id"]):
            return
        body = {
            "request_id": row["request_id"],
            "conversation_id": row["conversation_id"],
            "app_scope": row["app_scope"],
            "capability": row["capability"],
            "purpose": row["purpose"],
            "deadline_ms": row["deadline_ms"],
            "state": state,
        }
        if outcome is not None:
            body["outcome"] = outcome
        chooser = chooser_of(row) if state == "asking" else None
        if chooser is not None:
            body["chooser"] = chooser
        if row["capability"] == RECORD and state == "asking":
            body["recorder"] = recorder_card(row["input"])
        slot = slot or (CARD_OPEN if state == "asking" else CARD_CLOSED)
        await self.cast(
            _CHAT, "app.capability.consent", body, id=derive_id(row["request_id"], slot)
        )
