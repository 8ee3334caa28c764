"""The thread pool a `parallelize`d loop runs its chunks on, inside one task.

Automatic garbage collection is off while the workers run: a collection
inside a worker thread could free Legate objects there, which crashes the
process (shared/LEGATE_NOTES.md); the caller's setting is back afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["run_chunks"]

T = TypeVar("T")


def run_chunks(chunk: Callable[[int, int], T], bounds: Sequence[tuple[int, int]]) -> list[T]:
    """`chunk(lo, hi)` for every range of `bounds`, one thread each, results in order."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        with ThreadPoolExecutor(max_workers=max(len(bounds), 1), thread_name_prefix="distal-parallel") as pool:
            return list(pool.map(lambda b: chunk(*b), bounds))
    finally:
        if collecting:
            gc.enable()
