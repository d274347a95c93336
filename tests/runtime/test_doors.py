"""The door, as a rule of the architecture: every actor of the runtime declares what it
takes, from whom, and an app process reaches only its SDK's surface."""

from __future__ import annotations

import importlib
import inspect
import typing

from actors import runtime_children
from actors.kernel import APPS, Actor, Door, load_door

# What an app process may send, and to whom: the SDK's surface, nothing more.
SDK_SURFACE = {
    ("router", "router.action"),
    ("app_manager", "app_manager.request"),
    ("tool_router", "tool_router.report"),
    ("capability_gateway", "capability_gateway.request"),
    ("capability_gateway", "capability_gateway.withdraw"),
    ("capability_gateway", "capability_gateway.stop"),  # an app ends its own recording
    ("tool_router", "tool_router.deadline"),
    ("store", "store.session_data.get"),
    ("store", "store.session_data.replace"),
    ("store", "store.artifacts.create"),
    ("store", "store.artifacts.read"),
    ("store", "store.artifacts.list"),
    ("store", "store.diagnostics.report"),
}


def _runtime_actors(*, web: bool = False) -> list[tuple[str, type[Actor], Door]]:
    config = runtime_children.default_config(web_port=0 if web else None)
    found = []
    for spec in config.children:
        module, _, cls = spec.target.partition(":")
        actor = getattr(importlib.import_module(module), cls)
        assert spec.door is not None, f"{spec.name} declares no door"
        found.append((spec.name, actor, load_door(spec.door)))
    return found


def test_every_runtime_actor_declares_exactly_what_it_handles() -> None:
    for name, actor, door in _runtime_actors():
        assert actor.door is door, f"{name}: the spec's door is not the class's"
        assert door.types() == set(actor._handlers), name
        for message_type in door.types():
            assert door.senders_of(message_type), f"{name} {message_type}: nobody may send it"


def _declared_body(handler: object) -> object:
    """The body type a handler's message is annotated with (`Message[T]`), or None."""
    hints = typing.get_type_hints(inspect.unwrap(handler))  # type: ignore[arg-type]
    message = next(iter(v for k, v in hints.items() if k != "return"), None)
    args = typing.get_args(message)
    return args[0] if args else None


def test_a_handler_reads_its_body_as_the_type_its_door_declares() -> None:
    """Every handler names its message's body type as its door declares it (`msg:
    Message[Report]`), the one the door validates: the shape is declared once, in the door,
    and read as such. A type whose door declares no body is read by its handler alone."""
    typed = 0
    for name, actor, door in _runtime_actors(web=True):
        for message_type, attribute in actor._handlers.items():
            declared = _declared_body(getattr(actor, attribute))
            body = door.accepts[message_type].body
            assert declared == body, (name, message_type, declared, body)
            typed += declared is not None
    assert typed >= 80


def test_every_body_a_door_takes_has_a_declared_shape() -> None:
    """No door takes a body of any shape: each declares its fields (a `TypedDict`), or,
    for a body whose shape is its handler's to check (an app's own actions, an app
    operation's request), any JSON object, never a value that JSON cannot hold."""
    from apps.sdk.door import DOOR as SDK_DOOR

    doors = [(name, door) for name, _, door in _runtime_actors(web=True)]
    for name, door in [*doors, ("an app's SDK", SDK_DOOR)]:
        for message_type, rule in door.accepts.items():
            assert rule.body != dict[str, typing.Any], (name, message_type)


def test_an_app_reaches_only_its_sdk() -> None:
    config = runtime_children.default_config()
    doors = {name: door for name, _, door in _runtime_actors()}
    app_door = load_door(config.app_door)
    reachable = {
        (name, message_type)
        for name, door in doors.items()
        for message_type in door.types()
        if door.allows(message_type, "app.whiteboard")
    }
    assert reachable == SDK_SURFACE
    # The user's stop of a call: the chat app speaks for the user, no other app does.
    assert doors["tool_router"].senders_of("tool_router.interrupt") == {"app.chat"}
    # The user's answer to a consent card: the chat app (where the user answers) or the host.
    assert doors["capability_gateway"].senders_of("capability_gateway.consent") == {
        "app.chat",
        "host",
    }
    # The user's save of an artifact: the operator, the host, the web host's Save; no app.
    assert doors["capability_gateway"].senders_of("capability_gateway.save_artifact") == {
        "debug",
        "host",
        "web_host",
    }
    # The user's side of a recording: the yes and the bytes from the web host's page, the
    # stop from the page or the terminal (through the host); no app.
    for message_type, senders in (
        ("capability_gateway.record_start", {"web_host"}),
        ("capability_gateway.recorded", {"web_host"}),
        ("capability_gateway.record_stop", {"host", "web_host"}),
    ):
        assert doors["capability_gateway"].senders_of(message_type) == senders, message_type
    # What the settings app shows and changes for the user: the settings app alone (and the
    # operator, as every door admits it).
    settings_only = {
        ("store", "store.app_data.overview"),
        ("tool_router", "tool_router.policy.get"),
        ("tool_router", "tool_router.policy.replace"),
        ("capability_gateway", "capability_gateway.grants"),
    }
    for name, message_type in settings_only:
        assert doors[name].senders_of(message_type) == {"app.settings"}, message_type
    assert doors["capability_gateway"].senders_of("capability_gateway.revoke") == {
        "debug",
        "app.settings",
    }
    # A new policy's capabilities section, judged by the gateway for the tool router.
    assert doors["capability_gateway"].senders_of("capability_gateway.policy.check") == {
        "tool_router"
    }
    assert not [t for t in app_door.types() if app_door.allows(t, "app.whiteboard")]
    assert all(APPS not in app_door.senders_of(t) for t in app_door.types())
    # Nobody may send a type no door declares, the operator included.
    for door in doors.values():
        assert not door.allows("store.anything.else", "debug")


def test_an_app_tells_the_web_host_only_what_its_surfaces_show() -> None:
    config = runtime_children.default_config(web_port=0)
    web = next(spec for spec in config.children if spec.name == "web_host")
    assert web.door is not None
    door = load_door(web.door)
    from_apps = {t for t in door.types() if door.allows(t, "app.whiteboard")}
    assert from_apps == {"web_host.surface.push"}
    # And a surface's requests reach an app from the web host only, which checked them.
    assert load_door(config.app_door).senders_of("app.surface.request") == {"web_host"}
