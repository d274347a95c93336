"""`lineup bench soak`: two minutes of the chaos workload without faults, sampled every
10 s: the data dir by part, the user data the workload added, each process's RSS, and
the rates after the warm-up; nothing lost or repeated. The hour is run by hand and
recorded in docs/benchmarks.md."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest


# Two minutes of both cores: beyond what the default run's time allows, run by `pytest -m soak`.
@pytest.mark.soak
def test_two_minutes_of_soak_sample_the_data_dir_and_every_process() -> None:
    command = [sys.executable, "-m", "lineup.cli", "bench", "soak", "--minutes", "2", "--json"]
    done = subprocess.run(command, capture_output=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    record: dict[str, Any] = json.loads(done.stdout)
    assert record["failed"] == [], record["failed"]
    assert record["agent_to_user"]["delivered"] == record["agent_to_user"]["sent"] > 0
    assert record["samples"] >= 12  # every 10 s for 2 minutes, and the last
    assert 0 < record["data_dir_mib_start"] < record["data_dir_mib_end"]
    assert record["user_data_mib_end"] > 0
    assert record["growth_mib_per_hour_after_warmup"] is not None
    assert record["user_data_mib_per_hour_after_warmup"] > 0
    # As kept, with its keys and indexes and the chat's log of it, it is more than the bytes.
    assert record["kept_user_data_mib_end"] > record["user_data_mib_end"]
    assert record["rest_mib_per_hour_after_warmup"] is not None
    assert record["parts_mib_end"]["mailbox"] > 0 and record["parts_mib_end"]["runtime_db"] > 0
    rates = record["rss_growth_mib_per_hour"]
    core = ("supervisor", "zygote", "store", "router", "transport")
    assert all(rates.get(name) is not None for name in core), rates
    assert record["settings"]["faults"] is False and record["faults_total"] == 0
