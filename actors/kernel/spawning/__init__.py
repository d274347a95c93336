"""Spawning the runtime's processes: the kernel's zygote (`zygote`, the first one forked
from the supervisor before its loop starts by `_prefork`, later ones exec'd and driven by
`_forked`), a child exec'd on its own (`_process`), and the supervisor's side of an
isolated app: its zygote (`_app_zygote`), its jail's plan (`_sandbox`), its cgroup
(`_containment`), its log (`_applog`) and its directory's quota (`_quota`), and the jail
itself (`jail`: the launcher and the app zygote, which confine an installed app in its own
process). It runs in the supervisor's process, the zygotes and the launcher; what an actor
process runs is the kernel's `child`, which a zygote hands each fork to.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Loaded on first use, like the kernel's own names.
_LAZY = {
    "AppLog": "._applog",
    "AppZygote": "._app_zygote",
    "CgroupLimits": "._containment",
    "ChildProcess": "._process",
    "Incarnation": "._process",
    "JailPlan": "._sandbox",
    "PreforkedZygote": "._prefork",
    "Zygote": "._forked",
    "app_id": "._sandbox",
    "describe_exit": "._process",
    "log_jail_report": "._sandbox",
    "log_tail": "._process",
    "merge_report": "._sandbox",
    "plan_jail": "._sandbox",
    "prefork_zygote": "._prefork",
    "prepare_cgroup": "._containment",
    "runtime_id": "._containment",
    "zygote_preload": "._prefork",
}

if TYPE_CHECKING:
    from ._app_zygote import (
        AppZygote,
    )
    from ._applog import (
        AppLog,
    )
    from ._containment import (
        CgroupLimits,
        prepare_cgroup,
        runtime_id,
    )
    from ._forked import (
        Zygote,
    )
    from ._prefork import (
        PreforkedZygote,
        prefork_zygote,
        zygote_preload,
    )
    from ._process import (
        ChildProcess,
        Incarnation,
        describe_exit,
        log_tail,
    )
    from ._sandbox import (
        JailPlan,
        app_id,
        log_jail_report,
        merge_report,
        plan_jail,
    )

__getattr__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "AppLog",
    "AppZygote",
    "CgroupLimits",
    "ChildProcess",
    "Incarnation",
    "JailPlan",
    "PreforkedZygote",
    "Zygote",
    "app_id",
    "describe_exit",
    "log_jail_report",
    "log_tail",
    "merge_report",
    "plan_jail",
    "prefork_zygote",
    "prepare_cgroup",
    "runtime_id",
    "zygote_preload",
]
