"""Child specs and runtime settings, in the shape of Erlang/OTP's supervisor contract.

| field      | meaning                                                                      |
|------------|------------------------------------------------------------------------------|
| restart    | permanent: always restarted; transient: only after an abnormal exit;         |
|            | temporary: never restarted                                                   |
| shutdown   | seconds between SIGTERM and SIGKILL when stopping; 0 means brutal kill        |
| window     | deliveries in flight to the actor at once (credits); the rest waits on disk   |
| max_deliver| failures (crash or exception while handling) before a message is dead        |
| isolation  | None (a trusted actor), or how an installed app's process is confined: forked |
|            | from the app zygote or exec'd, jailed by `spawning.jail`; never forked from   |
|            | the kernel's zygote                                                           |

Strategies: one_for_one restarts only the child that died; rest_for_one also stops the
children started after it (in reverse order) and starts them again after it. Restart
intensity: more than `max_restarts` restarts within `max_seconds` escalates: the child is
marked failed, the runtime degraded, and the other children told.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._durability import RUNTIME_SYNCHRONOUS, Synchronous

ACTOR_NAME = re.compile(r"^[a-z][a-z0-9_]*(?:[.:-][a-z0-9_]+)*$")
# One directory per app scope, directly under DATA_DIR/apps: never nested in another app's
# directory (its owner could then replace it) and never elsewhere (the launcher chowns it).
CODE_DIR = re.compile(r"^bundles/[0-9a-f]{64}/app$")
PRIVATE_DIR = re.compile(r"^apps/[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
MiB = 1 << 20
# Config keys an isolated app is never given (its config reaches a process we do not trust).
_SECRET_KEY = re.compile(r"token|secret|password|credential|data_dir", re.IGNORECASE)


class Restart(StrEnum):
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    TEMPORARY = "temporary"


class Isolation(BaseModel):
    """How an installed app's process is confined (the `spawning.jail` package docstring).

    The launcher (`actors.kernel.spawning.jail`) gives it a network namespace of its own (no
    interfaces up: no network), a pid namespace of its own (it is its init: what it
    leaves dies with it), its private directory as its working directory and only
    writable place, a uid and gid of its own (allocated per app and persisted in
    `DATA_DIR/app_ids.json`) and no way to regain privileges; the supervisor gives it a
    cgroup with the limits below and a log it cannot touch. What could not be enforced
    is logged and shown in the actor's statistics (`isolation`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    private_dir: str = Field(description="'apps/<scope>', relative to the data dir")
    network: Literal["none"] = "none"
    code_dir: str | None = Field(
        default=None,
        description="'bundles/<sha256>/app', relative to the data dir: the verified code, "
        "mounted read-only in the app's view (LINEUP_APP_CODE says where)",
    )

    max_processes: int = Field(
        default=64, ge=8, le=4096, description="tasks in its cgroup (pids.max), threads included"
    )
    memory_max: int = Field(
        default=512 * MiB, ge=16 * MiB, description="bytes of memory for all its processes"
    )
    cpu_shares: int = Field(
        default=512, ge=2, le=262144, description="its CPU share; a trusted actor has 1024"
    )
    file_max: int = Field(
        default=256 * MiB, ge=MiB, description="largest file it may write (RLIMIT_FSIZE)"
    )
    dir_max: int = Field(default=1024 * MiB, ge=MiB, description="bytes in its directory")
    dir_check_s: float = Field(
        default=10.0, ge=0.1, description="seconds between two checks of dir_max"
    )
    log_max: int = Field(
        default=8 * MiB, ge=65536, description="its log's size before it rotates to .log.1"
    )

    @field_validator("code_dir")
    @classmethod
    def _code_dir_grammar(cls, value: str | None) -> str | None:
        if value is not None and not CODE_DIR.match(value):
            raise ValueError(f"{value!r} is not 'bundles/<sha256>/app'")
        return value

    @field_validator("private_dir")
    @classmethod
    def _private_dir_grammar(cls, value: str) -> str:
        if not PRIVATE_DIR.match(value):
            raise ValueError(f"{value!r} is not 'apps/<scope>'")
        return value

    @property
    def scope(self) -> str:
        return self.private_dir.removeprefix("apps/")


class ChildSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(max_length=128)
    target: str = Field(description="'module:ActorClass' run in the child process")
    restart: Restart = Restart.PERMANENT
    shutdown: float = Field(default=5.0, ge=0)
    window: int = Field(default=2048, ge=1, le=65536)
    max_deliver: int = Field(default=3, ge=1)
    config: dict[str, Any] = Field(default_factory=dict)
    isolation: Isolation | None = None
    door: str | None = Field(
        default=None,
        description="'module:ATTRIBUTE' of the actor's Door: who may send it what (none:"
        " anything from the runtime's actors and the operator, nothing from an app)",
    )
    reaches_outside: bool = Field(
        default=False,
        description="what it handles leaves the device or reaches the user (the network,"
        " the screen, the user's files): at synchronous=NORMAL the mailbox is synced before"
        " anything is delivered to it",
    )
    syncs_before: list[str] = Field(
        default_factory=list,
        description="the actors reaching outside that it sends to only after it synced its"
        " own file, sending again under the same ids what a crash cut short: its messages"
        " to them need no sync of the mailbox first",
    )

    @field_validator("name")
    @classmethod
    def _name_grammar(cls, value: str) -> str:
        if not ACTOR_NAME.match(value) or value == "supervisor":
            raise ValueError(f"{value!r} is not a valid actor name")
        return value

    @field_validator("target")
    @classmethod
    def _target_shape(cls, value: str) -> str:
        module, _, attr = value.partition(":")
        if not module or not attr.isidentifier():
            raise ValueError(f"{value!r} is not 'module:Class'")
        return value

    @model_validator(mode="before")
    @classmethod
    def _isolated_app_dir(cls, data: Any) -> Any:
        """An isolated app's directory is "." (its cwd): it cannot reach the data dir by any
        absolute path, and is not told where it is."""
        if isinstance(data, dict) and data.get("isolation") is not None:
            data = {**data, "config": {"app_dir": ".", **(data.get("config") or {})}}
        return data

    @model_validator(mode="after")
    def _isolated_config(self) -> ChildSpec:
        """The config reaches a process we do not trust: no secret, no runtime path."""
        if self.isolation is None:
            return self
        if self.config.get("app_dir") != ".":
            raise ValueError("an isolated app's app_dir is its working directory: '.'")
        for key, value in _flatten(self.config):
            if _SECRET_KEY.search(key):
                raise ValueError(f"an isolated app may not be given {key!r}")
            if isinstance(value, str) and value.startswith("/"):
                raise ValueError(f"an isolated app may not be given a path ({key!r})")
        return self


def _flatten(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """(dotted key, leaf) pairs of a JSON-like value."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _flatten(v, f"{key}.{k}" if key else k)]
    if isinstance(value, list | tuple):
        return [pair for v in value for pair in _flatten(v, key)]
    return [(key, value)]


# The deepest an app's body may nest in any runtime, as deep as an envelope may (the
# contracts' JSON depth): its recipient holds it to this too (`_door.app_body`), so the
# supervisor's bound below may be lowered, never raised.
DEEPEST_APP_BODY = 32


class AppLimits(BaseModel):
    """What one app process may send: checked by the supervisor before anything is stored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rate: float = Field(default=2000.0, gt=0, description="messages a second, sustained")
    burst: int = Field(default=4000, ge=1, description="messages at once above the rate")
    outstanding: int = Field(
        default=256,
        ge=1,
        description="its messages stored and not yet handled; past it, its channel waits",
    )
    bytes_rate: int = Field(
        default=16 * 1024 * 1024,
        ge=1,
        description="bytes of frames a second, sustained, whatever their fate (the"
        " supervisor reads them all); past it, its channel waits",
    )
    bytes_burst: int = Field(
        default=32 * 1024 * 1024, ge=1, description="bytes of frames at once above `bytes_rate`"
    )
    recipient_bytes_rate: int = Field(
        default=1024 * 1024,
        ge=1,
        description="bytes of bodies a second, sustained, it may put on one actor's queue;"
        " past it, a message is refused (`rate_limited`)",
    )
    recipient_bytes_burst: int = Field(
        default=4 * 1024 * 1024,
        ge=1,
        description="bytes of bodies at once above `recipient_bytes_rate` (at least `max_body`)",
    )
    max_body: int = Field(default=256 * 1024, ge=64, description="bytes of one packed body")
    max_depth: int = Field(
        default=DEEPEST_APP_BODY, ge=1, le=DEEPEST_APP_BODY, description="nesting of a body"
    )
    max_items: int = Field(default=65536, ge=1, description="values in one body, all told")

    @model_validator(mode="after")
    def _bursts_hold_a_body(self) -> AppLimits:
        # A burst smaller than one body would refuse, or hold forever, the largest body.
        if min(self.bytes_burst, self.recipient_bytes_burst) < self.max_body:
            raise ValueError("`bytes_burst` and `recipient_bytes_burst` must hold `max_body`")
        return self


class ArtifactLimits(BaseModel):
    """What one app may keep in the artifact store: checked by the store (its config's
    `artifact_limits`) before anything is written. One artifact travels in one message, so
    it stays under an app's packed-body limit (`AppLimits.max_body`, 256 KiB)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_bytes: int = Field(
        default=192 * 1024, ge=1, le=240 * 1024, description="bytes of one artifact"
    )
    max_total_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1, description="bytes of all of one app's artifacts"
    )
    max_count: int = Field(default=1000, ge=1, description="artifacts one app keeps")
    max_title: int = Field(default=200, ge=1, le=1000, description="characters of a title")
    media_types: tuple[str, ...] = Field(
        default=(
            "application",
            "audio",
            "font",
            "image",
            "model",
            "text",
            "video",
        ),
        min_length=1,
        description="the top-level types a media type (`type/subtype`) may have",
    )


class RuntimeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    children: list[ChildSpec] = Field(default_factory=list)
    strategy: Literal["one_for_one", "rest_for_one"] = "one_for_one"
    max_restarts: int = Field(default=5, ge=0)
    max_seconds: float = Field(default=10.0, gt=0)
    backoff_base: float = Field(default=0.05, ge=0)
    backoff_max: float = Field(default=2.0, ge=0)
    synchronous: Synchronous = RUNTIME_SYNCHRONOUS
    batch_max: int = Field(default=256, ge=1, description="group commit: most frames a txn")
    inbound_queue: int = Field(default=4096, ge=1)
    max_frame: int = Field(default=1 << 20, ge=1024)
    dedup_window_s: float = Field(default=24 * 3600, gt=0)
    prune_every_s: float = Field(
        default=3600.0, gt=0, description="how often done messages past the window go"
    )
    dedup_max_rows: int = Field(
        default=20_000,
        ge=100,
        description="the mailbox's size cap: done messages among the newest this many seqs"
        " are kept; older ones go even inside the dedup window (with a warning)",
    )
    hello_timeout: float = Field(default=15.0, gt=0)
    ready_timeout: float = Field(
        default=60.0,
        gt=0,
        description="seconds from hello to ready before a start counts as failed",
    )
    app_supervisor: str | None = Field(
        default="app_manager",
        description="the one actor that may start and stop app.* children (Actor.supervise)",
    )
    spawn: Literal["fork", "exec"] = Field(
        default="fork",
        description="fork: from a preloaded zygote (≈5 ms); exec: a new interpreter each time",
    )
    app_launch: Literal["zygote", "exec"] = Field(
        default="zygote",
        description="zygote: an installed app is forked from the app zygote, a preloaded and"
        " secret-free parent, and jailed (tens of ms); exec: through a new interpreter each"
        " time. Where the app zygote cannot be used, apps are exec'd and their isolation says"
        " why",
    )
    app_door: str | None = Field(
        default=None,
        description="the Door of every app process: an app.* child the app supervisor starts"
        " gets it whatever its spec says, and a message to an app that is not running is"
        " checked against it",
    )
    app_limits: AppLimits = Field(default_factory=AppLimits)
    door_checks: bool = Field(
        default=True,
        description="off only where `lineup bench kernel` measures what the door costs: the"
        " supervisor then stores whatever anyone sends to anyone",
    )
    heartbeat_interval: float = Field(
        default=5.0,
        ge=0,
        description="seconds between the heartbeat's ticks, at which the supervisor sends"
        " `kernel.ping` to each running actor that said nothing in the last half interval"
        " (0: no heartbeats)",
    )
    unresponsive_after: float = Field(
        default=15.0,
        gt=0,
        description="seconds without a word (a `kernel.pong` or any frame) after which a"
        " running actor is shown"
        " unresponsive and the runtime degraded",
    )
    restart_unresponsive: bool = Field(
        default=False,
        description="a watchdog: SIGKILL an unresponsive actor, which then restarts by its"
        " policy like after any crash",
    )

    @model_validator(mode="after")
    def _heartbeat_fits(self) -> RuntimeConfig:
        if self.heartbeat_interval and self.unresponsive_after <= self.heartbeat_interval:
            raise ValueError("`unresponsive_after` must be longer than `heartbeat_interval`")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> RuntimeConfig:
        names = [child.name for child in self.children]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate child names: {', '.join(duplicates)}")
        return self

    @model_validator(mode="after")
    def _private_dirs_unshared(self) -> RuntimeConfig:
        """A private dir and its uid belong to one app: two children may not share them."""
        dirs = [c.isolation.private_dir for c in self.children if c.isolation is not None]
        shared = sorted({d for d in dirs if dirs.count(d) > 1})
        if shared:
            raise ValueError(f"private dirs given to several children: {', '.join(shared)}")
        return self

    @classmethod
    def load(cls, path: str | Path) -> RuntimeConfig:
        return cls.model_validate(json.loads(Path(path).read_text()))
