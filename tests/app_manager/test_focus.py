"""The focus stack and instance lifecycle as rules, fuzzed by a state
machine: whatever the order of launches, focus changes and closes, exactly the
top of the stack is in the foreground, every instance on the stack is live, and closing
the top brings back the one below in the foreground."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from actors import runtime_children
from actors.app_manager._focus import Focus, startup_target
from actors.app_manager._registry import AppRecord
from contracts import ContractError

SCOPES = ["chat", "whiteboard", "pomodoro", "draw-and-guess"]
CORE = frozenset(runtime_children.CORE_MANIFESTS)  # one global instance each


def test_only_the_newest_ended_instances_are_remembered() -> None:
    """Instances that ended past the newest `keep` are forgotten (their ids returned, to
    go from the file); live ones stay whatever their age, and a launch in a forgotten
    instance's conversation starts a new one."""
    focus = Focus(CORE)
    focus.launch("chat", None)
    for n in range(5):
        focus.launch("whiteboard", f"conv-{n}")
        focus.close(f"whiteboard:conv-{n}")
    focus.launch("pomodoro", "conv-0")
    assert focus.forget_ended(2) == ["whiteboard:conv-0", "whiteboard:conv-1", "whiteboard:conv-2"]
    assert set(focus.instances) == {
        "chat:main",
        "whiteboard:conv-3",
        "whiteboard:conv-4",
        "pomodoro:conv-0",
    }
    assert focus.forget_ended(2) == []
    again = focus.launch("whiteboard", "conv-0")
    assert (again.state, focus.foreground) == ("active", "whiteboard:conv-0")


def test_launch_backgrounds_the_current_and_close_restores_it() -> None:
    focus = Focus(CORE)
    chat = focus.launch("chat", None)
    assert (chat.instance_id, chat.state, chat.mode) == ("chat:main", "active", "foreground")
    board = focus.launch("whiteboard", "conv-1")
    assert board.instance_id == "whiteboard:conv-1"
    assert (chat.state, chat.mode) == ("backgrounded", "background")
    assert focus.stack == ["chat:main", "whiteboard:conv-1"]
    focus.close("whiteboard:conv-1")
    assert board.state == "closed"
    assert (chat.state, chat.mode) == ("active", "foreground")
    assert focus.stack == ["chat:main"]
    _, events = focus.take_changes()
    assert events == [
        ("chat:main", "start"),
        ("chat:main", "foreground"),
        ("chat:main", "background"),
        ("whiteboard:conv-1", "start"),
        ("whiteboard:conv-1", "foreground"),
        ("whiteboard:conv-1", "closing"),
        ("chat:main", "restore"),
        ("chat:main", "foreground"),
    ]


def test_a_failed_instance_gives_the_foreground_back() -> None:
    focus = Focus(CORE)
    focus.launch("chat", None)
    focus.launch("pomodoro", "c1")
    focus.close("pomodoro:c1", failed="crashed")
    assert focus.instances["pomodoro:c1"].state == "failed"
    assert focus.foreground == "chat:main"
    assert focus.instances["chat:main"].state == "active"
    with pytest.raises(ContractError, match="instance_not_found"):
        focus.close("pomodoro:c1")


def test_startup_target_falls_back_to_chat() -> None:
    records = {
        "chat": AppRecord("chat", "core", "Chat", "1", enabled=True),
        "whiteboard": AppRecord("whiteboard", "installed", "Whiteboard", "1", enabled=False),
        "pomodoro": AppRecord("pomodoro", "installed", "Pomodoro", "1", enabled=True),
    }
    focus = Focus(CORE)
    assert startup_target(None, focus, None, records) == "chat"
    assert startup_target(None, focus, "whiteboard", records) == "chat"  # disabled default
    assert startup_target(None, focus, "gone", records) == "chat"  # removed default
    assert startup_target(None, focus, "pomodoro", records) == "pomodoro"
    assert startup_target("whiteboard", focus, "pomodoro", records) == "pomodoro"
    focus.launch("pomodoro", "c1")
    assert startup_target(None, focus, None, records) == "pomodoro"  # restorable foreground
    assert startup_target("chat", focus, None, records) == "chat"  # explicit first


class FocusMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.focus = Focus(CORE)

    @rule(scope=st.sampled_from(SCOPES), conversation=st.sampled_from(["c1", "c2"]))
    def launch(self, scope: str, conversation: str) -> None:
        below = self.focus.foreground
        instance = self.focus.launch(scope, conversation)
        assert self.focus.foreground == instance.instance_id
        if below is not None and below != instance.instance_id:
            assert self.focus.instances[below].mode == "background"

    @precondition(lambda self: self.focus.stack)
    @rule(data=st.data())
    def focus_one(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(self.focus.stack))
        self.focus.focus(target)
        assert self.focus.foreground == target

    @precondition(lambda self: self.focus.stack)
    @rule(data=st.data(), failed=st.booleans())
    def close_one(self, data: st.DataObject, failed: bool) -> None:
        target = data.draw(st.sampled_from(self.focus.stack))
        below = [i for i in self.focus.stack if i != target]
        was_top = target == self.focus.foreground
        self.focus.close(target, failed="crash" if failed else None)
        assert target not in self.focus.stack
        if was_top and below:
            assert self.focus.foreground == below[-1]

    @invariant()
    def only_the_top_is_in_front(self) -> None:
        for position, instance_id in enumerate(self.focus.stack):
            instance = self.focus.instances[instance_id]
            assert instance.live
            top = position == len(self.focus.stack) - 1
            assert (instance.mode == "foreground") == top
            assert (instance.state == "active") == top
        assert len(set(self.focus.stack)) == len(self.focus.stack)
        for instance in self.focus.instances.values():
            if instance.instance_id not in self.focus.stack:
                assert instance.state in ("closed", "failed")


FocusMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
test_focus_stack_rules = FocusMachine.TestCase


def test_semantic_version_precedence() -> None:
    from actors.app_manager._registry import semver_key

    # The order the SemVer 2.0.0 specification gives as its example, and build metadata.
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.2.0",
        "1.10.0",
        "2.0.0",
    ]
    assert sorted(ordered, key=semver_key) == ordered
    assert semver_key("1.0.0+build.5") == semver_key("1.0.0")
