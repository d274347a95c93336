"""The isolation of installed apps, and the launcher that confines each one:
`python -m actors.kernel.spawning.jail OPTIONS -- CHILD_ARGV...`.

An installed app's process gets a scrubbed environment, its own private directory, its one
channel and nothing else: no token, no database file, no other app's directory, no network.
The operating system enforces what Linux allows; the rest is said here, and the level
actually in force is logged and shown for every start.

The pieces: a child spec with `isolation` (`ChildSpec.isolation: Isolation`,
`actors/kernel/_specs.py`) names the app's private directory, `apps/<scope>` under the data
dir (exactly one level: an app's directory never nests in another's), and `network:
"none"`. The supervisor plans the jail (`actors/kernel/spawning/_sandbox.py`: the app's uid, its
environment, the sealed data dir), makes its cgroup (`actors/kernel/spawning/_containment.py`),
holds its log (`actors/kernel/spawning/_applog.py`) and measures its directory
(`actors/kernel/spawning/_quota.py`). The jail's steps are one function (`_launcher.jail_app`),
taken either by the launcher exec'd for the app (`_launcher`, with `_init`, `_limits` and
`_reach`) or by a child forked from the app zygote (`app_zygote`, and the supervisor's
side `actors/kernel/spawning/_app_zygote.py`). Such a child is never forked from the kernel's
zygote, which is a copy of a trusted process (its memory, its environment); its module is
not even preloaded there, since an import runs the app's code.

It is a part of the kernel's spawning side, and starting the launcher still imports
nothing heavy (no trio, no pydantic; the kernel's faces load their names on first use): it
runs on every launch and every restart of an installed app. `_env` is what it shares with
the supervisor (the scrubbed environment); the kernel's `_own_process` what every process
of the runtime does to itself (its name, the parent-death signal, a zygote's reaping). The
supervisor's side takes `scrubbed_environment` and `level_of` (a report's level of
confinement) from here.

**What the OS and the supervisor enforce for an installed app:**

- no network (OS): its own network namespace with no interface up, not even loopback:
  `connect` fails with `ENETUNREACH`; abstract Unix sockets are per namespace too;
- no runtime file (token, `mailbox.db`, `runtime.db`, `control.sock`, logs) (OS, twice):
  not in its view (covered or under the private `/tmp`), and a 0700 root-owned data dir
  for its uid;
- no other app's directory (OS, twice): not in its view, `..` from its cwd leads nowhere,
  and each app's directory is 0700 under its own uid;
- no way around its view through `/proc/<pid>/root`, `/cwd`, `/environ` of the supervisor
  (OS): another uid with no capability, so the ptrace access check refuses;
- its directory its only writable place (OS): every other mount read-only, `/tmp` and
  `/dev/shm` its own empty, read-only tmpfs, `umask 077`;
- no privilege, now or later (OS): no supplementary groups, all three uids and gids the
  app's, no capabilities, `no_new_privs`, nosuid mounts;
- no SysV IPC with other processes (OS): its own IPC namespace;
- no fd but its channel (OS): the supervisor passes only the channel (with the report's
  pipe and its log to the app zygote); the jail closes every other fd before `execve` or
  before the forked app imports anything of its own; stdin is `/dev/null`;
- dies with the supervisor (OS): a parent-death signal on the launcher (or the app zygote
  and its forked relay), and on the app (tied to the launcher or relay), armed after the
  uid change and at start; EOF on its channel;
- nothing of another app, nothing of the runtime from its parent (OS, by construction):
  exec'd, or forked from the app zygote, which never ran an app's code, holds no secret
  and no channel, and cannot be reached by an app;
- nothing it started outlives it (OS): the app is its pid namespace's init, and the kernel
  kills the namespace when it ends; its cgroup is killed and removed at every end of an
  incarnation (`actors/kernel/supervising/_supervisor.py`);
- bounded processes, memory, CPU, files and log (OS and the supervisor): its cgroup's
  `pids.max`, memory limit and CPU share; `RLIMIT_FSIZE`, `RLIMIT_NPROC`,
  `RLIMIT_NOFILE`; the supervisor writes its log (capped, rotated) and measures its
  directory (a quota);
- no secret in its environment or config (the supervisor, by construction): an
  allow-listed environment, and a config the spec validates (`_sandbox`);
- no spoofed sender, no kernel frame it may not send (the supervisor): the switchboard
  stamps `from` with the channel's actor and refuses forbidden `kernel.*` types;
- it sees only its SDK, and what it sends is bounded and breaks nobody (the supervisor,
  and every actor): the door (`actors/kernel/_door.py`, `_gate.py`, `_body.py`).

Not enforced: a bound on disk I/O bandwidth (no `blkio`/`io` limit) and the total size of
its directory between two checks. Paths are not secrets here: `/proc/self/mountinfo` shows
where its directory really is; nothing there is reachable. A root launcher that cannot
change its uid exits instead of running the app as root. Any other step that fails is not
skipped silently: it is printed to the app's log (`jail: NOT enforced: STEP: reason`) and
reported.

**When Linux allows less.** The level in force is `full` (every step enforced), `partial`
(something missing, but some of network, filesystem, identity enforced) or `none`. The
supervisor logs it at every start (`app.x isolated full (...)` at INFO, or a WARNING
listing what is not enforced), and `lineup debug actors --json --stats` shows it as
`statistics.isolation`: {`level`, `enforced`: {step: detail}, `not_enforced`: {step:
reason}, `fds`, `launch`} (`launch`: `zygote`, or `exec (...)` and why). The steps and the
level are the same whichever way the app was launched.

| running as | namespaces, view, read-only | identity | cgroup limits | level |
|---|---|---|---|---|
| root | yes | the app's own uid | `pids`, `memory`, `cpu` | full |
| root, a controller missing | yes | the app's own uid | NOT for that one | partial |
| root without `CAP_SYS_ADMIN` | NOT: `unshare` refused | the app's own uid | as above | partial |
| another user, user namespaces | yes, in a user namespace | NOT: the supervisor's | NOT | partial |
| another user, no user namespaces | NOT | NOT | NOT | none |

A controller is missing when it is not mounted, or v2 only and not delegatable; a
container's default profile is root without `CAP_SYS_ADMIN`, where the app zygote says it
is unusable and every app is exec'd. As another user the app zygote takes no namespace of
its own (there is nothing to hide from the supervisor's uid) and its children take the
user namespace step as the launcher does. `RLIMIT_FSIZE`, `RLIMIT_NOFILE` and
`RLIMIT_CORE` hold in every row; `RLIMIT_NPROC` only where the app has a uid of its own (the
count is per uid). The log's pipe and cap and the directory quota are the supervisor's and
hold everywhere. Only `pid_namespace` refused (no pid namespace left, `max_pid_namespaces`)
leaves the others in force: what the app leaves behind is then still killed through its
cgroup, where there is one. What the gaps mean:

- **Without a pid namespace** the app sees every process in `/proc` (command lines,
  including the supervisor's `--data-dir`; not their environment or files), and what it
  daemonizes is ended only by its cgroup's kill at the end of the incarnation (and by
  `kill(-1)` at its next start); without a `pids` cgroup as well, nothing but
  `RLIMIT_NPROC` bounds how many it starts.
- **Without namespaces** the app has the network, and its view is the host's. Its uid still
  keeps it out of the data dir and the other apps' directories. But SQLite needs the app's
  directory by an absolute path, and the 0700 data dir is not searchable by the app's uid:
  an SDK app cannot open `app.db` in this mode, and fails at start (visibly) rather than
  running with the data dir opened up.
- **Without root** the app runs as the supervisor's user. The network namespace and its
  view hold (the data dir is covered, everything read-only but its directory), but the
  token is not safe from a determined app: a process of the same uid may follow another's
  `/proc/<pid>/root` (the supervisor's reaches the data dir) and, unless Yama forbids it,
  attach to it with ptrace (the transport holds the token in memory), as long as those
  processes are dumpable (`PR_SET_DUMPABLE` is not cleared in them).

**Tests.** `tests/kernel/test_isolation.py`: a jailed probe (`tests/kernel/jailed_actors.py`)
tries the token, both databases, the data dir and another jailed app's files (by absolute,
relative and `/proc/<supervisor>/root` paths), a TCP connection to a loopback listener,
writes to `/tmp` and to a world-writable directory, and reports its uid, groups,
capabilities, `NoNewPrivs`, network namespace, environment, config and fds; the same probe
unjailed is the control, for which every attempt succeeds. Also: a jailed app dies within
2 s of the supervisor's `kill -9`; one killed with SIGKILL is restarted, still jailed, with
the same uid and its event log intact; and the launcher alone, run without root (inside a
user namespace) and without `CAP_SYS_ADMIN`, reports `partial` with exactly the steps it
could not take. `tests/kernel/test_containment.py` (root): a jailed
`tests/kernel/contained_actors.py:Hostile` daemonizes a grandchild and forks a child that
holds its channel and writes on it once the app is gone; after `stop_child`, after the
supervisor's SIGKILL, and after SIGTERM to the runtime, no process of the app's uid is
alive 2 s later and its cgroup is gone. Also: it is pid 1 and its `/proc` lists only
itself; a fork bomb stops with `EAGAIN` below `max_processes`; allocating past
`memory_max` kills the app (restarted, reason "out of memory") and not the runtime; a file
past `file_max` fails with `EFBIG`; a directory past `dir_max` ends the app with that
reason; 50 MiB on stdout leave a log and its `.1` each under 8 MiB, and
`ftruncate`/`lseek` on its stdout fail (a pipe)."""

from ._env import scrubbed_environment
from ._report import level_of

__all__ = ["level_of", "scrubbed_environment"]
