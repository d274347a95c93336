"""The zygote forked from the supervisor holds what its actors load: resolving each actor
of the runtime's own configuration after the preload imports nothing more, so no actor
incarnation pays an import after its fork."""

from __future__ import annotations

import json
import subprocess
import sys

from .helpers import REPO_ROOT

PROBE = """
import json, sys
from actors import runtime_children
from actors.kernel.spawning._prefork import zygote_preload
from actors.kernel.actor_process.child import load_actor
from actors.kernel.spawning.zygote import preload

targets = zygote_preload(runtime_children.default_config("/tmp/unused", web_port=0))
preload(targets)
before = set(sys.modules)
for target in targets:
    load_actor(target)
print(json.dumps({"targets": targets, "imported_after": sorted(set(sys.modules) - before)}))
"""


def test_the_preload_leaves_no_actor_an_import_of_its_own() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    probe = json.loads(done.stdout)
    assert "actors.store:StoreActor" in probe["targets"], probe
    assert "actors.web_host:WebHostActor" in probe["targets"], probe
    assert probe["imported_after"] == [], probe
