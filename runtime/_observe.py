"""Watching the runtime work: hooks around each launch's submission and each task's Python body.

Profilers and benchmarks (bench/breakdown.py, bench/fixed_cost.py) want to
know how long distal's Python takes where Legate runs it: in the calling
thread when a launch is submitted, and in Legate's worker threads when a task
runs. `observed(submit=..., task=...)` installs wrappers for the duration of
a `with` block; each wrapper is called with the work as a function of no
arguments and must call it once (timing it, profiling it, counting it). A
task wrapper runs in Legate's threads: it must be thread-safe and must not
raise. Without observers each launch and task pays one check of a global.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Wrapper", "observed", "observers"]

Wrapper = Callable[[Callable[[], None]], None]
"""Calls the work it is given (a function of no arguments) once, doing what it watches around it."""


class _Observers:
    __slots__ = ("submit", "task")

    def __init__(self) -> None:
        self.submit: Wrapper | None = None
        self.task: Wrapper | None = None


observers = _Observers()
"""The installed wrappers (None: nothing watches); read by `_launch.Submission.launch` and `_tasks._run`."""


@contextlib.contextmanager
def observed(submit: Wrapper | None = None, task: Wrapper | None = None) -> Iterator[Any]:
    """Wrap every launch submission (`submit`) and every task's Python body (`task`) inside the block.

    Blocks nest: an inner block's wrappers replace the outer ones and the outer
    ones are back when it ends. Tasks already queued when the block ends may
    still run under its task wrapper: fence (`distal.runtime.fence`) inside the
    block to have all of them.
    """
    before = (observers.submit, observers.task)
    observers.submit = submit if submit is not None else before[0]
    observers.task = task if task is not None else before[1]
    try:
        yield observers
    finally:
        observers.submit, observers.task = before
