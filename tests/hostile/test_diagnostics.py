"""An app's diagnostics are its own word about itself: the hostile app cannot report for
another app, past the store door's limits, or keep more than its share of events; what it
said survives its SIGKILL and is shown to the operator as its own, as text."""

from __future__ import annotations

import json
import os

import trio

from tests.app_manager.conftest import lineup
from tests.runtime.helpers import CONVERSATION, texts, wait_for

from .app._diagnostic_attacks import EVENTS_FLOOD, STOLEN_DETAIL
from .conftest import Hostile


async def _debug_actors(hostile: Hostile, *extra: str) -> tuple[int, str, str]:
    return await trio.to_thread.run_sync(
        lambda: lineup("debug", "actors", "--stats", *extra, "--data-dir", hostile.data_dir)
    )


def _no_more_orders(hostile: Hostile) -> None:
    path = hostile.app_dir / "orders.json"
    partial = path.with_suffix(".tmp")
    partial.write_text("{}")
    partial.chmod(0o644)
    os.replace(partial, path)


async def test_an_app_reports_only_for_itself(hostile: Hostile) -> None:
    stack = hostile.stack
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "before")
    await wait_for(lambda: texts(stack.timeline()) == ["before"], 30, "the first message")
    await hostile.install({"attacks": ["speak_for_others"]})
    await hostile.launch()
    outcomes = (await hostile.wait_report(60))["results"]["speak_for_others"]["outcomes"]

    # Past the SDK: whatever names another app, or passes a limit, is refused at a door.
    for label in ("as chat", "sender in the body", "too many at once", "unknown level"):
        assert outcomes[label].startswith("refused:invalid_payload"), (label, outcomes)
    for label in ("unknown health", "name too long"):
        assert outcomes[label].startswith("refused:invalid_payload"), (label, outcomes)
    assert outcomes["fields too large"] == "refused:too_large", outcomes
    assert outcomes["sdk: unknown health"].startswith("raised:health is one of"), outcomes
    assert outcomes["last"] == "accepted:null", outcomes

    # Filed under its own name only, its newest events kept and no more.
    def scopes() -> list[tuple[str, int]]:
        return hostile.runtime_rows(
            "SELECT app_scope, count(*) FROM app_diagnostic_events GROUP BY app_scope"
        )

    await wait_for(lambda: scopes() == [("hostile", 100)], 30, "the flood's events stored")
    assert hostile.runtime_rows("SELECT app_scope, status, detail FROM app_diagnostics") == [
        ("hostile", "degraded", STOLEN_DETAIL)
    ]
    newest = hostile.runtime_rows(
        "SELECT name, fields FROM app_diagnostic_events ORDER BY pos DESC LIMIT 2"
    )
    assert [(name, json.loads(fields)) for name, fields in newest] == [
        ("e0", {}),
        ("flood", {"n": EVENTS_FLOOD - 1}),
    ]

    # What it said outlives its process, and the operator sees it as the app's own words.
    _no_more_orders(hostile)  # its next incarnation attacks no more
    assert stack.kill("app.hostile")
    code, out, err = await _debug_actors(hostile, "--json")
    assert code == 0, err
    reports = {a["name"]: a.get("diagnostics") for a in json.loads(out)}
    assert [name for name, report in reports.items() if report] == ["app.hostile"]
    report = reports["app.hostile"]
    assert report["health"] == "degraded" and report["detail"] == STOLEN_DETAIL
    assert report["events_total"] == EVENTS_FLOOD + 1
    assert [e["name"] for e in report["recent"]] == ["flood"] * 4 + ["e0"]
    code, out, err = await _debug_actors(hostile)
    assert code == 0, err
    assert f"app.hostile says: health degraded ({STOLEN_DETAIL}), {EVENTS_FLOOD + 1} event(s)" in (
        out
    )
    assert "app.chat says" not in out

    # Removing the app, as the user confirms it, removes what it said of itself.
    await hostile.app("remove", "hostile", "--yes")
    assert hostile.runtime_rows("SELECT count(*) FROM app_diagnostics") == [(0,)]
    assert hostile.runtime_rows("SELECT count(*) FROM app_diagnostic_events") == [(0,)]
