"""A refused install or update leaves the bundle cache as it found it: the entry it admitted
to look at the bundle goes again (same_version, older_version, bundle_signer_changed,
already_installed; a scope mismatch never makes one), unless a version in the registry uses
it. The CLI says each refusal in one sentence with the way forward. On a real runtime,
through the real `lineup app` CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.kernel.conftest import RuntimeFactory
from tests.kernel.helpers import REPO_ROOT

from .conftest import Apps, Bundles, lineup, start_apps


@pytest.fixture(scope="session")
def others(bundles: Bundles, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`v1_second`: pomodoro 0.1.0 signed by `second`, a trusted key (other bytes than
    `bundles.v1`); `timer`: another app, 0.2.0, by the trusted publisher."""
    root = tmp_path_factory.mktemp("others")
    assert lineup("app", "keygen", "--out", root / "keys", "--name", "second")[0] == 0
    v1_second = root / "v1-second.bundle"
    shutil.copy(bundles.v1, v1_second)
    assert lineup("app", "sign", v1_second, "--key", root / "keys" / "second.key")[0] == 0
    source = root / "timer"
    shutil.copytree(
        REPO_ROOT / "apps" / "pomodoro", source, ignore=shutil.ignore_patterns("__pycache__")
    )
    app = source / "_app.py"
    text = app.read_text().replace("pomodoro", "timer")
    app.write_text(text.replace('version="0.1.0"', 'version="0.2.0"'))
    timer = root / "timer.bundle"
    code, _, err = lineup("app", "build", source, "--out", timer)
    assert code == 0, err
    assert lineup("app", "sign", timer, "--key", bundles.keys / "publisher.key")[0] == 0
    return {"v1_second": v1_second, "timer": timer, "second_pub": root / "keys" / "second.pub"}


def _apps(factory: RuntimeFactory, bundles: Bundles, others: dict[str, Path]) -> Apps:
    apps = start_apps(factory, bundles.keys)
    shutil.copy(others["second_pub"], apps.data_dir / "trusted_keys" / "second.pub")
    return apps


def _human(apps: Apps, *args: str | Path) -> str:
    """`lineup app ARGS` as the user sees it: exit 1 and one sentence, nothing else."""
    code, stdout, stderr = lineup("app", *args[:1], "--data-dir", apps.data_dir, *args[1:])
    assert code == 1, stdout + stderr
    lines = stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("."), stdout
    assert "Traceback" not in stdout + stderr and "Error" not in stdout + stderr
    return lines[0]


def test_a_refused_update_or_install_leaves_no_cache_entry(
    factory: RuntimeFactory, bundles: Bundles, others: dict[str, Path]
) -> None:
    apps = _apps(factory, bundles, others)
    assert apps.app("install", bundles.v1)[0] == 0
    installed = apps.record("pomodoro")
    assert installed is not None
    cache = apps.cache_entries()
    assert cache == [installed["bundle_digest"]]

    # The same version in other bytes (another trusted signer): same_version, checked
    # before the signer, and its entry goes.
    code, out = apps.app("update", "pomodoro", others["v1_second"])
    assert (code, out["state"], out["code"]) == (1, "rolled_back", "same_version")
    assert (apps.record("pomodoro"), apps.cache_entries()) == (installed, cache)
    assert _human(apps, "update", "pomodoro", others["v1_second"]) == (
        "update pomodoro refused: pomodoro 0.1.0 is installed;"
        " an update needs a higher version number."
    )

    # Another app's bundle: refused before anything is written to the cache.
    code, out = apps.app("update", "pomodoro", others["timer"])
    assert (code, out["code"]) == (1, "bundle_scope_mismatch")
    assert (apps.record("pomodoro"), apps.cache_entries()) == (installed, cache)
    assert _human(apps, "update", "pomodoro", others["timer"]) == (
        "update pomodoro refused: the bundle is 'timer', not 'pomodoro';"
        " use a bundle built for pomodoro."
    )

    # Installing another version of an installed app: already_installed, no entry left.
    code, out = apps.app("install", bundles.v2)
    assert (code, out["code"]) == (1, "already_installed")
    assert (apps.record("pomodoro"), apps.cache_entries()) == (installed, cache)

    # Updated to 0.2.0: an update back to 0.1.0 is older_version, and the 0.1.0 entry
    # stays, since the previous version uses it.
    assert apps.app("update", "pomodoro", bundles.v2)[0] == 0
    updated = apps.record("pomodoro")
    assert updated is not None
    cache = apps.cache_entries()
    assert len(cache) == 2
    code, out = apps.app("update", "pomodoro", bundles.v1)
    assert (code, out["state"], out["code"]) == (1, "rolled_back", "older_version")
    assert (apps.record("pomodoro"), apps.cache_entries()) == (updated, cache)
    assert _human(apps, "update", "pomodoro", bundles.v1) == (
        "update pomodoro refused: 0.1.0 is older than the installed 0.2.0;"
        f" to go back, run `lineup app rollback --data-dir {apps.data_dir} pomodoro`."
    )
    # An older version that no version uses: refused, and its entry goes.
    code, out = apps.app("update", "pomodoro", others["v1_second"])
    assert (code, out["code"]) == (1, "older_version")
    assert (apps.record("pomodoro"), apps.cache_entries()) == (updated, cache)


def test_a_refused_new_signer_leaves_no_cache_entry(
    factory: RuntimeFactory, bundles: Bundles, others: dict[str, Path]
) -> None:
    apps = _apps(factory, bundles, others)
    assert apps.app("install", others["v1_second"])[0] == 0  # pinned to `second`
    installed = apps.record("pomodoro")
    cache = apps.cache_entries()
    code, out = apps.app("update", "pomodoro", bundles.v2)  # by `publisher`
    assert (code, out["state"], out["code"]) == (1, "rolled_back", "bundle_signer_changed")
    assert (apps.record("pomodoro"), apps.cache_entries()) == (installed, cache)
    code, out = apps.app("update", "pomodoro", bundles.v2, "--accept-new-signer")
    assert (code, out["state"]) == (0, "succeeded")
    assert len(apps.cache_entries()) == 2
