"""Signer pinning: the key that signed the installed version of an app is in its record; an
update signed by another key, even a trusted one, is another publisher and is refused
(`bundle_signer_changed`) with nothing changed, until the user accepts the new signer
(`lineup app update --accept-new-signer`); a rollback brings back the previous version's
own signer. On a real runtime, through the real `lineup app` CLI."""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actors.app_manager._bundle import key_id, load_public_key
from actors.app_manager._db import RegistryFile
from actors.app_manager._registry import SIGNERS_KEY, AppRecord
from actors.app_manager.registry import DB_FILE
from tests.kernel.conftest import RuntimeFactory
from tests.kernel.helpers import REPO_ROOT, wait_until

from .conftest import Apps, Bundles, lineup, start_apps


@dataclass(frozen=True)
class Signers:
    """Bundles of pomodoro by two trusted publishers: `publisher` (the conftest's) and
    `second`."""

    v2_second: Path  # 0.2.0, the same content as `bundles.v2`, signed by `second`
    v3_second: Path  # 0.3.0 by `second`
    v3_publisher: Path  # 0.3.0 by `publisher`
    second_pub: Path
    publisher_id: str
    second_id: str
    publisher_public: str
    second_public: str


def _build(source: Path, version: str, out: Path) -> Path:
    app = source / "_app.py"
    original = app.read_text()
    app.write_text(original.replace('version="0.1.0"', f'version="{version}"'))
    try:
        code, _, err = lineup("app", "build", source, "--out", out)
        assert code == 0, err
    finally:
        app.write_text(original)
    return out


def _signed(bundle: Path, key: Path, out: Path) -> Path:
    shutil.copy(bundle, out)
    code, _, err = lineup("app", "sign", out, "--key", key)
    assert code == 0, err
    return out


@pytest.fixture(scope="session")
def signers(bundles: Bundles, tmp_path_factory: pytest.TempPathFactory) -> Signers:
    root = tmp_path_factory.mktemp("signers")
    assert lineup("app", "keygen", "--out", root / "keys", "--name", "second")[0] == 0
    source = root / "pomodoro"
    shutil.copytree(
        REPO_ROOT / "apps" / "pomodoro", source, ignore=shutil.ignore_patterns("__pycache__")
    )
    v3 = _build(source, "0.3.0", root / "pomodoro-0.3.0.bundle")
    second_key, publisher_key = root / "keys" / "second.key", bundles.keys / "publisher.key"
    publisher = load_public_key(bundles.keys / "publisher.pub")
    second = load_public_key(root / "keys" / "second.pub")
    return Signers(
        v2_second=_signed(bundles.v2, second_key, root / "v2-second.bundle"),
        v3_second=_signed(v3, second_key, root / "v3-second.bundle"),
        v3_publisher=_signed(v3, publisher_key, root / "v3-publisher.bundle"),
        second_pub=root / "keys" / "second.pub",
        publisher_id=key_id(publisher),
        second_id=key_id(second),
        publisher_public=bytes(publisher).hex(),
        second_public=bytes(second).hex(),
    )


def _trusting_both(factory: RuntimeFactory, bundles: Bundles, signers: Signers) -> Apps:
    apps = start_apps(factory, bundles.keys)
    shutil.copy(signers.second_pub, apps.data_dir / "trusted_keys" / "second.pub")
    return apps


def _signer(row: dict[str, Any] | None) -> tuple[Any, ...]:
    """A record's versions and signers, as the app manager reads its row."""
    assert row is not None
    record = AppRecord.from_row(row)
    return (
        record.installed_version,
        record.signer_key_id,
        record.signer_public_key,
        record.previous_version,
        record.previous_signer_key_id,
        record.previous_signer_public_key,
    )


def _listed(apps: Apps) -> dict[str, dict[str, Any]]:
    code, out, err = lineup("app", "list", "--data-dir", apps.data_dir, "--json")
    assert code == 0, err
    return {r["app_scope"]: r for r in json.loads(out)["apps"]}


def _state(apps: Apps) -> dict[str, Any]:
    """Everything a refused update must leave as it was."""
    registry = apps.registry()
    private = apps.data_dir / "apps" / "pomodoro"
    return {
        "record": apps.record("pomodoro"),
        "cache": apps.cache_entries(),
        "instances": registry["instances"],
        "focus_stack": registry["settings"]["focus_stack"],
        "routing": registry["settings"]["routing"]["pomodoro"],
        "private": sorted(
            (str(p.relative_to(private)), p.read_bytes()) for p in private.rglob("*") if p.is_file()
        ),
        "process": apps.runtime.actors()["app.pomodoro"]["pid"],
    }


def test_an_update_by_another_trusted_key_is_refused_until_the_user_accepts_it(
    factory: RuntimeFactory, bundles: Bundles, signers: Signers
) -> None:
    apps = _trusting_both(factory, bundles, signers)
    assert apps.app("install", bundles.v1)[0] == 0
    assert _signer(apps.record("pomodoro")) == (
        "0.1.0",
        signers.publisher_id,
        signers.publisher_public,
        None,
        None,
        None,
    )
    assert apps.app("enable", "pomodoro")[0] == 0
    assert apps.app("launch", "pomodoro", "--conversation", "conv-1")[0] == 0
    private = apps.data_dir / "apps" / "pomodoro"
    private.mkdir(parents=True, exist_ok=True)
    (private / "notes.txt").write_text("the user's data, the publisher's to read")
    before = _state(apps)

    # Both keys are trusted, the version is newer: the signer alone refuses it.
    code, out = apps.app("update", "pomodoro", signers.v2_second)
    assert (code, out["state"], out["code"]) == (1, "rolled_back", "bundle_signer_changed")
    assert out["detail"] == (
        f"the update is signed by key {signers.second_id},"
        f" the installed version by key {signers.publisher_id}"
    )
    assert _state(apps) == before

    # As the user reads it: one sentence, both keys, the way forward; no traceback.
    code, stdout, stderr = lineup(
        "app", "update", "--data-dir", apps.data_dir, "pomodoro", signers.v2_second
    )
    assert code == 1
    lines = stdout.strip().splitlines()
    assert len(lines) == 1, stdout
    assert lines[0] == (
        f"update pomodoro refused: the update is signed by key {signers.second_id},"
        f" the installed version by key {signers.publisher_id};"
        " pass --accept-new-signer if you trust the new publisher."
    )
    assert "Traceback" not in stderr and "Error" not in stdout + stderr
    assert _state(apps) == before

    # The user re-trusts: the new signer is pinned, the data and the instance carry on.
    code, out = apps.app("update", "pomodoro", signers.v2_second, "--accept-new-signer")
    assert (code, out["state"]) == (0, "succeeded")
    assert _signer(apps.record("pomodoro")) == (
        "0.2.0",
        signers.second_id,
        signers.second_public,
        "0.1.0",
        signers.publisher_id,
        signers.publisher_public,
    )
    assert (private / "notes.txt").read_text() == "the user's data, the publisher's to read"
    wait_until(
        lambda: apps.runtime.actors().get("app.pomodoro", {}).get("state") == "running",
        30,
        "the app's process on the new version",
    )
    assert _state(apps)["instances"] == before["instances"]

    # `lineup app list` names each app's signer, in --json and in its table.
    listed = _listed(apps)
    assert listed["pomodoro"]["signer_key_id"] == signers.second_id
    assert listed["pomodoro"]["previous_signer_key_id"] == signers.publisher_id
    assert listed["chat"]["signer_key_id"] is None
    assert "manifest" not in listed["pomodoro"]
    code, table, _ = lineup("app", "list", "--data-dir", apps.data_dir)
    assert code == 0 and "signer" in table
    row = next(line for line in table.splitlines() if "pomodoro" in line and "0.2.0" in line)
    assert signers.second_id in row

    # Now the pin is the new key: the old publisher's next version is the stranger.
    code, out = apps.app("update", "pomodoro", signers.v3_publisher)
    assert (code, out["code"]) == (1, "bundle_signer_changed")
    assert signers.publisher_id in out["detail"]
    code, out = apps.app("update", "pomodoro", signers.v3_second)
    assert (code, out["state"]) == (0, "succeeded")
    assert _signer(apps.record("pomodoro"))[:2] == ("0.3.0", signers.second_id)


def test_a_rollback_brings_back_the_previous_versions_signer(
    factory: RuntimeFactory, bundles: Bundles, signers: Signers
) -> None:
    apps = _trusting_both(factory, bundles, signers)
    assert apps.app("install", bundles.v1)[0] == 0
    assert apps.app("update", "pomodoro", signers.v2_second, "--accept-new-signer")[0] == 0
    assert apps.app("rollback", "pomodoro")[0] == 0
    assert _signer(apps.record("pomodoro")) == (
        "0.1.0",
        signers.publisher_id,
        signers.publisher_public,
        "0.2.0",
        signers.second_id,
        signers.second_public,
    )
    assert _listed(apps)["pomodoro"]["signer_key_id"] == signers.publisher_id
    # Back on the first publisher's version, its key is the pin again.
    before = apps.record("pomodoro")
    code, out = apps.app("update", "pomodoro", signers.v3_second)
    assert (code, out["code"]) == (1, "bundle_signer_changed")
    assert apps.record("pomodoro") == before
    code, out = apps.app("update", "pomodoro", signers.v3_publisher)
    assert (code, out["state"]) == (0, "succeeded")
    assert _signer(apps.record("pomodoro")) == (
        "0.3.0",
        signers.publisher_id,
        signers.publisher_public,
        "0.1.0",
        signers.publisher_id,
        signers.publisher_public,
    )


def test_the_same_signer_needs_no_flag_and_the_flag_changes_nothing_else(
    factory: RuntimeFactory, bundles: Bundles, signers: Signers
) -> None:
    apps = _trusting_both(factory, bundles, signers)
    assert apps.app("install", bundles.v1)[0] == 0
    code, out = apps.app("update", "pomodoro", bundles.v2, "--accept-new-signer")
    assert (code, out["state"]) == (0, "succeeded")
    assert _signer(apps.record("pomodoro"))[:3] == (
        "0.2.0",
        signers.publisher_id,
        signers.publisher_public,
    )


def test_a_record_without_recorded_signers_is_pinned_to_its_cache_entrys_key(
    factory: RuntimeFactory, bundles: Bundles, signers: Signers
) -> None:
    """A registry written before signers were recorded: the installed version's signer is
    the key id in its cache entry's signature record."""
    apps = _trusting_both(factory, bundles, signers)
    assert apps.app("install", bundles.v1)[0] == 0
    apps.runtime.stop()
    db = sqlite3.connect(apps.data_dir / DB_FILE)
    with db:
        (manifest,) = db.execute(
            "SELECT manifest FROM app_records WHERE app_scope = 'pomodoro'"
        ).fetchone()
        older = {k: v for k, v in json.loads(manifest).items() if k != SIGNERS_KEY}
        db.execute(
            "UPDATE app_records SET manifest = ? WHERE app_scope = 'pomodoro'",
            (json.dumps(older),),
        )
    db.close()
    apps.runtime.start()
    apps.wait_ready()
    assert _signer(apps.record("pomodoro"))[1:3] == (None, None)

    code, out = apps.app("update", "pomodoro", signers.v2_second)
    assert (code, out["code"]) == (1, "bundle_signer_changed")
    assert out["detail"].endswith(f"the installed version by key {signers.publisher_id}")
    code, out = apps.app("update", "pomodoro", bundles.v2)
    assert (code, out["state"]) == (0, "succeeded")
    assert _signer(apps.record("pomodoro")) == (
        "0.2.0",
        signers.publisher_id,
        signers.publisher_public,
        "0.1.0",
        signers.publisher_id,
        None,
    )
    # Rolling back to it, its key comes from its (re-verified) cache entry.
    assert apps.app("rollback", "pomodoro")[0] == 0
    assert _signer(apps.record("pomodoro"))[:3] == (
        "0.1.0",
        signers.publisher_id,
        signers.publisher_public,
    )


def test_the_signers_travel_in_the_manifest_column(tmp_path: Path) -> None:
    """The registry keeps its columns; the signers ride in the manifest's JSON and come back
    out of it, and the record's public form names them without the manifest."""
    record = AppRecord(
        "pomodoro",
        "installed",
        "Pomodoro",
        "0.2.0",
        previous_version="0.1.0",
        manifest={"app_scope": "pomodoro", "version": "0.2.0"},
        signer_key_id="a" * 16,
        signer_public_key="b" * 64,
        previous_signer_key_id="c" * 16,
        previous_signer_public_key="d" * 64,
    )
    registry = RegistryFile.open(tmp_path)
    registry.write({"records": [record.to_row()]})
    (row,) = registry.load()["records"]
    assert row["manifest"][SIGNERS_KEY]["signer_key_id"] == "a" * 16
    assert AppRecord.from_row(row) == record
    public = record.public()
    assert "manifest" not in public
    assert (public["signer_key_id"], public["previous_signer_public_key"]) == ("a" * 16, "d" * 64)
    # A core record has no manifest and no signer; its row is as it always was.
    core = AppRecord("chat", "core", "Chat", "1.0.0")
    assert core.to_row()["manifest"] is None
    assert AppRecord.from_row(core.to_row()) == core
