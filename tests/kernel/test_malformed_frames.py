"""Malformed frames from a child close that child's channel with a logged reason and restart
that child; the supervisor never crashes, and nothing the child sent reaches anyone.

One supervisor takes every kind of bad frame in turn, so it must survive all of them.
The misbehaving child writes the raw bytes past its channel's writer, as a buggy or
hostile process would; it does so only on a message's first attempt, so the redelivery
after its restart succeeds.
"""

from __future__ import annotations

from pathlib import Path

from .conftest import MakeRuntime
from .helpers import child, notices, recorded

# sample_actors.BAD_BYTES name -> the reason the supervisor must give
CASES = {
    "garbage": "undecodable msgpack body",
    "oversize": "frame length 2147483647 exceeds the limit 1048576",
    "not_a_map": "frame is a list, not a map",
    "no_type": "frame has no string `type`",
    "wrong_types": "message needs a string `id`",
    "bad_ack": "kernel.ack needs a non-empty list of integer seqs",
    "bad_recipient": "message `to` ['peer'] is not an actor name",
    "spoofed_sender": "unknown message fields: from",
    "ready_twice": "kernel.ready sent twice",
    "forbidden_kernel_type": "kernel.actor_failed is not a frame a child may send here",
}


def test_malformed_frames_close_the_channel_and_restart_only_that_child(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    db = tmp_path / "peer.db"
    config = {
        "children": [
            child("peer", "Recorder", config={"db": str(db)}),
            child("bad", "Misbehaving"),
        ],
        "max_restarts": 2,  # the bad frames must not count against the intensity
    }
    rt = make_runtime(config).start()
    supervisor_pid = rt.pid
    peer_pid = rt.wait_actor("peer")["pid"]

    for restarts, (kind, reason) in enumerate(CASES.items(), start=1):
        before = rt.wait_actor("bad", restarts=restarts - 1)
        rt.send("bad", "misbehave", kind)
        after = rt.wait_actor("bad", restarts=restarts)
        assert after["pid"] != before["pid"], kind
        assert after["last_exit"].startswith(f"sent a bad frame ({reason}"), after["last_exit"]
        logged = [line for line in rt.log().splitlines() if "closing its channel" in line]
        assert len(logged) == restarts
        assert f"bad sent a bad frame ({reason}" in logged[-1], logged[-1]
        rt.wait_drained("bad", 10)  # the redelivered message was handled by the new process
        assert rt.alive and rt.pid == supervisor_pid
        assert rt.status()["state"] == "running"

    actors = rt.actors()
    assert actors["bad"]["dead"] == 0
    assert (actors["peer"]["pid"], actors["peer"]["restarts"]) == (peer_pid, 0)
    # nothing the bad child wrote was taken: the peer got no item and no forged notice
    assert recorded(db) == []
    assert notices(db) == []
    assert rt.mailbox("peer") == []
    assert rt.stop() == 0


def test_an_apps_process_may_not_hold_a_delivery(make_runtime: MakeRuntime) -> None:
    """`kernel.hold` keeps a delivery from the blame of a crash: only the runtime's own
    actors may say it, and an app's process that does is closed like any bad frame."""
    rt = make_runtime({"children": [child("app.bad", "Misbehaving")]}).start()
    rt.wait_actor("app.bad", restarts=0)
    rt.send("app.bad", "misbehave", "app_hold")
    after = rt.wait_actor("app.bad", restarts=1)
    assert after["last_exit"].startswith(
        "sent a bad frame (kernel.hold is the runtime's actors' alone"
    ), after["last_exit"]
