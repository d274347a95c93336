"""Power cuts under `lineup bench chaos --power-cuts N`: when each comes, and what is checked
after it.

The runtime's data dir is a `PowerCutDisk`; the AppServer, the agent's and the user's
records and the bench itself stay off it (the AppServer stands for a remote server, the
records for what the people were told). Each cut comes at a moment drawn from the seed:

- `workload`: 0.5-3 s into the workload, mid-commit of whatever runs then (the mailbox,
  the store, the apps' logs, a checkpoint);
- `install`: 0.2-8 s after `lineup app update` (or `rollback`) of the updated app began:
  before its first write, in the bundle cache, in the registry's commit;
- `installed`: 0-1 s after such an operation answered `succeeded` (or failed): what the
  answer promised must survive;
- `artifact`: 0-1 s after the agent asked the whiteboard for `board.export`, which writes
  an artifact (its file, fsynced and renamed, then its row): mid-artifact.

A cut SIGKILLs every process using the disk, drops what no fsync reached (a seeded prefix
of each file's writes, torn at 4 KiB, and of the changes of names) and mounts the disk
again. Before the runtime starts, `damaged_files` looks at every file; then `lineup run`
must be online again within `ONLINE_S`; then the contract is checked against the bench's
own record of what was acknowledged before the cut:

- every app operation that answered `succeeded` is in effect: the updated app's version
  is the one the last answer named, or the one of an operation whose answer the cut took;
- every session-data revision a `board.create` answered is there (its instance's revision
  is at least that);
- every artifact a `board.export` answered is whole (its row, and a file of the row's size
  and sha256).

The rest of the contract (a typed message reaches the agent once the UI answered, an agent
message the runtime took reaches the chat, one final per tool call) is the end's checker's,
over the whole run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import trio

from ._chaos_files import damaged_files
from ._chaos_workload import CONVERSATIONS, Workload
from ._chaos_world import UPDATED_APP, Bundles, Runtime
from ._procs import BenchError
from ._tools_app import lineup

TaskStatus = trio.TaskStatus[None]

# The sample apps the workload under power cuts calls (their packages): the whiteboard's
# calls write session data and artifacts, the pomodoro is updated and rolled back.
POWER_CUT_APPS: Final = ("whiteboard", "pomodoro")
MOMENTS: Final = ("workload", "workload", "install", "installed", "artifact")  # shuffled
# From the start of what a cut aims at to the cut: for `installed`, from the answer.
SPELL_S: Final = {
    "workload": (0.5, 3.0),
    "install": (0.2, 8.0),
    "installed": (0.0, 1.0),
    "artifact": (0.0, 1.0),
}
# A hang guard, never a speed check: a start reads the mailbox whole (its quick check)
# through the FUSE server, about 5 MB/s on a loaded machine, and the mailbox keeps a day of
# done messages (100 MB after 45 minutes of this workload: a start of 110 s under load 14).
ONLINE_S: Final = 300.0
FIRST_VERSION: Final = "0.1.0"
SECOND_VERSION: Final = "0.1.1"


@dataclass(frozen=True)
class Moment:
    kind: str
    spell_s: float  # from the start of what it cuts into
    seed: int  # of the cut: which prefix of the unsynced writes survives


def plan(seed: int, count: int) -> list[Moment]:
    """`count` moments to cut at, the same for the same seed."""
    rng = random.Random(seed)
    kinds: list[str] = []
    while len(kinds) < count:
        round_ = list(MOMENTS)
        rng.shuffle(round_)
        kinds.extend(round_)
    return [Moment(k, rng.uniform(*SPELL_S[k]), rng.randrange(1 << 31)) for k in kinds[:count]]


@dataclass
class Cut:
    """One cut as the report shows it."""

    moment: str
    seed: int
    at_ns: int
    writes_kept: int = 0
    writes_dropped: int = 0
    writes_torn: int = 0
    names_undone: int = 0
    restart_s: float | None = None
    damaged: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class AppOperations:
    """`lineup app update` and `rollback` of the updated app, one at a time, and the
    versions it may have: the one the last `succeeded` named, and the target of every
    operation since whose answer never came."""

    def __init__(self, runtime: Runtime, bundles: Bundles) -> None:
        self.runtime = runtime
        self.bundles = bundles
        self.allowed = {FIRST_VERSION}
        self.running = False
        self.answered = 0
        self.outcomes: list[str] = []  # each operation's end, for the report

    async def one(
        self, version: str, *, task_status: TaskStatus = trio.TASK_STATUS_IGNORED
    ) -> None:
        """From `version` (the registry's now) to the other one; started once the
        command is running, and ended with its answer."""
        if version == FIRST_VERSION:
            target, step = SECOND_VERSION, ["update", UPDATED_APP, str(self.bundles.second)]
        else:
            target, step = FIRST_VERSION, ["rollback", UPDATED_APP]
        self.running = True
        self.allowed.add(target)
        task_status.started()
        try:
            command = ["app", *step, "--data-dir", str(self.runtime.data_dir)]
            await trio.to_thread.run_sync(partial(lineup, *command))
        except BenchError as exc:  # refused, or cut short: what the app is now is not known
            said = [line.strip() for line in str(exc).splitlines() if line.strip()]
            self.outcomes.append(f"{step[0]} to {target}: {said[-1][:160]}")
            return
        finally:
            self.running = False
        self.allowed = {target}
        self.answered += 1
        self.outcomes.append(f"{step[0]} to {target}: succeeded")


def _version(runtime: Runtime) -> str | None:
    from actors.app_manager.registry import read_apps

    for record in read_apps(runtime.data_dir)["records"]:
        if record["app_scope"] == UPDATED_APP:
            return str(record["installed_version"])
    return None


def contract_violations(
    runtime: Runtime, workload: Workload, operations: AppOperations, cut_at: float
) -> list[str]:
    """What the runtime, online again, lost of what was acknowledged before `cut_at`
    (trio time), each as one sentence."""
    from actors.store import read_artifact_data, read_session_data

    found = []
    version = _version(runtime)
    if version not in operations.allowed:
        expected = " or ".join(sorted(operations.allowed))
        found.append(f"{UPDATED_APP} is at {version} after the cut; it was answered {expected}")
    revisions = {
        row["instance_id"]: int(row["revision"]) for row in read_session_data(runtime.data_dir)
    }
    for final in workload.finals:
        if final.at >= cut_at or final.type != "lineup.tool.result":
            continue
        output = final.payload.get("output") or {}
        if final.method == "board.create":
            instance, revision = str(output["instance_id"]), int(output["revision"])
            if revisions.get(instance, -1) < revision:
                found.append(
                    f"{instance} answered revision {revision}; after the cut it is at"
                    f" {revisions.get(instance)}"
                )
        elif final.method == "board.export":
            for reference in output.get("artifacts", []):
                if read_artifact_data(runtime.data_dir, str(reference["artifact_id"])) is None:
                    found.append(f"artifact {reference['artifact_id']} is not whole after the cut")
    return found


class Cutter:
    """Cuts the power under the runtime at the planned moments, starts it again, and
    checks the files and the contract after each cut."""

    def __init__(
        self,
        disk: Any,  # bench.power_cut.PowerCutDisk
        runtime: Runtime,
        workload: Workload,
        operations: AppOperations,
        say: Callable[[str], None],
    ) -> None:
        self.say = say  # one line per cut, for the person watching
        self.disk = disk
        self.runtime = runtime
        self.workload = workload
        self.operations = operations
        self.cuts: list[Cut] = []
        self._seen: set[str] = set()  # a loss is counted at the first cut that shows it

    async def run(self, moments: list[Moment], nursery: trio.Nursery) -> bool:
        """Every planned cut; whether the runtime came back after each."""
        for moment in moments:
            if not await self._one(moment, nursery):
                return False
        return True

    async def _one(self, moment: Moment, nursery: trio.Nursery) -> bool:
        """One cut and the checks after it; whether the runtime is online again."""
        if moment.kind == "installed" and not self.operations.running:
            version = await trio.to_thread.run_sync(_version, self.runtime)
            await self.operations.one(version or FIRST_VERSION)  # the command's own timeout
        elif moment.kind == "install" and not self.operations.running:
            version = await trio.to_thread.run_sync(_version, self.runtime)
            await nursery.start(self.operations.one, version or FIRST_VERSION)
        elif moment.kind == "artifact":
            arguments = {"formats": ["png"]}
            conversation = self.workload.rng.choice(CONVERSATIONS)
            nursery.start_soon(
                self.workload.call, conversation, "whiteboard", "board.export", arguments
            )
        await trio.sleep(moment.spell_s)
        cut_at = trio.current_time()
        cut = Cut(moment.kind, moment.seed, time.time_ns())
        self.cuts.append(cut)
        report = await trio.to_thread.run_sync(partial(self.disk.power_cut, seed=moment.seed))
        cut.writes_kept, cut.writes_dropped = report.changes_kept, report.changes_dropped
        cut.writes_torn, cut.names_undone = report.writes_torn, report.names_undone
        self.runtime.reap()
        cut.damaged = await trio.to_thread.run_sync(damaged_files, self.runtime.data_dir)
        started = time.monotonic()
        try:
            await self.runtime.start_again(ONLINE_S)
        except BenchError as exc:
            cut.violations.append(f"the runtime did not start again: {exc}")
            self.say(f"cut {len(self.cuts)} ({moment.kind}): the runtime did not start again")
            return False
        cut.restart_s = round(time.monotonic() - started, 2)
        found = await trio.to_thread.run_sync(
            contract_violations, self.runtime, self.workload, self.operations, cut_at
        )
        cut.violations += [sentence for sentence in found if sentence not in self._seen]
        self._seen.update(found)
        problems = len(cut.damaged) + len(cut.violations)
        self.say(
            f"cut {len(self.cuts)} ({moment.kind}): back in {cut.restart_s:.1f} s,"
            f" {problems or 'no'} problem{'' if problems == 1 else 's'}"
        )
        return True
