"""A bench's measurement under trio: SIGTERM taken as Ctrl-C where trio can unwind, and
what trio's nurseries wrap unwrapped, so the runner sees a Ctrl-C or a `BenchError` itself."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from ._procs import BenchError

E = TypeVar("E", bound=BaseException)
T = TypeVar("T")


def term_as_ctrl_c() -> None:
    """SIGTERM through trio's own Ctrl-C handler, so it lands where trio can unwind (a
    KeyboardInterrupt raised anywhere else may land inside trio's scheduler); `run_measure`
    restores the handler before once the run is over. Called inside the run."""
    ctrl_c = signal.getsignal(signal.SIGINT)
    if callable(ctrl_c):  # not where SIGINT is ignored (a background job)
        signal.signal(signal.SIGTERM, lambda _signum, frame: ctrl_c(signal.SIGINT, frame))


def found(error: BaseException, kind: type[E]) -> E | None:
    """The first `kind` in an exception group, however deep."""
    if isinstance(error, kind):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            inside = found(inner, kind)
            if inside is not None:
                return inside
    return None


def run_measure(measure: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`trio.run(measure, *args)`, with a Ctrl-C or a `BenchError` out of its nurseries raised
    as itself, and the SIGTERM handler as it was before."""
    on_term = signal.getsignal(signal.SIGTERM)
    try:
        return trio.run(measure, *args)
    except BaseExceptionGroup as group:
        if found(group, KeyboardInterrupt) is not None:
            raise KeyboardInterrupt from None
        failure = found(group, BenchError)
        if failure is not None:
            raise failure from None
        raise
    finally:
        signal.signal(signal.SIGTERM, on_term)
