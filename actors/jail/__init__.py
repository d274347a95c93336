"""The launcher of an isolated app: `python -m actors.jail OPTIONS -- CHILD_ARGV...`.

It lives outside `actors.kernel` so that starting it imports nothing heavy (no trio, no
pydantic): it runs on every launch and every restart of an installed app. `_launcher`
confines the process and execs the child; `_env` is what it shares with the supervisor
(the scrubbed environment, the parent-death signal). docs/architecture.md, "Isolation".
"""
