"""Which processors a launch runs on: the machine's kind, or the CPUs when Legate has none of it.

A `dt.Machine` says what kind of processor its leaf grid is (`cpu`, `gpu`,
`omp`). A plan runs its launches on that kind when Legate was started with
such processors. When it was not (a GPU machine description run on a
laptop), the launches run on the CPUs and distal warns once per kind: the
same script runs everywhere, and the result is the same.

GPU tasks need CuPy (`pip install 'distal[gpu]'`); asking for GPU launches
without it is refused before anything is launched.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from distal.errors import DistalError, DistalFallbackWarning
from distal.machine.grid import KINDS, PROCESSOR_KINDS, processor_kind

from ._start import ensure_started, legate_runtime

__all__ = ["TARGETS", "DistalFallbackWarning", "require_device_arrays", "resolve_target", "target_scope"]

#: Launch targets, as Legate's TaskTarget names them (the processor kinds of distal.machine.grid.KINDS).
TARGETS = PROCESSOR_KINDS

_lock = threading.Lock()
_warned: set[str] = set()


@functools.cache
def _cupy_installed() -> bool:
    return importlib.util.find_spec("cupy") is not None


def require_device_arrays() -> None:
    """Refuse GPU launches when CuPy (the tiles' array library on GPUs) is missing (looked up once)."""
    if not _cupy_installed():
        raise DistalError(
            "GPU tasks run their leaves with CuPy, which is not installed; "
            "install it with `pip install 'distal[gpu]'` (cupy-cuda13x, matching Legate's CUDA 13)"
        )


def resolve_target(kind: str, counts: dict[str, int] | None = None) -> str:
    """The processor kind launches for a machine of processor kind `kind` run on.

    `counts` (processors per kind) defaults to what Legate was started with.

    >>> resolve_target("gpu", {"cpu": 2, "gpu": 1, "omp": 0})   # doctest: +SKIP
    'gpu'
    """
    processor_kind(kind)  # a MachineError naming the kinds for an unknown one
    if counts is None:
        counts = ensure_started().processors()
    if kind == "cpu" or counts.get(kind, 0) > 0:
        if processor_kind(kind).device_arrays:
            require_device_arrays()
        return kind
    with _lock:
        first = kind not in _warned
        _warned.add(kind)
    if first:
        warnings.warn(
            f"the machine's processors are {kind}s, but Legate runs no {kind} "
            f"(start it with --{kind}s N, or LEGATE_CONFIG); its tasks run on the CPUs",
            DistalFallbackWarning,
            stacklevel=3,
        )
    return "cpu"


@contextlib.contextmanager
def target_scope(target: str, processors: slice | None = None) -> Iterator[Any]:
    """Legate's machine restricted to `target` processors (and to the slice `processors` of them)."""
    from legate.core import TaskTarget

    if target not in KINDS:
        raise DistalError(f"expected a launch target ({', '.join(KINDS)}), but found {target!r}")
    machine = legate_runtime().machine.only(getattr(TaskTarget, target.upper()))
    if processors is not None:
        machine = machine.slice(processors)
    with machine:
        yield machine
