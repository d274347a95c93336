"""The web host's follower of the chat's log (`ChatFollower`): an agent's message, settled
once shown, is shown again when a part of it is spoken, so the page can play it."""

from pathlib import Path

from actors.web_host._views import ChatFollower
from apps.chat import app_dir
from apps.sdk import EventLog

CONVERSATION = "conv-1"


def _agent_message(log: EventLog, message_id: str) -> None:
    message = {
        "id": message_id,
        "conversation_id": CONVERSATION,
        "type": "lineup.message",
        "seq": 1,
        "sender": {"kind": "agent", "id": "demo"},
        "payload": {"text": "Your timer has started.", "format": "plain"},
    }
    log.add_agent_messages(f"K-{message_id}", [message])


def test_a_settled_agent_message_is_shown_again_once_spoken(tmp_path: Path) -> None:
    log = EventLog(app_dir(tmp_path))
    try:
        _agent_message(log, "M1")
        follower = ChatFollower(tmp_path, CONVERSATION)
        first = follower.look().items["M1"]
        assert "speech" not in first, first
        assert follower.look().items["M1"] is first  # settled: not made again

        spoken = {
            "conversation_id": CONVERSATION,
            "message_id": "M1",
            "part": 0,
            "artifact": {"artifact_id": "A1", "title": "speech", "media_type": "audio/wav",
                         "size": 44},
            "duration_ms": 1200,
        }  # fmt: skip
        log.add_interaction_event("K-speech", "speech", CONVERSATION, spoken)
        again = follower.look().items["M1"]
        assert [part["id"] for part in again["speech"]] == ["A1"], again
    finally:
        log.close()
