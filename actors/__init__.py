"""LineUp Runtime actors: one sub-package per actor, plus the shared kernel.

Actors never import each other's packages: they talk by messages only, through the
supervisor's durable mailboxes (see `actors.kernel`).
"""
