"""The hostile app against the capability gateway, beside the keeper (both installed from
signed bundles through the CLI) waiting on the user's consent. The hostile app must not
answer the keeper's consent card or take it back, put a card of its own in the chat, ask in
the keeper's name, see or take back the user's grants, get a capability it did not declare,
or hand a "chosen" file to a request or to itself. An app that declares `file.open` cannot
ask past the runtime's size cap, and learns of the file the user chose its name and bytes,
never where it was. The notification it declares it shows only once the user allowed it,
within its rate, and as text on a real desktop (a session bus with dunst, read back from
dunst); it has nothing but a recording of its own transcribed, even once the user allowed
it; the microphone it declares it gets neither from behind another app, past the runtime's
cap, nor without the user's yes. Every assertion reads an independent record: runtime.db
(requests, grants, audit), mailbox.db, the chat's own log, dunst's history."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.sax.saxutils import escape

import trio

from apps.chat import history, read_default_mode
from contracts import FILE_OPEN_MAX_BYTES
from lineup.ui_session import UiSession
from tests.capabilities.conftest import keeper  # noqa: F401 - the signed keeper bundle
from tests.capabilities.helpers import answer, ask, asked, card_for, cards, keeper_ready, outcome
from tests.capabilities.helpers import requests as gateway_requests
from tests.desktop import Desktop, desktop
from tests.installed.helpers import focus_stack, wait_foreground
from tests.runtime.helpers import wait_for
from tests.tools.helpers import Agent

from .app._capability_attacks import MARKUP
from .conftest import Hostile

FLOOD = 1_000  # refused requests, each under an id of its own: 50 times the 20 written one by one
FLOODED = 15  # notifications asked for at once, past the rate of 10 at once


async def test_an_app_cannot_answer_anothers_consent_reach_the_grants_or_misuse_its_capabilities(
    hostile: Hostile,
    keeper: tuple[Path, Path],  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    with desktop(tmp_path / "desktop") as shown:
        # A host with a sound server: the microphone is served (no request gets so far as
        # to record here).
        env = {"DBUS_SESSION_BUS_ADDRESS": shown.bus, **sound_server(tmp_path)}
        agent = await keeper_ready(hostile.stack, keeper, env=env)
        await forged_consent_is_refused(hostile, agent)
        await speech_is_of_its_own_recordings_only(hostile, agent)
        await notifications_wait_for_the_user_and_keep_their_rate(hostile, shown)
        await _microphone_misused(hostile, agent)


def sound_server(folder: Path) -> dict[str, str]:
    """The environment of a host with a sound server and its recorder on PATH (`parec`),
    which the gateway looks for before it serves the microphone."""
    tools = folder / "tools"
    tools.mkdir()
    recorder = tools / "parec"
    recorder.write_text("#!/bin/sh\nexec cat /dev/zero\n")
    recorder.chmod(0o755)
    return {"PULSE_SERVER": "unix:/nonexistent", "PATH": f"{tools}:{os.environ['PATH']}"}


async def forged_consent_is_refused(hostile: Hostile, agent: Agent) -> None:
    stack = hostile.stack
    await hostile.install(
        {
            "attacks": [
                "forge_consent",
                "misuse_speech",
                "notify_markup_and_flood",
                "misuse_microphone",
            ]
        }
    )
    await hostile.launch()
    await ask(agent, "h-1", "notification.show", {"text": "from the keeper"})
    victim = await card_for(stack, "notification.show")

    hostile.order("forge_consent", {"request_id": victim})
    result = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("forge_consent"),
        60,
        "the hostile app's capability attacks",
    )
    assert "raised" not in result, result
    # Only the chat app (and the host) may carry the user's answer, only the gateway opens
    # cards, only the settings app and the operator see the grants: refused at the door.
    for attack in ("consent", "card", "grants", "revoke", "file chosen", "chosen artifact"):
        assert result[attack] == "refused:sender_not_allowed", (attack, result)
    # Its scope is the sender the supervisor stamped: a body naming another app is refused.
    assert result["as keeper"].startswith("refused:invalid_payload"), result
    # It may take back its own requests only: the keeper's id names none of its own, and
    # the keeper's key is no request id at all.
    assert result["withdraw"] == "accepted:null", result
    assert result["withdraw key"] == "refused:invalid_payload", result
    # What its own manifest does not declare, it does not get; that is audited as its own.
    for attack in ("undeclared", "file undeclared"):
        undeclared = json.loads(result[attack].removeprefix("accepted:"))
        assert undeclared == {"status": "permission_denied", "output": None}, attack
    # Through the SDK, an input that is no value or too large is a status and a code.
    assert result["unpackable"] == {"status": "failed", "output": None, "code": "invalid_payload"}
    assert result["too large"] == {"status": "failed", "output": None, "code": "too_large"}

    # The keeper's card is still the user's to answer: no forged answer reached the gateway.
    assert [c["interaction_id"] for c in cards(stack)] == [victim]
    refused_types = {
        row[0]
        for row in hostile.mailbox_rows(
            "SELECT type FROM messages WHERE sender = 'app.hostile'"
            " AND recipient IN ('capability_gateway', 'app.chat')"
        )
    }
    # The rest was never stored.
    assert refused_types == {"capability_gateway.request", "capability_gateway.withdraw"}
    answer(stack, victim, "deny")
    assert (await outcome(stack, "h-1"))["status"] == "permission_denied"
    assert hostile.gateway_rows("SELECT * FROM capability_grants") == []
    assert hostile.runtime_rows("SELECT * FROM artifacts WHERE app_scope = 'hostile'") == []
    by_app = {(r["request_id"].split("/")[0], r["status"]) for r in gateway_requests(stack)}
    assert by_app == {("keeper", "permission_denied"), ("hostile", "permission_denied")}
    audited = [a for a in stack.audit() if a["source"] == "capability_gateway"]
    assert any(
        a["message_id"].startswith("hostile/") and "not declared" in a["detail"] for a in audited
    )
    await _a_file_asks_within_the_cap_and_gets_no_path(agent)


async def _a_file_asks_within_the_cap_and_gets_no_path(agent: Agent) -> None:
    """The keeper (which declares `file.open`) asks past the runtime's cap: refused before
    the user is asked. Within it, the user's file reaches it as bytes and a name made safe,
    whatever path the user's side named it by."""
    stack = agent.stack
    over = {"max_bytes": FILE_OPEN_MAX_BYTES + 1}
    assert await asked(agent, "h-2", "file.open", input=over, front=True) == {
        "status": "failed",
        "output": None,
        "code": "invalid_payload",
    }
    await ask(agent, "h-3", "file.open", {"accept": [".txt"]}, front=True)
    card = await card_for(stack, "file.open")
    chosen = {
        "request_id": card,
        "name": "/home/someone/secret plans/notes.txt",
        "media_type": "",
        "data": b"the plan",
    }
    UiSession(stack.data_dir, session_id="test").choose_file(chosen)
    opened = await outcome(stack, "h-3")
    assert opened["status"] == "completed", opened
    reference = opened["output"]["artifact"]
    assert set(reference) == {"artifact_id", "title", "media_type", "size"}
    assert reference["title"] == "notes.txt"
    assert "someone" not in json.dumps(opened)


async def speech_is_of_its_own_recordings_only(hostile: Hostile, agent: Agent) -> None:
    """The keeper's recording is not the hostile app's to transcribe, even with the user's
    grant; nor is its own text, nor bytes it calls a WAV; speak it did not declare."""
    stack = hostile.stack
    await ask(agent, "h-speak", "speech.speak", {"text": "twenty five"})
    answer(stack, await card_for(stack, "speech.speak"), "once")
    spoken = await outcome(stack, "h-speak")
    hostile.order("misuse_speech", {"artifact_id": spoken["output"]["artifact"]["artifact_id"]})
    answer(stack, await card_for(stack, "speech.transcribe"), "always")
    speech = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("misuse_speech"),
        60,
        "the hostile app's speech attacks",
    )
    failed = {"status": "failed", "output": None}
    assert speech["another's"] == {**failed, "code": "artifact_not_found"}, speech
    assert speech["text"] == {**failed, "code": "invalid_payload"}, speech
    assert speech["fake wav"] == {**failed, "code": "invalid_payload"}, speech
    assert speech["as keeper"] == {**failed, "code": "invalid_payload"}, speech
    assert speech["speak"] == {"status": "permission_denied", "output": None}, speech
    assert speech["keep"] == "refused:sender_not_allowed", speech
    kept = hostile.runtime_rows("SELECT app_scope, media_type FROM artifacts ORDER BY rowid")
    # The keeper's: the file the user chose for it, then its recording.
    assert kept == [
        ("keeper", "text/plain"),
        ("keeper", "audio/wav"),
        ("hostile", "audio/wav"),
        ("hostile", "text/plain"),
    ]


async def notifications_wait_for_the_user_and_keep_their_rate(
    hostile: Hostile, shown: Desktop
) -> None:
    """A capability it declares, misused: markup in a notification, and more
    notifications at once than its rate allows."""
    stack = hostile.stack
    hostile.order("notify", {"count": FLOODED})
    card = await card_for(stack, "notification.show")
    # Declared is not allowed: nothing reaches the desktop before the user says yes.
    assert await trio.to_thread.run_sync(shown.shown) == []
    answer(stack, card, "session")
    result = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("notify_markup_and_flood"),
        60,
        "the hostile app's notifications",
    )
    assert result["markup"] == {"status": "completed", "output": {"shown": True}}, result
    # Past its rate (10 at once) the rest are refused before anything is shown.
    flood = result["flood"]
    completed, limited = flood.count("completed"), flood.count("rate_limited")
    assert completed + limited == FLOODED and limited >= FLOODED - 10, result
    notes = await trio.to_thread.run_sync(shown.shown, "summary", "body", "message")
    assert len(notes) == 1 + completed
    # The summary is plain text (dunst quotes it); the body is escaped, as dunst reads markup
    # in bodies: what it draws has no tag of the app's, only its own bold around the summary.
    marked = notes[0]
    assert marked["summary"] == f"Hostile: {MARKUP['title']}"
    assert marked["body"] == escape(MARKUP["text"])
    assert marked["message"] == f"<b>{escape(marked['summary'])}</b>\n{marked['body']}"


async def test_a_flood_of_refused_requests_costs_the_store_little_and_others_nothing(
    hostile: Hostile,
    keeper: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    stack = hostile.stack
    agent = await keeper_ready(stack, keeper)
    await hostile.install({"attacks": ["flood_requests"], "flood_requests": {"count": FLOOD}})
    await hostile.launch()
    # While the flood goes on, the keeper's request reaches the user and is answered.
    await ask(agent, "f-1", "notification.show", {"text": "through the flood"})
    answer(stack, await card_for(stack, "notification.show"), "once")
    assert (await outcome(stack, "f-1"))["status"] == "completed"
    result = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("flood_requests"),
        120,
        "the hostile app's flood",
    )
    assert result["sent"] == FLOOD, result

    def counted() -> int:
        written = hostile.gateway_rows(
            "SELECT COUNT(*) FROM capability_requests WHERE app_scope = 'hostile'"
        )[0][0]
        summaries = [
            a["detail"] for a in stack.audit() if a["code"] == "capability.refusals_unrecorded"
        ]
        unwritten = sum(int(d.split(": ")[1].split(" ")[0]) for d in summaries)
        return int(written + unwritten)

    # Every request is accounted for: a row each for the first few, a count for the rest.
    await wait_for(lambda: counted() == FLOOD, 60, "every refused request accounted for")
    written = hostile.gateway_rows(
        "SELECT COUNT(*) FROM capability_requests WHERE app_scope = 'hostile'"
    )[0][0]
    assert written < FLOOD // 10, written


async def _microphone_misused(hostile: Hostile, agent: Agent) -> None:
    """The keeper cannot record undeclared; the hostile app cannot from the background,
    past the cap, without the user's yes, or speak for the user's side of a recording; nor
    can it switch the chat's voice mode, talk in the user's place, or have the chat speak."""
    stack = hostile.stack
    # The keeper never declared the microphone: it does not get it.
    assert await asked(agent, "m-1", "audio.record", input={"max_seconds": 5}) == {
        "status": "permission_denied",
        "output": None,
    }

    # The hostile app, behind the chat, asks: refused for the background.
    instance = await wait_foreground(stack, "hostile:")
    await hostile.app("focus", next(i for i in focus_stack(stack) if i.startswith("chat:")))
    await wait_foreground(stack, "chat:")
    hostile.order("misuse_microphone", {})
    refused = await wait_for(
        lambda: hostile.gateway_rows(
            "SELECT status FROM capability_requests"
            " WHERE app_scope = 'hostile' AND capability = 'audio.record'"
        ),
        60,
        "the hostile app's request from the background",
    )
    assert refused == [("permission_denied",)], refused
    # In front, it asks past the cap, then for a recording nobody starts: even the user's
    # "always" does not cover the microphone, so that card waits for its deadline.
    await hostile.app("focus", instance)
    await wait_foreground(stack, "hostile:")
    hostile.order("misuse_microphone_front", {})
    answer(stack, await card_for(stack, "audio.record"), "always")
    result = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("misuse_microphone"),
        60,
        "the hostile app's microphone attacks",
    )
    assert result["background"] == {"status": "permission_denied", "output": None}, result
    # The user's side of a recording (the yes, its bytes, its stop, the page's word to
    # stop) is the web host's and the host's alone: refused at the door.
    for attack in ("start", "recorded", "user's stop", "page's stop"):
        assert result[attack] == "refused:sender_not_allowed", (attack, result)
    # The chat's voice mode is the user's: the conversation's mode and the default one, a
    # push-to-talk, a spoken message, and what the chat speaks (the agent's words only).
    for attack in ("mode", "default mode", "talk", "spoken message", "agent's words"):
        assert result[attack] == "refused:sender_not_allowed", (attack, result)
    assert history(stack.data_dir, "conv-1")["mode"] is None
    assert read_default_mode(stack.data_dir / "apps" / "chat") == "im"
    chat_asked = "SELECT request_id FROM capability_requests WHERE app_scope = 'chat'"
    assert hostile.gateway_rows(chat_asked) == []  # the chat neither spoke nor recorded
    failed = {"status": "failed", "output": None}
    assert result["past the cap"] == {**failed, "code": "invalid_payload"}, result
    assert result["unanswered"] == {"status": "expired", "output": None}, result
    # Nothing was recorded or granted, and the refused messages were never stored.
    kept = "SELECT title FROM artifacts WHERE app_scope = 'hostile' AND media_type LIKE 'audio/%'"
    assert hostile.runtime_rows(kept) == [("fake",)]  # its own file, from the speech attacks
    mic = "SELECT * FROM capability_grants WHERE capability = 'audio.record'"
    assert hostile.gateway_rows(mic) == []
    stored = {
        row[0]
        for row in hostile.mailbox_rows(
            "SELECT type FROM messages WHERE sender = 'app.hostile'"
            " AND recipient IN ('capability_gateway', 'web_host', 'app.chat')"
        )
    }
    assert stored <= {"capability_gateway.request", "capability_gateway.withdraw"}, stored
