"""Each view of the settings app shows what the actors that own the facts hold: the keeper
app's session data, artifact and diagnostics as the store keeps them, each tool's
visibility as the tool router computed it, the default app as the app manager records it;
`lineup settings` shows the same answers; the retention rule holds (disable keeps an app's
data, remove deletes it); and bad input gets one sentence with a "did you mean"."""

from __future__ import annotations

from pathlib import Path

from actors.app_manager.registry import read_apps
from apps.chat import history, read_default_mode
from peers.agent import AgentClient
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import conversation_open, new_revision

from .helpers import (
    KEEPER,
    SettingsUi,
    install_keeper,
    kept,
    lineup_app,
    rows,
    settings,
    settings_json,
)
from .keeper._app import ARTIFACT, HEALTH


def _stored(stack: Stack) -> bool:
    """The keeper's session data, artifact and health are all in runtime.db."""
    counts = rows(
        stack.data_dir,
        "SELECT (SELECT count(*) FROM app_session_data WHERE app_scope = ? AND revision = 2),"
        " (SELECT count(*) FROM artifacts WHERE app_scope = ?),"
        " (SELECT count(*) FROM app_diagnostics WHERE app_scope = ? AND events_total = 1)",
        (KEEPER, KEEPER, KEEPER),
    )
    return kept(stack.data_dir) is not None and counts == [(1, 1, 1)]


async def test_each_view_shows_what_the_owners_hold(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    data_dir = stack.data_dir
    agent, first = await conversation_open(stack)
    await install_keeper(data_dir, keeper)
    await new_revision(stack, first)
    await lineup_app(data_dir, "launch", KEEPER, "--conversation", CONVERSATION)
    await wait_for(lambda: _stored(stack), 30, "the keeper's data stored")

    # Each app's data: the store's own rows, as the store's answer gives them.
    [(session_bytes, instance)] = rows(
        data_dir,
        "SELECT size_bytes, instance_id FROM app_session_data WHERE app_scope = ?",
        (KEEPER,),
    )
    [(health_at_ms,)] = rows(
        data_dir, "SELECT at_ms FROM app_diagnostics WHERE app_scope = ?", (KEEPER,)
    )
    assert instance == kept(data_dir)["instance_id"]  # type: ignore[index]
    data = await settings_json(data_dir, "data")
    assert [a["app_scope"] for a in data["apps"]] == ["app-registry", "chat", KEEPER, "settings"]
    assert await settings_json(data_dir, "data", KEEPER) == {
        "apps": [
            {
                "app_scope": KEEPER,
                "kind": "installed",
                "enabled": True,
                "session_data": {"instances": 1, "revisions": 2, "bytes": session_bytes},
                "artifacts": {"count": 1, "bytes": len(ARTIFACT)},
                "diagnostics": {
                    "health": HEALTH[0],
                    "detail": HEALTH[1],
                    "health_at_ms": health_at_ms,
                    "events_total": 1,
                },
            }
        ],
        "retention": data["retention"],
    }
    assert "removing it (`lineup app remove APP --yes`) deletes all three" in data["retention"]

    # The settings app, driven as a UI drives it, shows the very same answers.
    ui = SettingsUi(data_dir)
    outcome = await ui.act("show")
    assert outcome == {
        "kind": "show",
        "input_id": outcome["input_id"],
        "ok": True,
        "parts": {"grants": "ok", "policy": "ok", "data": "ok", "default_mode": "ok"},
    }
    shown = await settings_json(data_dir, "show")
    assert shown["problems"] == {}
    # What would serve each capability now: no desktop service, no web host here (a saved
    # file goes into the runtime's downloads); speech by the engines on this host.
    downloads = data_dir / "downloads"
    assert shown["providers"] == [
        {
            "capability": "file.open",
            "by": "chosen by the user: a file input on the page's card, or /attach in the terminal",
        },
        {"capability": "file.save", "by": f"saved in the runtime's downloads ({downloads})"},
        {
            "capability": "notification.show",
            "by": "the terminal chat, with the bell (no desktop service, no page open)",
        },
        {"capability": "speech.speak", "by": "spoken by espeak-ng on this host"},
        {"capability": "speech.transcribe", "by": "written out by PocketSphinx on this host"},
    ]
    view = ui.view()
    assert view["data"] == shown["data"] == data
    assert view["grants"] == shown["grants"] == []
    assert view["default_app"] is shown["default_app"] is None
    assert view["default_mode"] == shown["default_mode"] == "im"
    assert view["policy"] == shown["policy"]
    # The tool policy: no file, every tool allowed; the keeper's tool visible, and why.
    policy = shown["policy"]
    assert (policy["exists"], policy["broken"]) == (False, None)
    assert [i["conversation_id"] for i in policy["inventories"]] == [CONVERSATION, "runtime:global"]
    inventory = policy["inventories"][0]
    note = next(e for e in inventory["visibility"] if e["method"] == "keeper.note")
    assert note["visible"] is True and note["app_scope"] == KEEPER

    await _default_app(ui, data_dir)
    await _default_mode(ui, data_dir, agent)
    await _bad_input(ui, data_dir)
    await _retention(ui, data_dir)


async def _default_mode(ui: SettingsUi, data_dir: Path, agent: AgentClient) -> None:
    """The mode new conversations start in: set in the settings app and with the CLI, the
    chat's own setting, kept in its file. A conversation that begins takes it; one that
    had begun keeps its own."""
    outcome = await ui.act("set_mode", mode="audio")
    assert (outcome["ok"], outcome["default_mode"]) == (True, "audio"), outcome
    code, out, err = await settings(data_dir, "mode")
    assert code == 0 and out.startswith("new conversations start in voice (audio)"), out + err
    await agent.send_text("conv-new", "A new conversation")
    await wait_for(lambda: history(data_dir, "conv-new")["mode"] == "audio", 30, "its mode")
    assert history(data_dir, CONVERSATION)["mode"] is None  # begun before: text, as it was
    code, out, err = await settings(data_dir, "mode", "im")
    assert code == 0 and out.startswith("new conversations start in text (im)"), out + err
    assert (await settings_json(data_dir, "show"))["default_mode"] == "im"
    assert read_default_mode(data_dir / "apps" / "chat") == "im"
    outcome = await ui.act("set_mode", mode="video")
    assert (outcome["ok"], outcome["code"]) == (False, "invalid_payload"), outcome
    code, _, err = await settings(data_dir, "mode", "video")
    assert code == 2 and "unknown mode 'video'; choose from audio, im" in err, err


async def _default_app(ui: SettingsUi, data_dir: Path) -> None:
    """Chosen in the settings app, and with the CLI: the app manager's record."""
    outcome = await ui.act("set_default", app_scope=KEEPER)
    assert (outcome["ok"], outcome["result"]) == (True, {"default_app": KEEPER}), outcome
    assert read_apps(data_dir)["settings"]["default_app"] == KEEPER
    code, out, err = await settings(data_dir, "default", "chat")
    assert code == 0 and "succeeded" in out, out + err
    assert read_apps(data_dir)["settings"]["default_app"] == "chat"
    assert (await settings_json(data_dir, "show"))["default_app"] == "chat"
    outcome = await ui.act("set_default", app_scope="nowhere")
    assert (outcome["ok"], outcome["code"]) == (False, "app_not_installed"), outcome
    assert read_apps(data_dir)["settings"]["default_app"] == "chat"


async def _bad_input(ui: SettingsUi, data_dir: Path) -> None:
    """One sentence, the closest name, nothing changed."""
    for args, sentence in (
        (("data", "keepr"), "no app 'keepr' is installed; did you mean 'keeper'?"),
        (("default", "keepr"), "did you mean 'keeper'?"),
        (("revoke", "keepr", "file.save"), "no app 'keepr' is installed; did you mean 'keeper'?"),
        (("revoke", KEEPER, "file.save"), "nothing to revoke: keeper holds no capability grant"),
    ):
        code, out, err = await settings(data_dir, *args)
        assert code == 1, (args, out, err)
        assert sentence in err + out, (args, out, err)
        assert "Traceback" not in err and len((err + out).strip().splitlines()) == 1, err
    outcome = await ui.act("revoke", app_scope=KEEPER)
    assert (outcome["ok"], outcome["code"]) == (False, "invalid_payload"), outcome
    outcome = await ui.act("forget everything")
    assert (outcome["ok"], outcome["code"]) == (False, "invalid_payload"), outcome
    outcome = await ui.act("k" * 60_000, app_scope="a" * 1000)  # kept short for the UI
    assert (outcome["ok"], outcome["code"], outcome["kind"]) == (False, "invalid_payload", "k" * 64)
    assert len(outcome["detail"]) < 200, outcome
    assert read_apps(data_dir)["settings"]["default_app"] == "chat"


async def _retention(ui: SettingsUi, data_dir: Path) -> None:
    """Disabling an app keeps its data; removing it deletes it."""
    await lineup_app(data_dir, "disable", KEEPER)
    [kept_app] = (await settings_json(data_dir, "data", KEEPER))["apps"]
    assert kept_app["enabled"] is False
    assert kept_app["session_data"]["revisions"] == 2 and kept_app["artifacts"]["count"] == 1
    assert kept_app["diagnostics"]["events_total"] == 1
    await lineup_app(data_dir, "remove", KEEPER, "--yes")
    outcome = await ui.act("data")
    assert outcome["ok"] and KEEPER not in [a["app_scope"] for a in ui.view()["data"]["apps"]]
    code, _, err = await settings(data_dir, "data", KEEPER)
    assert code == 1 and "no app 'keeper' is installed" in err, err
